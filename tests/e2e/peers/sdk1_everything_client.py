"""A full-featured 2025-11-25 client (official Python SDK 1.x) that exercises every tool.

Run it with the SDK 1.x venv, never with mcpsniff's own interpreter::

    .peers/sdk1/bin/python tests/e2e/peers/sdk1_everything_client.py -- SERVER_COMMAND [ARGS...]
    .peers/sdk1/bin/python tests/e2e/peers/sdk1_everything_client.py --url URL [--sse]

It declares every client capability the SDK has (sampling, elicitation in form
and URL mode, roots, and tasks with task-augmented sampling and elicitation run
from an in-memory task store), then calls every tool the server lists with
arguments made from its input schema: a tool whose ``execution.taskSupport`` is
``required`` is called as a task and polled through ``tasks/get`` and
``tasks/result``; the server's async sampling and elicitation tools make the
server send task-augmented requests that this client answers with a
CreateTaskResult. It also subscribes to a resource, asks for completions, sets
the log level and lists and reads resources and prompts. This is correct
traffic (every reply is the SDK's own), so mcpsniff must find nothing wrong in it.

Prints one JSON object: what was called and how each call ended.
Exit status: 0 when every step ran, 1 when one raised (the JSON then has "error").
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from datetime import timedelta
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.experimental.task_handlers import ExperimentalTaskHandlers
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.experimental.tasks.in_memory_task_store import InMemoryTaskStore

RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Arguments for tools whose schema alone gives no meaningful value.
SPECIAL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "trigger-url-elicitation": {"url": "https://example.com/consent"},
    "simulate-research-query": {"topic": "sniffing MCP traffic"},
    "trigger-long-running-operation": {"duration": 0.3, "steps": 3},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-resource-links": {"count": 2},
}
#: Prompt arguments by name; any other gets "1".
PROMPT_ARGUMENTS = {"resourceType": "Text", "city": "Chicago", "state": "IL"}
#: Tools left out: they change the session for long after the call (periodic logging
#: every 5 s, resource updates every 10 s) and would make the run's length random.
SKIPPED = {"toggle-simulated-logging", "toggle-subscriber-updates"}


def value_for(name: str, schema: dict[str, Any]) -> Any:
    """A plausible value for one property of a JSON Schema."""
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer":
        return 1
    if kind == "number":
        return 1
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return f"value of {name}"


def arguments_for(tool: types.Tool) -> dict[str, Any]:
    """Arguments for ``tool``: its special ones, else every required property filled in."""
    if tool.name in SPECIAL_ARGUMENTS:
        return SPECIAL_ARGUMENTS[tool.name]
    schema = tool.inputSchema or {}
    props = schema.get("properties") or {}
    return {k: value_for(k, props.get(k, {})) for k in schema.get("required") or []}


class ClientTasks:
    """The client side of tasks: task-augmented sampling and elicitation, in memory."""

    def __init__(self) -> None:
        self.store = InMemoryTaskStore()

    async def _run_as_task(self, metadata: types.TaskMetadata, result: types.Result) -> Any:
        task = await self.store.create_task(metadata)
        await self.store.store_result(task.taskId, result)
        await self.store.update_task(task.taskId, status="completed")
        return types.CreateTaskResult(task=task)

    async def augmented_sampling(self, context, params, metadata):
        return await self._run_as_task(metadata, sampling_result())

    async def augmented_elicitation(self, context, params, metadata):
        return await self._run_as_task(metadata, elicitation_result(params))

    async def get_task(self, context, params):
        task = await self.store.get_task(params.taskId)
        if task is None:
            return types.ErrorData(code=types.INVALID_PARAMS, message="no such task")
        return types.GetTaskResult(**task.model_dump())

    async def get_task_result(self, context, params):
        result = await self.store.get_result(params.taskId)
        if result is None:
            return types.ErrorData(code=types.INVALID_PARAMS, message="no such task")
        payload = result.model_dump(by_alias=True, exclude_none=True)
        # "The tasks/result operation MUST include this metadata in its response" (tasks.mdx
        # § Related Task Metadata); the SDK leaves it to the handler.
        payload["_meta"] = {RELATED_TASK: {"taskId": params.taskId}}
        return types.GetTaskPayloadResult(**payload)

    async def list_tasks(self, context, params):
        tasks, cursor = await self.store.list_tasks(params.cursor if params else None)
        return types.ListTasksResult(tasks=tasks, nextCursor=cursor)

    async def cancel_task(self, context, params):
        task = await self.store.update_task(params.taskId, status="cancelled")
        return types.CancelTaskResult(**task.model_dump())

    def handlers(self) -> ExperimentalTaskHandlers:
        return ExperimentalTaskHandlers(
            get_task=self.get_task,
            get_task_result=self.get_task_result,
            list_tasks=self.list_tasks,
            cancel_task=self.cancel_task,
            augmented_sampling=self.augmented_sampling,
            augmented_elicitation=self.augmented_elicitation,
        )


def sampling_result() -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="a sampled answer"),
        model="mcpsniff-e2e-model",
        stopReason="endTurn",
    )


def elicitation_result(params: Any) -> types.ElicitResult:
    """Accept a form with every required field filled, or a URL request without content."""
    schema = getattr(params, "requestedSchema", None)
    if schema is None:
        return types.ElicitResult(action="accept")
    props = schema.get("properties") or {}
    content: dict[str, Any] = {}
    for key, prop in props.items():
        if "oneOf" in prop:
            content[key] = prop["oneOf"][0]["const"]
        elif prop.get("type") == "array":
            items = prop.get("items") or {}
            options = items.get("enum") or [o["const"] for o in items.get("anyOf") or []]
            content[key] = options[:1]
        else:
            content[key] = value_for(key, prop)
    return types.ElicitResult(action="accept", content=content)


async def on_sampling(context, params):
    return sampling_result()


async def on_elicitation(context, params):
    return elicitation_result(params)


async def on_list_roots(context):
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/mcpsniff-e2e", name="e2e")])


class Counts:
    def __init__(self) -> None:
        self.notifications: dict[str, int] = {}

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            method = message.root.method
            self.notifications[method] = self.notifications.get(method, 0) + 1

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        pass


def progress_counter(into: list[float]) -> Any:
    """A progress callback that appends each progress value to ``into``."""

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        into.append(p)

    return on_progress


async def exercise(session: ClientSession, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    init = await session.initialize()
    out["protocol_version"] = init.protocolVersion
    caps = init.capabilities
    if caps.logging is not None:
        await session.set_logging_level("debug")
    tools = (await session.list_tools()).tools
    calls: list[dict[str, Any]] = []
    for tool in tools:
        if tool.name in SKIPPED:
            continue
        arguments = arguments_for(tool)
        execution = tool.execution.taskSupport if tool.execution else None
        if execution == "required":
            created = await session.experimental.call_tool_as_task(tool.name, arguments)
            task_id = created.task.taskId
            async for status in session.experimental.poll_task(task_id):
                last = status.status
            result = await session.experimental.get_task_result(task_id, types.CallToolResult)
            listed = await session.experimental.list_tasks()
            calls.append(
                {
                    "tool": tool.name,
                    "as_task": True,
                    "status": last,
                    "is_error": result.isError,
                    "listed": any(t.taskId == task_id for t in listed.tasks),
                }
            )
            continue
        progress: list[float] = []
        on_progress = progress_counter(progress)
        result = await session.call_tool(
            tool.name,
            arguments,
            progress_callback=on_progress,
            read_timeout_seconds=timedelta(seconds=90),
        )
        calls.append({"tool": tool.name, "is_error": result.isError, "progress": len(progress)})
    out["tool_calls"] = calls

    resources = (await session.list_resources()).resources
    out["resources"] = len(resources)
    if resources:
        first = resources[0].uri
        await session.read_resource(first)
        if caps.resources is not None and caps.resources.subscribe:
            await session.subscribe_resource(first)
            await session.unsubscribe_resource(first)
    templates = (await session.list_resource_templates()).resourceTemplates
    out["templates"] = len(templates)
    prompts = (await session.list_prompts()).prompts
    out["prompts"] = len(prompts)
    for prompt in prompts:
        args = {a.name: PROMPT_ARGUMENTS.get(a.name, "1") for a in prompt.arguments or []}
        await session.get_prompt(prompt.name, args)
        if caps.completions is not None and prompt.arguments:
            ref = types.PromptReference(type="ref/prompt", name=prompt.name)
            await session.complete(ref, {"name": prompt.arguments[0].name, "value": ""})
    if caps.completions is not None and templates:
        ref = types.ResourceTemplateReference(type="ref/resource", uri=templates[0].uriTemplate)
        await session.complete(ref, {"name": "resourceId", "value": "1"})
    await session.send_ping()
    out["notifications"] = dict(sorted(counts.notifications.items()))
    return out


async def run(command: list[str], url: str | None, sse: bool) -> dict[str, Any]:
    counts = Counts()
    tasks = ClientTasks()
    if url is None:
        transport = stdio_client(StdioServerParameters(command=command[0], args=command[1:]))
    elif sse:
        transport = sse_client(url, timeout=20)
    else:
        transport = streamablehttp_client(url, timeout=20)
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(
            read,
            write,
            read_timeout_seconds=timedelta(seconds=30),
            sampling_callback=on_sampling,
            elicitation_callback=on_elicitation,
            list_roots_callback=on_list_roots,
            logging_callback=counts.on_log,
            message_handler=counts.on_message,
            experimental_task_handlers=tasks.handlers(),
        ) as session:
            return await exercise(session, counts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="connect to this HTTP endpoint instead of a command")
    parser.add_argument("--sse", action="store_true", help="URL is a legacy SSE endpoint")
    parser.add_argument(
        "--protocol-version",
        help="ask for this version in initialize (the SDK asks for its newest by default)",
    )
    parser.add_argument("command", nargs="*", help="the server command (after --)")
    args = parser.parse_args(argv)
    if args.protocol_version:
        # ClientSession.initialize reads types.LATEST_PROTOCOL_VERSION when it runs.
        types.LATEST_PROTOCOL_VERSION = args.protocol_version
    try:
        out = anyio.run(run, args.command, args.url, args.sse)
        status = 0
    except BaseException as exc:
        out = {"error": repr(exc), "traceback": traceback.format_exc()}
        status = 1
    print(json.dumps(out, sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
