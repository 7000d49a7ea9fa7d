"""The server the official MCP conformance runner tests, built with the Python SDK 1.x.

Run it with the SDK 1.x venv, never with mcpsniff's own interpreter::

    .peers/sdk1/bin/python tests/e2e/peers/conformance_server.py PORT

It serves Streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (loopback only, so
FastMCP's DNS rebinding protection is on: it accepts only ``127.0.0.1:*``,
``localhost:*`` and ``[::1]:*`` Host and Origin values). Everything in it is what
``@modelcontextprotocol/conformance server`` asks of a server: each scenario's
"Server Implementation Requirements" names a tool, resource or prompt
(``test_simple_text``, ``test://static-text``, ``test_prompt_with_arguments``, ...)
and what it must return. An in-memory event store and a 100 ms SSE ``retry``
make the POST streams resumable (SEP-1699), which ``server-sse-polling`` and
``server-sse-multiple-streams`` exercise.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from typing import Any

from fixture_media import PNG, WAV
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts.base import Message, UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    ImageContent,
    JSONRPCMessage,
    LoggingLevel,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    ServerCapabilities,
    TextContent,
    TextResourceContents,
)
from pydantic import AnyUrl

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class MemoryEventStore(EventStore):
    """Every event of every stream, in order, so a client can resume after any of them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(len(self.events) + 1)
        self.events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        stream = next((s for s, e, _ in self.events if e == last_event_id), None)
        if stream is None:
            return None
        after = int(last_event_id)
        for s, event_id, message in self.events:
            # priming events (no message) are not replayed
            if s == stream and int(event_id) > after and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


server = FastMCP(
    "mcpsniff-conformance-sdk1",
    log_level="WARNING",
    event_store=MemoryEventStore(),
    retry_interval=100,
)


# ----------------------------------------------------------------------------- tools


async def report_progress(ctx: Context, progress: float, total: float, message: str) -> None:
    """``ctx.report_progress``, but on the stream of the request it reports on.

    FastMCP 1.27.1's ``report_progress`` sends without a related request id, so the
    Streamable HTTP transport routes it to the standalone GET stream, and drops it
    when the client has not opened that stream yet: a race the client can lose.
    The transports spec says messages on the GET stream SHOULD be unrelated to any
    running request (2025-11-25 basic/transports.mdx § Listening for Messages).
    """
    meta = ctx.request_context.meta
    if meta is None or meta.progressToken is None:
        return
    await ctx.session.send_progress_notification(
        progress_token=meta.progressToken,
        progress=progress,
        total=total,
        message=message,
        related_request_id=ctx.request_id,
    )


@server.tool(description="Returns simple text content")
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Returns image content")
def test_image_content() -> list[ImageContent]:
    return [ImageContent(type="image", data=PNG, mimeType="image/png")]


@server.tool(description="Returns audio content")
def test_audio_content() -> list[AudioContent]:
    return [AudioContent(type="audio", data=WAV, mimeType="audio/wav")]


def _embedded(uri: str, mime_type: str, text: str) -> EmbeddedResource:
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri=AnyUrl(uri), mimeType=mime_type, text=text),
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
        ImageContent(type="image", data=PNG, mimeType="image/png"),
        _embedded(
            "test://mixed-content-resource",
            "application/json",
            json.dumps({"test": "data", "value": 123}),
        ),
    ]


@server.tool(description="Sends three info log messages while it runs")
async def test_tool_with_logging(ctx: Context) -> str:
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool(description="Reports progress 0, 50 and 100 of 100")
async def test_tool_with_progress(ctx: Context) -> str:
    for progress in (0, 50, 100):
        await report_progress(ctx, progress, 100, f"Completed step {progress} of 100")
        if progress < 100:
            await asyncio.sleep(0.05)
    meta = ctx.request_context.meta
    return str(meta.progressToken if meta is not None else None)


@server.tool(description="Asks the client to sample an LLM")
async def test_sampling(prompt: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    text = result.content.text if isinstance(result.content, TextContent) else "No response"
    return f"LLM response: {text}"


async def _elicit(ctx: Context, message: str, properties: dict[str, Any], **schema: Any) -> str:
    result = await ctx.session.elicit_form(
        message,
        {"type": "object", "properties": properties, **schema},
        related_request_id=ctx.request_id,
    )
    return f"action={result.action}, content={json.dumps(result.content or {})}"


@server.tool(description="Asks the user for a name and an email address")
async def test_elicitation(message: str, ctx: Context) -> str:
    properties = {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    }
    answer = await _elicit(ctx, message, properties, required=["username", "email"])
    return f"User response: {answer}"


@server.tool(description="Elicitation with a default for every primitive type (SEP-1034)")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    properties = {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    }
    answer = await _elicit(ctx, "Please provide user information", properties)
    return f"Elicitation completed: {answer}"


@server.tool(description="Elicitation with every enum schema variant (SEP-1330)")
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    options = ["option1", "option2", "option3"]
    properties = {
        "untitledSingle": {"type": "string", "enum": options},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    }
    answer = await _elicit(ctx, "Please pick values of every enum kind", properties)
    return f"Elicitation completed: {answer}"


@server.tool(description="Always fails")
def test_error_handling() -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool(description="Closes its SSE stream mid-call; the client resumes it (SEP-1699)")
async def test_reconnection(ctx: Context) -> str:
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


@server.tool(description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(name: str = "", address: dict[str, str] | None = None) -> str:
    return f"name={name!r} address={address!r}"


# The scenario checks that these keywords reach the client untouched (SEP-1613).
_tool = server._tool_manager.get_tool("json_schema_2020_12_tool")
assert _tool is not None
_tool.parameters = {
    "$schema": JSON_SCHEMA_2020_12,
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


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


@server.resource("test://watched-resource", mime_type="text/plain", description="Subscribable")
def watched_resource() -> str:
    return "Watched resource content"


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
        UserMessage(content=ImageContent(type="image", data=PNG, mimeType="image/png")),
        UserMessage(content=TextContent(type="text", text="Please analyze the image above.")),
    ]


# ----------------------------------------------------------------------------- the rest

subscriptions: set[str] = set()


async def _set_level(level: LoggingLevel) -> None:
    return None


async def _subscribe(uri: AnyUrl) -> None:
    subscriptions.add(str(uri))


async def _unsubscribe(uri: AnyUrl) -> None:
    subscriptions.discard(str(uri))


# FastMCP has no public API for these three; the low-level server's decorators it is.
server._mcp_server.set_logging_level()(_set_level)
server._mcp_server.subscribe_resource()(_subscribe)
server._mcp_server.unsubscribe_resource()(_unsubscribe)
_capabilities = server._mcp_server.get_capabilities


def _capabilities_with_subscribe(*args: Any, **kwargs: Any) -> ServerCapabilities:
    """SDK 1.27.1 declares ``resources.subscribe: false`` even with a subscribe handler."""
    capabilities = _capabilities(*args, **kwargs)
    if capabilities.resources is not None:
        capabilities.resources.subscribe = True
    return capabilities


server._mcp_server.get_capabilities = _capabilities_with_subscribe  # type: ignore[method-assign]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    return Completion(values=[], total=0, hasMore=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    ns = parser.parse_args()
    server.settings.port = ns.port
    server.run("streamable-http")


if __name__ == "__main__":
    main()
