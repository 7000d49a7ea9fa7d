"""Carrying faults out on newline-delimited streams (the stdio relay, ``replay serve``).

With ``--fault`` the stdio relay hands each chunk it reads to ``LineFaults.carry``
instead of writing it straight through. The chunk is cut into whole lines
(MCP stdio: "Messages are delimited by newlines"); each line is judged by the
engine and then delivered as it is, held, dropped, duplicated, answered in
mcpsniff's name, damaged, or followed by a cut connection or a killed server.
Lines no fault touches are written in one piece, as they came. A line longer
than ``LONG_LINE`` is passed on as it arrives, unjudged, so a fault never
makes the relay hold a huge message in memory.

What the trace gets (``StreamPort.observe``) is what the receiving peer got,
each change announced first by a ``fault`` event (``engine.fault_record``):
its ``marks`` tell ``check`` which of the next frames are mcpsniff's doing.
A dropped message is still recorded (marked, ``delivered: false``): nothing
that crossed the relay is lost from the trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcpsniff.core.model import C2S, S2C
from mcpsniff.faults.damage import BANNER, SPLIT_PAUSE, answer, corrupt, frames_in
from mcpsniff.faults.engine import FaultEngine, Injection, fault_record, original_bytes
from mcpsniff.faults.spec import (
    CORRUPT,
    DELAY,
    DISCONNECT,
    DROP,
    DUPLICATE,
    ERROR,
    KILL,
    REORDER,
    TOOL_ERROR,
)

#: A line longer than this is forwarded as it arrives, never judged.
LONG_LINE = 1 << 20

OTHER = {C2S: S2C, S2C: C2S}


@dataclass
class StreamPort:
    """What a shell lends the fault carrier."""

    #: Write bytes to the peer that receives ``direction`` (and wait until written).
    write: Callable[[str, bytes], Awaitable[None]]
    #: Hand bytes delivered in ``direction`` to the trace.
    observe: Callable[[str, bytes], None]
    #: Record a ``fault`` event with this data.
    event: Callable[[dict[str, Any]], None]
    #: Close the pipe to the peer that receives ``direction``.
    close: Callable[[str], None]
    #: End the server process.
    kill: Callable[[], None]


class Lane:
    """What a pump tests before each chunk of one direction, to write it without ``carry``.

    A chunk may go on as it is, unread, when ``clear`` (no part of a line is
    waiting, no long line passing, the direction open, and a byte search can
    tell whether a fault may match), it ends a line, holds no backslash (a JSON
    escape could spell a name), ``asked`` (the requests in flight it may answer)
    is empty, and it holds neither ``needle`` nor any of ``others``: ``FaultEngine.could_match``
    would then say no, and ``carry`` would pass it in one piece. Built once per
    direction, so that this costs attribute tests and one search per needle.
    """

    __slots__ = ("asked", "clear", "needle", "others", "searchable")

    def __init__(self, engine: FaultEngine, direction: str) -> None:
        watched = direction in engine.watched
        needles = (engine.needles or ()) if watched else ()
        #: The first of the byte strings one of which a message a fault can match must
        #: hold. With none, a backslash: a chunk searched for it holds none (see above).
        self.needle = needles[0] if needles else b"\\"
        #: The others (most filters name one method or tool: none).
        self.others: tuple[bytes, ...] = needles[1:]
        #: The engine's requests in flight this direction may answer (the same dict).
        self.asked: dict[Any, Any] = engine.asked(direction) if watched else {}
        #: Whether a byte search can tell (no fault without a name to look for).
        self.searchable = not watched or engine.needles is not None
        self.clear = self.searchable


class LineFaults:
    """The fault carrier of one newline-delimited connection (both directions)."""

    def __init__(self, engine: FaultEngine, port: StreamPort, *, verbatim: bool = False) -> None:
        self.engine = engine
        #: Whether fault records may copy a damaged message's original bytes (no redaction).
        self.verbatim = verbatim
        self.port = port
        self._partial = {C2S: b"", S2C: b""}
        #: A direction in the middle of passing a long line: nothing else may be written.
        self._passing = {C2S: False, S2C: False}
        #: Set while no line of the direction is half written.
        self._idle = {C2S: asyncio.Event(), S2C: asyncio.Event()}
        self._closed = {C2S: False, S2C: False}
        self._held: set[asyncio.Task[None]] = set()
        for event in self._idle.values():
            event.set()
        #: Per direction, what its pump tests to skip ``carry`` (``Lane``).
        self.lanes = {C2S: Lane(engine, C2S), S2C: Lane(engine, S2C)}

    def _review(self, direction: str) -> None:
        """Whether the direction's pump may skip ``carry`` again (``Lane.clear``)."""
        lane = self.lanes[direction]
        lane.clear = lane.searchable and not (
            self._partial[direction] or self._passing[direction] or self._closed[direction]
        )

    def passes(self, direction: str, chunk: bytes) -> bool:
        """Whether ``chunk`` goes on as it is, unread: the caller writes and observes it.

        The commonest case: whole lines (no part of one waiting before them), none
        of which a fault can match (a byte search says so), in a direction still
        open: ``carry`` would pass them in one piece, after more work.
        """
        return (
            chunk[-1:] == b"\n"  # ``endswith`` parses its arguments from a tuple
            and not self._partial[direction]
            and not self._passing[direction]
            and not self._closed[direction]
            and not self.engine.could_match(chunk, direction)
        )

    async def carry(self, direction: str, chunk: bytes) -> None:
        """Deliver (or not) what ``chunk`` completes, in ``direction``."""
        try:
            await self._carry(direction, chunk)
        finally:
            self._review(direction)

    async def _carry(self, direction: str, chunk: bytes) -> None:
        if self.passes(direction, chunk):
            await self.port.write(direction, chunk)
            self.port.observe(direction, chunk)
            return
        if self._passing[direction]:
            end = chunk.find(b"\n")
            head, chunk = (chunk, b"") if end < 0 else (chunk[: end + 1], chunk[end + 1 :])
            await self._deliver(direction, head)
            self.port.observe(direction, head)
            if end < 0:
                return
            self._passing[direction] = False
            self._idle[direction].set()
        data = self._partial[direction] + chunk
        cut = data.rfind(b"\n") + 1
        self._partial[direction] = data[cut:]
        if cut:
            await self._lines(direction, data[:cut])
        if len(self._partial[direction]) > LONG_LINE:
            head = self._partial[direction]
            self._partial[direction] = b""
            self._passing[direction] = True
            self._idle[direction].clear()
            await self._deliver(direction, head)
            self.port.observe(direction, head)

    async def end(self, direction: str) -> None:
        """The stream in ``direction`` ended: pass on an unterminated last line as it is."""
        rest = self._partial[direction]
        self._partial[direction] = b""
        if rest:
            await self._deliver(direction, rest)
            self.port.observe(direction, rest)
        self._passing[direction] = False
        self._idle[direction].set()
        self._review(direction)

    async def settle(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) for held messages to be delivered."""
        if self._held:
            await asyncio.wait(set(self._held), timeout=timeout)
        for task in list(self._held):
            task.cancel()

    # ------------------------------------------------------------------ one burst of lines

    async def _lines(self, direction: str, block: bytes) -> None:
        engine = self.engine
        if not engine.could_match(block, direction):
            # No message here can match a fault: on in one piece, unread.
            await self._pass(direction, block)
            return
        # On "\n" only, as MCP stdio delimits: a stray "\r" stays inside its line.
        lines = [line + b"\n" for line in block.split(b"\n")[:-1]]
        decided: list[tuple[bytes, Injection | None]] = []
        for line in lines:
            payload = line.rstrip(b"\r\n")
            injection = engine.judge(engine.read(direction, payload)) if payload else None
            decided.append((line, injection))
        decided = self._reordered(direction, decided)
        plain: list[bytes] = []
        for line, injection in decided:
            if injection is None or injection.fault.action == REORDER:
                plain.append(line)
                continue
            if plain:
                await self._pass(direction, b"".join(plain))
                plain = []
            try:
                await self._inject(direction, line, injection)
            except (OSError, ValueError, TypeError) as exc:
                # A fault must never cost a message or the relay: deliver it as it came.
                self.port.event({"fault_version": 1, "failed": str(exc)[:200]})
                await self._pass(direction, line)
        if plain:
            await self._pass(direction, b"".join(plain))

    def _reordered(
        self, direction: str, decided: list[tuple[bytes, Injection | None]]
    ) -> list[tuple[bytes, Injection | None]]:
        """Reverse the lines a ``reorder`` fault matched within this burst."""
        places = [
            i
            for i, (_, inj) in enumerate(decided)
            if inj is not None and inj.fault.action == REORDER
        ]
        if len(places) < 2:
            return decided
        out = list(decided)
        for place, source in zip(places, reversed(places), strict=True):
            out[place] = decided[source]
        first = decided[places[0]][1]
        assert first is not None
        ids = [decided[i][1].message.id for i in places]  # type: ignore[union-attr]
        self.port.event(
            fault_record(self.engine, first, marks={}, delivered=True, reordered_ids=ids)
        )
        return out

    async def _pass(self, direction: str, data: bytes) -> None:
        await self._deliver(direction, data)
        self.port.observe(direction, data)

    async def _deliver(self, direction: str, data: bytes) -> None:
        if not self._closed[direction]:
            await self.port.write(direction, data)

    async def _inject(self, direction: str, line: bytes, injection: Injection) -> None:
        action = injection.fault.action
        port, engine = self.port, self.engine
        payload = line.rstrip(b"\r\n")
        eol = line[len(payload) :]
        if action == DELAY:
            task = asyncio.create_task(self._later(direction, line, injection))
            self._held.add(task)
            task.add_done_callback(self._held.discard)
            return
        if action == DROP:
            port.event(fault_record(engine, injection, marks={direction: 1}, delivered=False))
            port.observe(direction, line)
            return
        if action == DUPLICATE:
            await self._pass(direction, line)
            port.event(fault_record(engine, injection, marks={direction: 1}, delivered=True))
            await self._pass(direction, line)
            return
        if action in (ERROR, TOOL_ERROR):
            back = OTHER[direction]
            reply = answer(injection) + (eol or b"\n")
            port.event(
                fault_record(engine, injection, marks={direction: 1, back: 1}, delivered=False)
            )
            port.observe(direction, line)
            await self._idle[back].wait()
            await self._pass(back, reply)
            return
        if action == CORRUPT:
            kind = injection.fault.corruption
            pieces = corrupt(kind, payload, eol or b"\n")
            damaged = b"".join(pieces)
            marks = 1 if kind == "banner" else frames_in(damaged)
            port.event(
                fault_record(
                    engine,
                    injection,
                    marks={direction: marks},
                    delivered=True,
                    **original_bytes(line, verbatim=self.verbatim),
                )
            )
            if kind == "banner":
                await self._pass(direction, BANNER)
                await self._pass(direction, damaged[len(BANNER) :])
                return
            for number, piece in enumerate(pieces):
                if number:
                    await asyncio.sleep(SPLIT_PAUSE)
                await self._deliver(direction, piece)
            port.observe(direction, damaged)
            return
        if action == DISCONNECT:
            port.event(fault_record(engine, injection, marks={direction: "rest"}, delivered=False))
            await self._deliver(direction, payload[: len(payload) // 2])
            port.observe(direction, line)
            self._closed[direction] = True
            port.close(direction)
            return
        if action == KILL:
            await self._pass(direction, line)
            port.event(fault_record(engine, injection, marks={C2S: "rest"}, delivered=True))
            port.kill()
            return
        # status and anything a newline stream cannot carry out: deliver unchanged.
        await self._pass(direction, line)

    async def _later(self, direction: str, line: bytes, injection: Injection) -> None:
        try:
            await asyncio.sleep(injection.delay_ms / 1000.0)
            await self._idle[direction].wait()
        except asyncio.CancelledError:
            # The connection ended before the hold did: never delivered, still recorded.
            self.port.event(
                fault_record(
                    self.engine, injection, marks={direction: 1}, delivered=False, cut_short=True
                )
            )
            self.port.observe(direction, line)
            raise
        self.port.event(fault_record(self.engine, injection, marks={}, delivered=True))
        await self._pass(direction, line)
