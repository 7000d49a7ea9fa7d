"""The mitmproxy addon's analysis process, and the addon's end of its two pipes.

mitmdump is single-threaded Python: every microsecond the core's analysis and
the trace writing take inside it comes straight off its request rate. So, as
``mcpsniff http`` does, the addon only notes what happens to each exchange
(``remote_exchange.RemoteExchange``) and sends the notes through a pipe to an
analysis process, which replays them on a real ``HttpObserver`` and
``Recorder`` (``remote_exchange.ExchangeReplay``) and writes the trace.

Unlike the HTTP relay, the addon needs results back: findings go on their flows
(comment, marker, metadata), and ``mcpsniff_show`` lines belong in mitmproxy's
event log. So the analysis process answers on a second pipe. After finishing
an exchange the addon sends a *sync* marker with the exchange's number; when
the analysis process reaches it, every finding of that exchange has been
made, and it says so (``Reply.synced``) together with the findings and lines
made since its last reply. This is for an addon that holds responses (flows
are being saved: their findings must be on them *before* the addons after it
see the flow in the ``response`` hook): that hook waits for the reply
(``sync``); other flows go on meanwhile. Otherwise nothing waits and no
marker is sent: findings go on their flows whenever they come, and clean
traffic gets no replies at all.

The analysis process is a fresh interpreter (``python -m
mcpsniff.relay.analysis_service``), not a fork: mitmproxy may run threads, and
a fork copies none of them but every lock they hold. It gets the trace file,
already created by the addon (so bad paths fail at option time), as an open
file descriptor.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.model import FindingRecord, FrameRecord, Record
from mcpsniff.core.observation_codec import encode_bytes
from mcpsniff.core.observations import CaptureEnd, CaptureGap, Observation
from mcpsniff.relay.control import Show, Sync
from mcpsniff.relay.observer_pipe import PIPE_SIZE, ObservationSender, _become_analysis_process
from mcpsniff.relay.outputs import Outputs, attach
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.remote_exchange import ExchangeReplay
from mcpsniff.relay.remote_recorder import (
    METADATA_ALLOWANCE,
    end_trace,
    replay_calls,
    shed_bodies,
)
from mcpsniff.render import Style, Timeline
from mcpsniff.trace.format import TraceWriter

#: Bytes of recorder calls the addon may queue while the pipe is full.
BACKLOG_LIMIT = 64 << 20
#: Seconds calls may wait to be sent with later ones, unless a hook waits for them.
BATCH_DELAY = 0.005
#: Seconds a hook waits for its exchange's findings before going on without them.
SYNC_TIMEOUT = 5.0
#: Frames remembered with their exchange (findings name frames, flows are exchanges).
FRAME_MEMORY = 100_000
_LENGTH = struct.Struct("<I")
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


# --------------------------------------------------------------------------- messages


@dataclass(slots=True)
class FlowFinding:
    """A finding, with the exchanges (flows) whose frames it names."""

    exchanges: tuple[int, ...]
    rule: str
    severity: str
    message: str


@dataclass(slots=True)
class Reply:
    """What the analysis process tells the addon after a batch of calls.

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


# --------------------------------------------------------------------------- analysis side


class AnalysisService:
    """The analysis process: replays the addon's notes, answers syncs with findings."""

    def __init__(self, replay: ExchangeReplay, replies_fd: int, show: bool) -> None:
        self.replay = replay
        self.recorder = recorder = replay.recorder
        self.replies_fd = replies_fd
        self.replies_broken = False
        self.timeline: Timeline | None = Timeline(Style(False)) if show else None
        self.reply = Reply()
        #: Frame seq -> exchange number.
        self.frame_exchange: dict[int, int] = {}
        recorder.listeners.append(self._record)

    def _record(self, record: Record) -> None:
        if isinstance(record, FrameRecord):
            meta = record.meta or {}
            number = meta.get("exchange")
            if isinstance(number, int):
                if len(self.frame_exchange) >= FRAME_MEMORY:
                    self.frame_exchange.clear()
                self.frame_exchange[record.seq] = number
        elif isinstance(record, FindingRecord):
            # A finding naming two frames of one exchange goes on its flow once.
            exchanges = tuple(dict.fromkeys(self.frame_exchange.get(s, -1) for s in record.seq))
            self.reply.findings.append(
                FlowFinding(exchanges, record.rule, record.severity, record.message)
            )
        if self.timeline is not None:
            self.reply.lines.extend(self.timeline.feed(record))

    def _apply(self, message: Observation | Sync | Show) -> None:
        """Replay one observation, or act on a control message."""
        try:
            if isinstance(message, Sync):
                self.reply.synced.append(message.exchange)
            elif isinstance(message, Show):
                if message.on and self.timeline is None:
                    self.timeline = Timeline(Style(False))
                elif not message.on and self.timeline is not None:
                    self.reply.lines.extend(self.timeline.flush())
                    self.timeline = None
            else:
                self.replay.apply(message)
        except Exception as exc:  # recording must never stop
            _warn(f"mcpsniff: internal error while recording: {exc!r}")

    def _send_reply(self) -> None:
        if self.timeline is not None:
            # A frame's lines wait for the next frame; no later record of the batch belongs
            # to it, so show them now rather than one message late.
            self.reply.lines.extend(self.timeline.flush())
        reply, self.reply = self.reply, Reply()
        if not reply or self.replies_broken:
            return
        payload = reply.encode()
        try:
            _write_all(self.replies_fd, _LENGTH.pack(len(payload)) + payload)
        except OSError:
            # The addon is gone; the trace is still worth finishing.
            self.replies_broken = True

    def run(self, calls_fd: int) -> int:
        """Replay calls until STOP or EOF; the exit status (3: the trace is incomplete)."""
        writer = self.recorder.writer

        def after_batch() -> None:
            if writer is not None:
                writer.flush()
            self._send_reply()

        stopped = replay_calls(calls_fd, self._apply, after_batch, _warn)
        return end_trace(self.recorder, stopped, _warn, after_close=self._send_reply)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """The analysis process's entry point (started by ``AnalysisClient.start``)."""
    parser = argparse.ArgumentParser(prog="mcpsniff.relay.analysis_service")
    parser.add_argument("--calls-fd", type=int, required=True)
    parser.add_argument("--replies-fd", type=int, required=True)
    parser.add_argument("--trace-fd", type=int, required=True)
    parser.add_argument("--trace-path", default="")
    parser.add_argument("--meta", default="{}", help="the trace header's meta (JSON)")
    parser.add_argument("--created", type=float, required=True)
    parser.add_argument("--no-redact", action="store_true")
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--outputs", default="", help="Outputs as JSON (mcpsniff.relay.outputs)")
    ns = parser.parse_args(argv)
    # Normal priority: unlike a relay's, the addon's hooks wait for this process
    # (findings must be on a flow before the later addons see it).
    _become_analysis_process(niceness=0)
    stream = os.fdopen(ns.trace_fd, "wb", buffering=1 << 16)
    writer = TraceWriter(stream, Path(ns.trace_path) if ns.trace_path else None)
    writer.write_header(orjson.loads(ns.meta), ns.created)
    writer.flush()
    recorder = Recorder(writer, "http", redact=not ns.no_redact, autoflush=False)
    attach(recorder, Outputs.from_json(ns.outputs))
    # Sessions are keyed by the server's host too: mitmproxy sees many servers.
    replay = ExchangeReplay(recorder, redact=not ns.no_redact, key_by_host=True)
    return AnalysisService(replay, ns.replies_fd, ns.show).run(ns.calls_fd)


# --------------------------------------------------------------------------- addon side


def create_trace(path: str) -> int:
    """Create the new trace file (mode 0600, never an existing one); its fd.

    Raises ``OSError`` (``FileExistsError`` for an existing file) with the reason.
    """
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)


def _big_pipe() -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(write_fd, _F_SETPIPE_SZ, PIPE_SIZE)
    return read_fd, write_fd


class AnalysisClient:
    """The addon's end: a sink for notes, syncs to await, replies to hand on.

    ``on_reply`` gets every reply (before the synced hooks go on); ``on_gone``
    is told once, with a reason, when the analysis process dies or stops answering;
    ``on_late`` once, the first time hooks go on without their findings (it lags).
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        sender: ObservationSender,
        replies_fd: int,
        on_reply: Callable[[Reply], None],
        on_gone: Callable[[str], None],
        on_late: Callable[[str], None] | None = None,
    ) -> None:
        self.proc = proc
        self.sender = sender
        #: Calls not sent yet: ``flush`` sends them at the end of the turn in which a
        #: hook starts waiting, or ``BATCH_DELAY`` after the first, whichever comes first.
        self.batch: list[Observation | Sync | Show] = []
        self.flush_timer: asyncio.TimerHandle | None = None
        self.flush_soon = False
        sender.on_broken = lambda exc: self._gone(f"its pipe broke ({exc.strerror or exc})")
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
        import mcpsniff

        calls_read, calls_write = _big_pipe()
        replies_read, replies_write = _big_pipe()
        # The package this process imported, first: the addon may run from a checkout
        # with no mcpsniff installed. Its folder is the working directory too, since
        # ``-m`` puts that first on sys.path (an addons folder there would shadow us).
        root = str(Path(mcpsniff.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        argv = [sys.executable, "-m", "mcpsniff.relay.analysis_service"]
        argv += ["--calls-fd", str(calls_read), "--replies-fd", str(replies_write)]
        argv += ["--trace-fd", str(trace_fd), "--trace-path", path, "--created", repr(created)]
        argv += ["--meta", orjson.dumps(meta).decode()]
        argv += [] if redact else ["--no-redact"]
        argv += ["--show"] if show else []
        argv += ["--outputs", outputs.to_json()] if outputs is not None else []
        try:
            proc = subprocess.Popen(
                argv,
                pass_fds=(calls_read, replies_write, trace_fd),
                stdin=subprocess.DEVNULL,
                cwd=root,
                env=env,
                # Out of mitmdump's process group: a Ctrl-C meant for mitmdump must not
                # cut the trace short (the process ends on STOP, or EOF should mitmdump die).
                process_group=0,
            )
        except BaseException:
            for fd in (calls_write, replies_read):
                os.close(fd)
            raise
        finally:
            for fd in (calls_read, replies_write, trace_fd):
                os.close(fd)
        sender = ObservationSender(calls_write, BACKLOG_LIMIT)
        return cls(proc, sender, replies_read, on_reply, on_gone, on_late)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` for the pipes (call once it runs)."""
        if self.loop is not None or not self.alive:
            return
        self.loop = loop
        self.sender.attach(loop)
        loop.add_reader(self.replies_fd, self._readable)

    # ------------------------------------------------------------------ calls

    def sink(self, observation: Observation) -> None:
        """The ``remote_exchange.Sink`` of the addon's exchanges: ``queue``."""
        self.queue(observation)

    def close_sessions(self, t: float) -> None:
        """End every session in the trace (``Recorder.close``)."""
        self.queue(CaptureEnd(t))

    def queue(self, message: Observation | Sync | Show) -> None:
        """Send a call with others, soon (``BATCH_DELAY`` at most).

        Performance: a write per observation (several per exchange, in three
        hooks) would cost mitmdump more than the observations themselves; one
        per batch, for every flow's observations so far, costs a fraction.
        """
        if not self.alive:
            return
        self.batch.append(message)
        if self.flush_timer is None and not self.flush_soon:
            if self.loop is None:  # not attached yet (mitmproxy is starting): at once
                self.flush()
                return
            self.flush_timer = self.loop.call_later(BATCH_DELAY, self.flush)

    def flush(self) -> None:
        """Send the queued observations: one write."""
        self.flush_soon = False
        if self.flush_timer is not None:
            self.flush_timer.cancel()
            self.flush_timer = None
        batch, self.batch = self.batch, []
        if not self.alive or not (batch or (self.stopping and self.sender.lost_calls)):
            return
        sender = self.sender
        # A full backlog sheds body bytes only (counted, and noted in their
        # exchanges): what says an exchange happened always goes.
        batch, shed, shed_bytes = shed_bodies(batch, sender.limit - sender.pending_bytes)
        sender.lost_calls += shed
        sender.lost_call_bytes += shed_bytes
        # Before the sessions end, every dropped observation is accounted for.
        closing = self.stopping or any(isinstance(m, CaptureEnd) for m in batch)
        lost = sender.take_lost_calls(now=closing)
        if lost is not None:
            # Room again after a backlog overflow (or the trace ends): say what it lacks.
            batch.insert(0, CaptureGap(time.time(), lost["lost_calls"], lost["lost_bytes"]))
        frames = b"".join(encode_bytes(message) for message in batch)
        if lost is None and sender.pending_bytes > sender.limit + METADATA_ALLOWANCE:
            # This far behind, even the rest goes: memory stays bounded.
            sender.lost_calls += len(batch)
            sender.lost_call_bytes += len(frames)
            # Those syncs will never be answered: their hooks must not wait.
            self._release([m.exchange for m in batch if isinstance(m, Sync)])
            return
        sender.frames(0.0, frames)

    def sync(self, number: int) -> asyncio.Future[None] | None:
        """A future done once exchange ``number``'s findings are back; None if none will come."""
        loop = self.loop
        if loop is None or not self.alive:
            return None
        self.queue(Sync(number))
        if not self.flush_soon:
            # A hook waits: send at the end of this turn, with what other flows add in it.
            self.flush_soon = True
            loop.call_soon(self.flush)
        future = loop.create_future()
        self.waiting[number] = (future, time.monotonic())
        if self.watchdog is None:
            self.watchdog = loop.call_later(SYNC_TIMEOUT, self._release_overdue)
        return future

    def set_show(self, show: bool) -> None:
        """Start or stop ``mcpsniff_show`` lines."""
        self.queue(Show(show))

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
        size = _LENGTH.size
        while len(buffer) - position >= size:
            (length,) = _LENGTH.unpack_from(buffer, position)
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
        try:
            # Its end of the pipe closes as it exits: the status follows at once.
            code = self.proc.wait(0.2)
        except subprocess.TimeoutExpired:
            return "it closed its pipe"
        if code is not None and code < 0:
            return f"it was killed by signal {-code}"
        return f"it exited with status {code}"

    def _gone(self, reason: str) -> None:
        if not self.alive:
            return
        self.alive = False
        self.sender.broken = True  # nothing more is sent
        self._close_reader()
        self._release(list(self.waiting))
        if not self.stopping:
            self.on_gone(f"the analysis process is gone ({reason})")

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
        """Send STOP; wait until the analysis process has written the trace; its exit status.

        Replies keep being handled meanwhile (the last findings, show lines).
        """
        self.stopping = True
        self.flush()
        if self.alive and self.loop is not None:
            await self.sender.close()
            # The reader sees EOF once the process has sent its last reply and exited.
            while self.alive:
                await asyncio.sleep(0.005)
        else:
            self._finish_blocking()
        while self.proc.poll() is None:
            await asyncio.sleep(0.005)
        return self.proc.returncode

    def finish_now(self) -> int | None:
        """``finish`` without an event loop (mitmproxy's loop is gone): blocking."""
        self.stopping = True
        self._finish_blocking()
        return self.proc.wait()

    def _finish_blocking(self) -> None:
        self.flush()
        if self.alive:
            sender = self.sender
            sender.stop(0.0)
            os.set_blocking(sender.fd, True)
            with contextlib.suppress(OSError):
                for view in list(sender.pending):
                    _write_all(sender.fd, bytes(view))
            sender.pending.clear()
            # Read the replies to the end, so the process never blocks on a full pipe.
            os.set_blocking(self.replies_fd, True)
            while self.alive:
                self._readable()
        self.alive = False
        with contextlib.suppress(OSError):
            os.close(self.sender.fd)
        if self.replies_fd >= 0:
            self._close_reader()


if __name__ == "__main__":
    # Run as the module's real name, not ``__main__``: one copy of its classes.
    from mcpsniff.relay.analysis_service import main as _main

    sys.exit(_main())
