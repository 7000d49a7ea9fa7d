"""An SDK 2.x client that calls one tool inside a trace of its caller's.

Run it with the SDK 2.x venv::

    .peers/sdk2/bin/python tests/e2e/peers/sdk2_traced_client.py TRACE_ID SPAN_ID -- SERVER...

It attaches a remote parent span (TRACE_ID, SPAN_ID, sampled) as the current
OpenTelemetry context, as an agent framework would, and calls ``echo``. The
SDK itself injects the W3C ``traceparent`` into ``params._meta`` of its
requests (SEP-414, ``mcp.shared._otel.inject_trace_context``); with only the
OpenTelemetry API installed its own span is non-recording and carries the
parent's context, so the ``traceparent`` names TRACE_ID and SPAN_ID. Prints
the echo text as JSON.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client, StdioServerParameters
from opentelemetry import context, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags


async def run(command: list[str]) -> dict[str, str]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, read_timeout_seconds=20, cache=None) as client:
        result = await client.call_tool("echo", {"message": "traced"})
        text = result.content[0].text  # type: ignore[union-attr]
        return {"text": text, "protocol_version": str(client.protocol_version)}


def main(argv: list[str]) -> int:
    trace_id, span_id, dash, *command = argv
    assert dash == "--" and command, "usage: TRACE_ID SPAN_ID -- SERVER..."
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    token = context.attach(trace.set_span_in_context(NonRecordingSpan(parent)))
    try:
        print(json.dumps(anyio.run(run, command)))
    finally:
        context.detach(token)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
