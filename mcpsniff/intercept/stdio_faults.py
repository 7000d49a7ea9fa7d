"""The stdio relay's pumps when ``--fault`` is given: the lines go through ``LineFaults``.

Without a fault the relay's own pumps run and nothing here is imported
(forwarding stays byte-exact and as fast as before). With one, both
directions are cut into lines, since an answer injected towards the client
must never land inside a line the server is writing; a chunk of whole lines
no fault can match, with no line pending, is written and recorded by the pump
itself, exactly as ``LineFaults.carry`` would (``pump``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from mcpsniff.capture.channel import Channel
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.observations import FaultInjected, StreamEnd
from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.lines import LineFaults, StreamPort
from mcpsniff.faults.spec import Fault
from mcpsniff.intercept.stdio_pipes import CHUNK, ChildInput

if TYPE_CHECKING:
    from mcpsniff.relay.stdio_io import Input, Output

#: How long held (delayed) messages may still be delivered once a stream ended, seconds.
HELD_GRACE = 5.0


def faulted_pumps(
    faults: list[Fault],
    proc: asyncio.subprocess.Process,
    stdin: Input,
    stdout: Output,
    channel: Channel,
    forwarded: dict[str, int],
    tell: Callable[[FaultInjected], None],
    kill: Callable[[], None],
    *,
    redact: bool = True,
) -> tuple[Coroutine[Any, Any, None], Coroutine[Any, Any, None]]:
    """The two pump coroutines (client to server, server to client) that carry out ``faults``."""
    assert proc.stdout is not None
    child_in = ChildInput(proc)
    child_out = proc.stdout

    async def write(direction: str, data: bytes) -> None:
        await (stdout.write(data) if direction == S2C else child_in.write(data))

    def observe(direction: str, data: bytes) -> None:
        forwarded[direction] += len(data)
        channel.send_data(direction, time.time(), data)

    def close(direction: str) -> None:
        if direction == C2S:
            child_in.close()
        elif stdout.writer is not None:
            stdout.broken = True
            stdout.writer.transport.close()
        else:
            stdout.broken = True

    carrier = LineFaults(
        FaultEngine(faults),
        StreamPort(
            write, observe, lambda data: tell(FaultInjected(time.time(), data)), close, kill
        ),
        verbatim=not redact,
    )

    # Each coroutine is a pump itself, not awaited by another: every resumption of
    # a task passes through each coroutine it awaits in, once per chunk or more.
    return (
        pump(carrier, C2S, stdin.read, 0, child_in.write, forwarded, channel, child_in.close),
        pump(carrier, S2C, child_out.read, CHUNK, stdout.write, forwarded, channel),
    )


async def pump(
    carrier: LineFaults,
    direction: str,
    read: Callable[..., Awaitable[bytes]],
    size: int,
    send: Callable[[bytes], Awaitable[None]],
    forwarded: dict[str, int],
    channel: Channel,
    ended: Callable[[], None] | None = None,
) -> None:
    """Every chunk ``read(size)`` (``read()`` when 0) gives through the faults, then the end.

    A chunk its ``Lane`` lets by (whole lines no fault can match) is written and
    recorded here, the way the relay's own pumps do, with no call in between;
    any other goes through ``carrier.carry``, which records it with the same
    ``forwarded`` and ``channel`` (the ``observe`` of ``faulted_pumps``). Once
    ``read`` gave nothing, held messages get ``HELD_GRACE`` seconds, the end
    is recorded and ``ended`` called.
    """
    carry, send_data = carrier.carry, channel.send_data
    lane = carrier.lanes[direction]
    needle, others, asked = lane.needle, lane.others, lane.asked
    # Two calls, not ``read(*size)``: a call with ``*`` goes through C and a new
    # frame, where a plain one the interpreter makes in place.
    while chunk := await (read(size) if size else read()):
        # 10 is a newline, 92 a backslash (an int operand of ``in`` is one memchr);
        # ``partition``, not ``in`` or ``find`` (``FaultEngine.could_match`` says why).
        if (
            lane.clear
            and chunk[-1] == 10
            and not asked
            and 92 not in chunk
            and not chunk.partition(needle)[1]
            and not (others and _holds_any(chunk, others))
        ):
            await send(chunk)
            forwarded[direction] += len(chunk)
            send_data(direction, time.time(), chunk)
            continue
        await carry(direction, chunk)
    await carrier.end(direction)
    await carrier.settle(HELD_GRACE)
    channel.send(StreamEnd(direction, time.time()))
    if ended is not None:
        ended()


def _holds_any(chunk: bytes, needles: tuple[bytes, ...]) -> bool:
    return any(chunk.partition(needle)[1] for needle in needles)
