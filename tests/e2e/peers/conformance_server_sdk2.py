"""The server the conformance runner's 2026-07-28 scenarios test, built with the Python SDK 2.x.

Run it with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/e2e/peers/conformance_server_sdk2.py PORT

It serves stateless Streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (loopback, so
the SDK's DNS rebinding protection is on). Each required 2026-07-28 scenario of
``@modelcontextprotocol/conformance`` names in its "Server Implementation
Requirements" a tool, resource or prompt and what it must return; this file holds
them: the content tools and fixtures ``conformance_server.py`` gives the SDK 1.x
server, and the multi-round-trip tools (SEP-2322), which answer with an
``InputRequiredResult`` until the client retries with the input they asked for.
The tasks extension's scenarios are not scored for 2026-07-28 and get no fixture.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
from typing import Any

from fixture_media import PNG, WAV
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

server = MCPServer("mcpsniff-conformance-sdk2", version="1.0.0")

# ----------------------------------------------------------------------------- content tools


@server.tool(description="Returns simple text content")
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Returns image content")
def test_image_content() -> list[ImageContent]:
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool(description="Returns audio content")
def test_audio_content() -> list[AudioContent]:
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


def _embedded(uri: str, mime_type: str, text: str) -> EmbeddedResource:
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri=uri, mime_type=mime_type, text=text),
    )


@server.tool(description="Returns an embedded resource")
def test_embedded_resource() -> list[EmbeddedResource]:
    return [
        _embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    ]


@server.tool(description="Returns text, image and resource content")
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        _embedded(
            "test://mixed-content-resource",
            "application/json",
            json.dumps({"test": "data", "value": 123}),
        ),
    ]


@server.tool(description="Sends three info log messages while it runs")
async def test_tool_with_logging(ctx: Context) -> str:
    for step in ("started", "processing data", "completed"):
        await ctx.info(f"Tool execution {step}")
        await asyncio.sleep(0.02)
    return "Tool with logging executed successfully"


@server.tool(description="Reports progress 0, 50 and 100 of 100")
async def test_tool_with_progress(ctx: Context) -> str:
    for progress in (0, 50, 100):
        await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
        if progress < 100:
            await asyncio.sleep(0.02)
    return "Progress reported"


@server.tool(description="Always fails")
def test_error_handling() -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool(description="Needs the client's sampling capability")
async def test_missing_capability(ctx: Context) -> str:
    """ "A server MUST NOT rely on capabilities the client has not declared" (SEP-2575)."""
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            "This tool needs the sampling capability",
            {"requiredCapabilities": {"sampling": {}}},
        )
    return "The client can sample"


# ----------------------------------------------------------------------------- multi-round trip
# "The server needs additional input before the original request can complete"
# (2026-07-28 basic/patterns/mrtr.mdx): each tool asks on the first round and
# answers once the retry carries the responses under the keys it chose.


def _form(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    params = {"message": message, "requestedSchema": schema}
    return {"method": "elicitation/create", "params": params}


def _sampling(text: str, max_tokens: int) -> dict[str, Any]:
    message = {"role": "user", "content": {"type": "text", "text": text}}
    params = {"messages": [message], "maxTokens": max_tokens}
    return {"method": "sampling/createMessage", "params": params}


ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}


def _ask(requests: dict[str, dict[str, Any]], state: str | None = None) -> InputRequiredResult:
    wire: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        wire["requestState"] = state
    return InputRequiredResult.model_validate(wire)


def _responses(ctx: Context) -> dict[str, Any]:
    """The client's input responses as plain JSON (empty on the first round)."""
    responses = ctx.input_responses
    if not responses:
        return {}
    return {
        key: value.model_dump(mode="json", by_alias=True, exclude_none=True)
        if hasattr(value, "model_dump")
        else value
        for key, value in dict(responses).items()
    }


def _content(response: Any) -> dict[str, Any]:
    content = response.get("content") if isinstance(response, dict) else None
    return content if isinstance(content, dict) else {}


@server.tool(description="Asks for the user's name, then greets them")
async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    answer = _responses(ctx).get("user_name")
    if answer is None:
        return _ask({"user_name": _form("What is your name?", "name")})
    return f"Hello, {_content(answer).get('name', 'stranger')}!"


@server.tool(description="Asks the client's model a question")
async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    answer = _responses(ctx).get("capital_question")
    if answer is None:
        return _ask({"capital_question": _sampling("What is the capital of France?", 100)})
    content = answer.get("content") if isinstance(answer, dict) else None
    text = content.get("text") if isinstance(content, dict) else None
    return f"The model said: {text}"


@server.tool(description="Asks for the client's roots")
async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    answer = _responses(ctx).get("client_roots")
    if answer is None:
        return _ask({"client_roots": ROOTS})
    roots = answer.get("roots", []) if isinstance(answer, dict) else []
    return "Roots: " + ", ".join(str(r.get("uri")) for r in roots if isinstance(r, dict))


#: Keys requestState so that the server can tell its own state from a forged one.
SECRET = b"mcpsniff-conformance-fixture"


def _signed(payload: str) -> str:
    tag = hmac.new(SECRET, payload.encode(), hashlib.sha256).hexdigest()[:16]
    return base64.urlsafe_b64encode(f"{payload}|{tag}".encode()).decode()


def _verified(state: str | None) -> str | None:
    """The payload of a state this server signed, or None for a missing or forged one."""
    if state is None:
        return None
    try:
        payload, tag = base64.urlsafe_b64decode(state.encode()).decode().rsplit("|", 1)
    except (ValueError, UnicodeDecodeError):
        return None
    expected = hmac.new(SECRET, payload.encode(), hashlib.sha256).hexdigest()[:16]
    return payload if hmac.compare_digest(tag, expected) else None


class TamperedState(ValueError):
    """The retry's requestState is not one this server issued."""


@server.tool(description="Asks for a confirmation and keeps state between the rounds")
async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    answer = _responses(ctx).get("confirm")
    if answer is None:
        return _ask({"confirm": _form("Please confirm", "ok", "boolean")}, _signed("confirm"))
    if _verified(ctx.request_state) != "confirm":
        raise TamperedState("requestState failed its integrity check")
    return f"state-ok: confirmed={_content(answer).get('ok')}"


@server.tool(description="Asks for a name, a greeting and the roots at once")
async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    responses = _responses(ctx)
    wanted = {
        "user_name": _form("What is your name?", "name"),
        "greeting": _sampling("Generate a greeting", 50),
        "client_roots": ROOTS,
    }
    missing = {key: request for key, request in wanted.items() if key not in responses}
    if missing:
        return _ask(missing, _signed("multiple"))
    return f"Got all inputs for {_content(responses['user_name']).get('name')}"


@server.tool(description="Asks two questions, one round each")
async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    responses = _responses(ctx)
    round_ = _verified(ctx.request_state)
    if round_ == "round-2" and "step2" in responses:
        return f"Favourite colour: {_content(responses['step2']).get('color')}"
    if round_ == "round-1" and "step1" in responses:
        ask = _form("Step 2: What is your favorite color?", "color")
        return _ask({"step2": ask}, _signed("round-2"))
    return _ask({"step1": _form("Step 1: What is your name?", "name")}, _signed("round-1"))


@server.tool(description="Rejects a requestState it did not sign")
async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    if ctx.request_state is None:
        return _ask({"confirm": _form("Please confirm", "ok", "boolean")}, _signed("tamper"))
    if _verified(ctx.request_state) != "tamper":
        raise TamperedState("requestState failed its integrity check")
    return "state-ok"


@server.tool(description="Asks only for the input the client declared it can give")
async def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    responses = _responses(ctx)
    if responses:
        return "Thanks for the input"
    caps = ctx.client_capabilities
    wanted: dict[str, dict[str, Any]] = {}
    if caps is not None and caps.sampling is not None:
        wanted["question"] = _sampling("What is 2 + 2?", 10)
    if caps is not None and caps.elicitation is not None:
        wanted["name"] = _form("What is your name?", "name")
    if caps is not None and caps.roots is not None:
        wanted["roots"] = ROOTS
    if not wanted:
        return "The client declared no way to give input"
    return _ask(wanted)


@server.prompt(description="Asks for context before it renders")
async def test_input_required_result_prompt(ctx: Context) -> list[Message] | InputRequiredResult:
    answer = _responses(ctx).get("user_context")
    if answer is None:
        return _ask({"user_context": _form("What context should the prompt use?", "context")})
    text = f"Use this context: {_content(answer).get('context')}"
    return [UserMessage(content=TextContent(type="text", text=text))]


# ----------------------------------------------------------------------------- resources


@server.resource("test://static-text", mime_type="text/plain", description="Static text")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png", description="A PNG image")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource(
    "test://template/{id}/data", mime_type="application/json", description="Templated data"
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# ----------------------------------------------------------------------------- prompts


@server.prompt(description="A prompt without arguments")
def test_simple_prompt() -> list[Message]:
    return [
        UserMessage(content=TextContent(type="text", text="This is a simple prompt for testing."))
    ]


@server.prompt(description="A prompt with two required arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
    text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    return [UserMessage(content=TextContent(type="text", text=text))]


@server.prompt(description="A prompt that embeds a resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
    return [
        UserMessage(
            content=_embedded(resourceUri, "text/plain", "Embedded resource content for testing.")
        ),
        UserMessage(
            content=TextContent(type="text", text="Please process the embedded resource above.")
        ),
    ]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[Message]:
    return [
        UserMessage(content=ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage(content=TextContent(type="text", text="Please analyze the image above.")),
    ]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    return Completion(values=[], total=0, has_more=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    ns = parser.parse_args()
    server.run("streamable-http", host="127.0.0.1", port=ns.port)


if __name__ == "__main__":
    main()
