"""The mitmproxy addon's link to its analysis process: observations out, findings back.

The addon sends its observations down the capture channel
(``mcpsniff.capture.channel``) to an analysis process (``mcpsniff.mitm.worker``,
spawned as a fresh interpreter by ``mcpsniff.capture.analysis_process``), like
``mcpsniff http``. Unlike the HTTP relay, the addon needs results back:
findings go on their flows (comment, marker, metadata), and ``mcpsniff_show``
lines belong in mitmproxy's event log. So the worker answers on a second pipe
(``mcpsniff.mitm.worker.FlowReplies``). This module runs in mitmproxy's
process: the messages both sides share, and the addon's end
(``AnalysisClient``). After finishing an
exchange the addon may send a ``Sync`` with the exchange's number; when the
worker reaches it, every finding of that exchange has been made, and it says
so (``Reply.synced``) together with the findings and lines made since its
last reply. This is for an addon that holds responses (flows are being
saved: their findings must be on them *before* the addons after it see the
flow in the ``response`` hook): that hook waits for the reply (``sync``);
other flows go on meanwhile. Otherwise nothing waits and no ``Sync`` is sent:
findings go on their flows whenever they come, and clean traffic gets no
replies at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpsniff.capture.analysis_process import AnalysisProcess
from mcpsniff.capture.channel import big_pipe
from mcpsniff.capture.sinks import Outputs
from mcpsniff.core.observation_codec import register
from mcpsniff.core.observations import Observation

#: Bytes of observations the addon may queue while the pipe is full.
BACKLOG_LIMIT = 64 << 20
#: Seconds observations may wait to be sent with later ones, unless a hook waits for them.
BATCH_DELAY = 0.005
#: Seconds a hook waits for its exchange's findings before going on without them.
SYNC_TIMEOUT = 5.0
#: The length before each reply on the replies pipe.
REPLY_LENGTH = struct.Struct("<I")


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Sync:
    """Addon to worker: answer once every finding of exchange ``exchange`` is made."""

    exchange: int
    t: float = 0.0


@dataclass(frozen=True, slots=True)
class Show:
    """Addon to worker: start or stop sending ``mcpsniff_show`` lines."""

    on: bool
    t: float = 0.0


# The channel's own tags (200 and up): these travel with the observations, in order.
register(Sync, 200)
register(Show, 201)


@dataclass(slots=True)
class FlowFinding:
    """A finding, with the exchanges (flows) whose frames it names."""

    exchanges: tuple[int, ...]
    rule: str
    severity: str
    message: str


@dataclass(slots=True)
class Reply:
    """What the analysis process tells the addon after a batch of observations.

    Findings come before the syncs they precede: the addon attaches them
    first, then lets the synced exchanges' hooks go on.
    """

    findings: list[FlowFinding] = field(default_factory=list)
    #: ``mcpsniff_show`` lines, for mitmproxy's event log.
    lines: list[str] = field(default_factory=list)
    #: Exchange numbers whose sync marker was reached.
    synced: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.findings or self.lines or self.synced)

    def encode(self) -> bytes:
        """As JSON (the replies pipe carries no pickle)."""
        findings = [[list(f.exchanges), f.rule, f.severity, f.message] for f in self.findings]
        return orjson.dumps({"findings": findings, "lines": self.lines, "synced": self.synced})

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Reply:
        """A reply ``encode`` made; ValueError (or KeyError, TypeError) for anything else."""
        value = orjson.loads(data)
        findings = [
            FlowFinding(tuple(int(n) for n in exchanges), str(rule), str(severity), str(message))
            for exchanges, rule, severity, message in value["findings"]
        ]
        lines = [str(line) for line in value["lines"]]
        return cls(findings, lines, [int(n) for n in value["synced"]])


# --------------------------------------------------------------------------- addon side


def create_trace(path: str) -> int:
    """Create the new trace file (mode 0600, never an existing one); its fd.

    Raises ``OSError`` (``FileExistsError`` for an existing file) with the reason.
    """
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)


class AnalysisClient:
    """The addon's end: a sink for observations, syncs to await, replies to hand on.

    ``on_reply`` gets every reply (before the synced hooks go on); ``on_gone``
    is told once, with how, when the analysis process dies or stops answering;
    ``on_late`` once, the first time hooks go on without their findings (it lags).
    """

    def __init__(
        self,
        analysis: AnalysisProcess,
        replies_fd: int,
        on_reply: Callable[[Reply], None],
        on_gone: Callable[[str], None],
        on_late: Callable[[str], None] | None = None,
    ) -> None:
        self.analysis = analysis
        self.channel = channel = analysis.channel
        # Its pipe breaks as it dies: say how it died, when it is known.
        channel.on_broken = lambda exc: self._gone(self._exit_reason())
        # A Sync the full backlog dropped will never be answered: its hook must not wait.
        channel.on_dropped = lambda m: self._release([m.exchange]) if type(m) is Sync else None
        self.replies_fd = replies_fd
        self.on_reply = on_reply
        self.on_gone = on_gone
        self.on_late = on_late
        #: Exchange number -> (the future its hook awaits, when it was sent).
        self.waiting: dict[int, tuple[asyncio.Future[None], float]] = {}
        self.buffer = bytearray()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.alive = True
        self.stopping = False
        self.watchdog: asyncio.TimerHandle | None = None
        os.set_blocking(replies_fd, False)

    @classmethod
    def start(
        cls,
        trace_fd: int,
        *,
        path: str,
        meta: dict[str, Any],
        created: float,
        redact: bool,
        show: bool,
        on_reply: Callable[[Reply], None],
        on_gone: Callable[[str], None],
        on_late: Callable[[str], None] | None = None,
        outputs: Outputs | None = None,
    ) -> AnalysisClient:
        """Start the analysis process on the open trace ``trace_fd`` (closed here)."""
        replies_read, replies_write = big_pipe()
        arguments = ["--replies-fd", str(replies_write), "--trace-fd", str(trace_fd)]
        arguments += ["--trace-path", path, "--created", repr(created)]
        arguments += ["--meta", orjson.dumps(meta).decode()]
        arguments += [] if redact else ["--no-redact"]
        arguments += ["--show"] if show else []
        arguments += ["--outputs", outputs.to_json()] if outputs is not None else []
        try:
            analysis = AnalysisProcess.spawn(
                "mcpsniff.mitm.worker",
                arguments,
                BACKLOG_LIMIT,
                pass_fds=(replies_write, trace_fd),
                delay=BATCH_DELAY,
            )
        except BaseException:
            os.close(replies_read)
            raise
        return cls(analysis, replies_read, on_reply, on_gone, on_late)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` for the pipes (call once it runs)."""
        if self.loop is not None or not self.alive:
            return
        self.loop = loop
        self.channel.attach(loop)
        loop.add_reader(self.replies_fd, self._readable)

    # ------------------------------------------------------------------ observations

    def sink(self, observation: Observation) -> None:
        """The ``remote_exchange.Sink`` of the addon's exchanges.

        Sent with others, ``BATCH_DELAY`` later at most: a write per
        observation (several per exchange, in three hooks) would cost mitmdump
        more than the observations themselves.
        """
        if self.alive:
            self.channel.send(observation)

    def close_sessions(self, t: float) -> None:
        """End every session in the trace."""
        if self.alive:
            self.channel.end(t)

    def sync(self, number: int) -> asyncio.Future[None] | None:
        """A future done once exchange ``number``'s findings are back; None if none will come."""
        loop = self.loop
        if loop is None or not self.alive:
            return None
        future = loop.create_future()
        self.waiting[number] = (future, time.monotonic())
        self.channel.send(Sync(number))
        # A hook waits: send at the end of this turn, with what other flows add in it.
        self.channel.flush_soon()
        if self.watchdog is None:
            self.watchdog = loop.call_later(SYNC_TIMEOUT, self._release_overdue)
        return future if number in self.waiting else None

    def set_show(self, show: bool) -> None:
        """Start or stop ``mcpsniff_show`` lines."""
        if self.alive:
            self.channel.send(Show(show))

    # ------------------------------------------------------------------ replies

    def _readable(self) -> None:
        try:
            chunk = os.read(self.replies_fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._gone(self._exit_reason())
            return
        buffer = self.buffer
        buffer += chunk
        position = 0
        size = REPLY_LENGTH.size
        while len(buffer) - position >= size:
            (length,) = REPLY_LENGTH.unpack_from(buffer, position)
            end = position + size + length
            if end > len(buffer):
                break
            try:
                reply = Reply.decode(buffer[position + size : end])
            except Exception as exc:  # never a traceback per flow: give up on it once
                self._gone(f"its reply was unreadable: {exc!r}")
                return
            position = end
            self._handle(reply)
        del buffer[:position]

    def _handle(self, reply: Reply) -> None:
        self.on_reply(reply)
        waiting = self.waiting
        for number in reply.synced:
            entry = waiting.pop(number, None)
            if entry is not None and not entry[0].done():
                entry[0].set_result(None)

    def _release(self, numbers: list[int]) -> None:
        """Let these hooks go on without their findings (``on_reply`` forgets their flows)."""
        self.on_reply(Reply(synced=numbers))
        for number in numbers:
            entry = self.waiting.pop(number, None)
            if entry is not None and not entry[0].done():
                entry[0].set_result(None)

    def _release_overdue(self) -> None:
        self.watchdog = None
        if not self.waiting or self.loop is None:
            return
        limit = time.monotonic() - SYNC_TIMEOUT
        overdue = [n for n, (_, sent) in self.waiting.items() if sent <= limit]
        if overdue:
            self._release(overdue)
            if self.on_late is not None:
                self.on_late(
                    f"the analysis process is more than {SYNC_TIMEOUT:g} s behind: flows go on "
                    "without their findings until it catches up (the trace has them all)"
                )
                self.on_late = None  # once
        if self.waiting:
            self.watchdog = self.loop.call_later(SYNC_TIMEOUT / 2, self._release_overdue)

    def _exit_reason(self) -> str:
        proc = self.analysis.proc
        assert proc is not None
        try:
            # Its end of the pipe closes as it exits: the status follows at once.
            code = proc.wait(0.2)
        except subprocess.TimeoutExpired:
            return "it closed its pipe"
        if code is not None and code < 0:
            return f"it was killed by signal {-code}"
        return f"it exited with status {code}"

    def _gone(self, reason: str) -> None:
        if not self.alive:
            return
        self.alive = False
        self.channel.broken = True  # nothing more is sent
        self._close_reader()
        self._release(list(self.waiting))
        if not self.stopping:
            self.on_gone(reason)

    def _close_reader(self) -> None:
        if self.loop is not None:
            with contextlib.suppress(Exception):
                self.loop.remove_reader(self.replies_fd)
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        with contextlib.suppress(OSError):
            os.close(self.replies_fd)
        self.replies_fd = -1

    # ------------------------------------------------------------------ the end

    async def finish(self) -> int | None:
        """Close the channel; wait until the analysis process has written the trace; its status.

        Replies keep being handled meanwhile (the last findings, show lines).
        """
        self.stopping = True
        if self.alive and self.loop is not None:
            await self.channel.close()
            # The reader sees EOF once the process has sent its last reply and exited.
            while self.alive:
                await asyncio.sleep(0.005)
        else:
            self._finish_blocking()
        return await self.analysis.wait()

    def finish_now(self) -> int | None:
        """``finish`` without an event loop (mitmproxy's loop is gone): blocking."""
        self.stopping = True
        self._finish_blocking()
        proc = self.analysis.proc
        assert proc is not None
        return proc.wait()

    def _finish_blocking(self) -> None:
        alive = self.alive
        self.channel.close_blocking()
        if alive and self.replies_fd >= 0:
            # Read the replies to the end, so the process never blocks on a full pipe.
            os.set_blocking(self.replies_fd, True)
            while self.alive:
                self._readable()
        self.alive = False
        if self.replies_fd >= 0:
            self._close_reader()
