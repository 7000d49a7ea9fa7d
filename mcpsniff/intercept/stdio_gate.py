"""The stdio relay's pumps under ``--guard enforce``: whole lines, and a gate on ``tools/call``.

Only with ``--guard enforce`` (``mcpsniff/guard/enforce.py``); the default
pumps in ``relay/stdio.py`` forward chunks as they come and never look inside. Here
both directions are forwarded a whole line at a time, so that a reply mcpsniff
writes itself falls between two of the server's lines, never inside one. A
refused request is recorded as the client sent it, then the event
``guard-answered`` (who answered and why), then the reply as the client
received it on the server's stream: the trace says that mcpsniff answered.
A last line without a newline is judged and forwarded when its stream ends.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.observations import GuardAnswered, StreamEnd
from mcpsniff.guard.enforce import MAX_JUDGED, Gate
from mcpsniff.intercept.stdio_pipes import CHUNK, ChildInput

if TYPE_CHECKING:
    from mcpsniff.relay.stdio import StdioRelay
    from mcpsniff.relay.stdio_io import Input, Output

#: The longest line the gate holds back waiting for its newline; a longer one is
#: forwarded in pieces, unjudged (a tools/call is never that long).
MAX_LINE = MAX_JUDGED


def gated_pumps(
    relay: StdioRelay, stdin: Input, stdout: Output, proc: asyncio.subprocess.Process, gate: Gate
) -> tuple[asyncio.Task[None], asyncio.Task[None]]:
    """Start the two gated pumps; the tasks (client to server, server to client)."""
    return (
        asyncio.create_task(_pump_stdin(relay, stdin, stdout, proc, gate)),
        asyncio.create_task(_pump_out(relay, stdout, proc, gate)),
    )


def _lines(buffer: bytearray) -> list[bytes]:
    """The complete lines at the front of ``buffer`` (removed from it)."""
    end = buffer.rfind(b"\n")
    if end < 0:
        if len(buffer) <= MAX_LINE:
            return []
        whole = bytes(buffer)
        buffer.clear()
        return [whole]
    whole = bytes(buffer[: end + 1])
    del buffer[: end + 1]
    return whole.splitlines(keepends=True)


async def _pump_stdin(
    relay: StdioRelay, source: Input, stdout: Output, proc: asyncio.subprocess.Process, gate: Gate
) -> None:
    child = ChildInput(proc)
    send_data, send = relay.channel.send_data, relay.channel.send
    forwarded = relay.forwarded
    buffer = bytearray()
    ended = False
    while not ended:
        chunk = await source.read()
        if chunk:
            buffer += chunk
            # Scanned only when the chunk ends a line (or the line is too long to
            # hold): a long line arriving in many chunks is not searched again each time.
            lines = _lines(buffer) if b"\n" in chunk or len(buffer) > MAX_LINE else []
        else:
            ended, lines = True, ([bytes(buffer)] if buffer else [])
        for line in lines:
            answer = gate.client_line(line)
            now = time.time()
            forwarded[C2S] += len(line)
            if answer is None:
                await child.write(line)
                send_data(C2S, now, line)
                continue
            send_data(C2S, now, line)
            for refusal in answer.refusals:
                send(GuardAnswered(now, refusal.tool, refusal.reason, refusal.request_id))
            if answer.body:  # else a refused notification: nothing to answer
                reply = answer.body + b"\n"
                await stdout.write(reply)
                forwarded[S2C] += len(reply)
                send_data(S2C, now, reply)
    send(StreamEnd(C2S, time.time()))
    child.close()


async def _pump_out(
    relay: StdioRelay, sink: Output, proc: asyncio.subprocess.Process, gate: Gate
) -> None:
    assert proc.stdout is not None
    source = proc.stdout
    send_data = relay.channel.send_data
    forwarded = relay.forwarded
    buffer = bytearray()
    while True:
        chunk = await source.read(CHUNK)
        if not chunk:
            break
        buffer += chunk
        if b"\n" not in chunk and len(buffer) <= MAX_LINE:
            continue  # the line goes on (see _pump_stdin)
        lines = _lines(buffer)
        if not lines:
            continue
        block = b"".join(lines)
        for line in lines:
            gate.server_line(line)
        await sink.write(block)
        forwarded[S2C] += len(block)
        send_data(S2C, time.time(), block)
    if buffer:
        await sink.write(bytes(buffer))
        forwarded[S2C] += len(buffer)
        send_data(S2C, time.time(), bytes(buffer))
    relay.channel.send(StreamEnd(S2C, time.time()))
