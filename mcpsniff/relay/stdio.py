"""``mcpsniff stdio -- COMMAND``: a transparent, recording stdio relay.

The relay spawns COMMAND and moves bytes: our stdin to the child's stdin, the
child's stdout to our stdout, the child's stderr to our stderr. Each chunk is
written first and only then observed (DESIGN.md invariant 2, "forward first,
observe second"): the forwarding tasks never run protocol code, they only
send a ``StreamData`` (or ``Stderr``) observation down the capture channel
(``channel``) to the analysis process forked at start (``worker``, with
``mcpsniff.core.stdio_adapter``). The channel's backlog is bounded by bytes;
when the analysis falls that far behind, the relay keeps forwarding and the
trace records exactly how many bytes it lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mcpsniff.core.model import C2S, S2C, Record
from mcpsniff.core.observations import Stderr, StreamEnd, TransportEvent
from mcpsniff.core.redact import recorded_argv
from mcpsniff.core.stdio_adapter import SESSION, StdioAdapter
from mcpsniff.relay.analysis_process import AnalysisProcess
from mcpsniff.relay.channel import Channel
from mcpsniff.relay.outputs import Outputs, attach
from mcpsniff.relay.recorder import Recorder
from mcpsniff.relay.worker import TRACE_INCOMPLETE, Worker
from mcpsniff.trace.format import TraceWriter
from mcpsniff.trace.paths import TraceOpenError, open_trace_file

CHUNK = 1 << 16
#: How far (in bytes) the analyzer may fall behind before the relay stops
#: queueing copies for it. Forwarding never waits for the analyzer.
DEFAULT_BACKLOG_LIMIT = 256 << 20
EXIT_NOT_STARTED = 127


@dataclass
class StdioOptions:
    """What ``mcpsniff stdio`` was asked to do."""

    command: list[str]
    #: A --trace value: a file, a pattern or a directory (see mcpsniff.trace.paths).
    trace: Path | str | None = None
    show: bool = False
    redact: bool = True
    name: str | None = None
    grace: float = 5.0
    backlog_limit: int = DEFAULT_BACKLOG_LIMIT
    #: What the analysis process feeds besides the trace (``mcpsniff.relay.outputs``).
    outputs: Outputs = field(default_factory=Outputs)


class StartError(Exception):
    """The relay refuses to start (before spawning anything)."""


def open_trace(options: StdioOptions) -> TraceWriter:
    """Create the trace file, or append a session to it; ``StartError`` with a one-line reason."""
    label = options.name or Path(options.command[0]).name
    meta = {
        "source": "mcpsniff stdio",
        "command": recorded_argv(options.command, options.redact),
        "label": label,
        "redacted": options.redact,
    }
    try:
        return open_trace_file(options.trace, name=label, meta=meta).writer
    except TraceOpenError as exc:
        raise StartError(str(exc)) from None


# --------------------------------------------------------------------------- byte endpoints


class _Output:
    """Our stdout or stderr: non-blocking for pipes, plain writes for files."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.writer: asyncio.StreamWriter | None = None
        self.protocol: _WriteProtocol | None = None
        self.was_blocking = True
        self.broken = False

    async def open(self) -> None:
        try:
            mode = os.fstat(self.fd).st_mode
        except OSError:
            self.broken = True
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            loop = asyncio.get_running_loop()
            self.was_blocking = os.get_blocking(self.fd)
            pipe = os.fdopen(os.dup(self.fd), "wb", buffering=0)
            transport, protocol = await loop.connect_write_pipe(_WriteProtocol, pipe)
            _write_through(transport)
            self.protocol = protocol
            self.writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            if self.writer is not None:
                self.writer.write(data)
                await self.writer.drain()
            else:
                view = memoryview(data)
                while view:
                    written = os.write(self.fd, view)
                    view = view[written:]
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.broken = True

    def write_nowait(self, data: bytes) -> None:
        """Queue ``data`` behind what is already being written, without waiting."""
        if self.broken:
            return
        if self.writer is None:
            with contextlib.suppress(OSError):
                os.write(self.fd, data)  # a file or terminal: a plain blocking write
            return
        if self.writer.transport.is_closing():
            # The reader went away. Writing on would make asyncio log a warning
            # to sys.stderr, which may be this very stream: stop here instead.
            self.broken = True
            return
        self.writer.write(data)

    def text_stream(self, like: TextIO) -> TextIO:
        """A text stream whose writes are queued on this output (see ``StdioRelay.run``)."""
        return io.TextIOWrapper(
            _QueuedRaw(self),
            encoding=getattr(like, "encoding", None) or "utf-8",
            errors=getattr(like, "errors", None) or "backslashreplace",
            line_buffering=True,
            write_through=True,
        )

    async def close(self, stall: float) -> None:
        """Write out what is still queued, then close.

        Waits until the transport has written everything (``drain()`` returns
        while up to the low-water mark is still queued, and that tail would be
        lost), as long as the reader makes progress; a reader that takes
        nothing for ``stall`` seconds does not hold the relay forever.
        """
        if self.writer is None or self.protocol is None:
            return
        transport = self.writer.transport
        transport.close()  # flushes what is queued, then reports connection_lost
        closed = self.protocol.closed
        while not closed.done():
            queued = transport.get_write_buffer_size()
            await asyncio.wait({closed}, timeout=stall)
            if not closed.done() and transport.get_write_buffer_size() >= queued:
                transport.abort()
                break


class _WriteProtocol(asyncio.streams.FlowControlMixin):
    """Flow control for a write pipe, plus a future that is done when it is closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)


class _QueuedRaw(io.RawIOBase):
    """The raw layer under ``_Output.text_stream``: every write goes to ``write_nowait``."""

    def __init__(self, output: _Output) -> None:
        super().__init__()
        self.output = output

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.output.write_nowait(chunk)
        return len(chunk)


class _ChildProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol ``create_subprocess_exec`` uses, plus a future done when the child exits."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=CHUNK, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class _Input:
    """Our stdin: a non-blocking pipe reader, or a thread for files and terminals."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader: asyncio.StreamReader | None = None
        self.transport: asyncio.BaseTransport | None = None

    async def open(self) -> None:
        try:
            mode = os.fstat(self.fd).st_mode
        except OSError:
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=CHUNK, loop=loop)
            pipe = os.fdopen(os.dup(self.fd), "rb", buffering=0)
            self.transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
            )
            self.reader = reader

    async def read(self) -> bytes:
        if self.reader is not None:
            return await self.reader.read(CHUNK)
        # A daemon thread per read, not the default executor: on a terminal
        # the read blocks until the user types something, and ``asyncio.run``
        # joins the executor's threads before it returns (mcpsniff would hang
        # after the child exited until Enter was pressed).
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bytes] = loop.create_future()

        def read_blocking() -> None:
            try:
                data = os.read(self.fd, CHUNK)
            except OSError:
                data = b""
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, done, data)

        threading.Thread(target=read_blocking, name="mcpsniff-stdin", daemon=True).start()
        return await done

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _resolve(future: asyncio.Future[bytes], data: bytes) -> None:
    if not future.done():
        future.set_result(data)


# --------------------------------------------------------------------------- the relay


class StdioRelay:
    """One relay run: spawn, pump, observe, reap, finish the trace."""

    def __init__(
        self,
        options: StdioOptions,
        analysis: AnalysisProcess,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.options = options
        #: The forked analysis process (it owns the trace) and the channel to it.
        self.analysis = analysis
        self.channel: Channel = analysis.channel
        self.warn = warn or (lambda text: None)
        self.channel.on_broken = self._analysis_lost
        self.proc: asyncio.subprocess.Process | None = None
        self._signals: list[int] = []
        self._first_signal_at: float | None = None
        self._child_transport: asyncio.SubprocessTransport | None = None
        self._child_exited: asyncio.Future[None] | None = None

    async def run(self) -> int:
        """Relay until the child exits; return the exit status to pass on."""
        self.channel.attach(asyncio.get_running_loop())
        self._event(
            "session-start",
            {
                "command": recorded_argv(self.options.command, self.options.redact),
                "transport": "stdio",
                "pid": os.getpid(),
            },
        )
        argv = list(self.options.command)
        resolved = shutil.which(argv[0])
        if resolved is None and os.sep in argv[0]:
            # Like a shell, run a path as given, so that the error is the real
            # one ("Permission denied") rather than "command not found".
            resolved = argv[0]
        try:
            if resolved is None:
                raise FileNotFoundError(2, "command not found", argv[0])
            # What asyncio.create_subprocess_exec does, with _ChildProtocol.
            loop = asyncio.get_running_loop()
            transport, protocol = await loop.subprocess_exec(
                lambda: _ChildProtocol(loop),
                # The child's argv[0] is the name as typed, as a shell passes
                # it; only the program to execute is the resolved path.
                argv[0],
                *argv[1:],
                executable=resolved,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # A group of its own, so npx/uv grandchildren get our signals too.
                start_new_session=True,
            )
            self.proc = asyncio.subprocess.Process(transport, protocol, loop)
            self._child_transport = transport
            self._child_exited = protocol.exited
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.warn(f"mcpsniff stdio: cannot start {argv[0]}: {reason}")
            shown = recorded_argv(argv, self.options.redact)
            self._event("spawn-failed", {"command": shown, "error": reason})
            await self._finish()
            return EXIT_NOT_STARTED
        self._event("spawned", {"child_pid": self.proc.pid, "argv0": resolved})
        self._install_signals()
        # The transports below make our stdin, stdout and stderr pipes
        # non-blocking, and O_NONBLOCK belongs to the open file description,
        # which the process that gave us the pipe (and whoever runs after us,
        # e.g. ``mcpsniff stdio ... ; next-command`` in a script) shares. Every
        # mode is put back as it was when we are done.
        blocking = _blocking_modes()
        stdout, stderr = _Output(1), _Output(2)
        stdin = _Input(0)
        await stdout.open()
        await stderr.open()
        await stdin.open()
        # mcpsniff's own stderr text (warnings) is written with ordinary
        # sys.stderr writes, which on the now non-blocking pipe would fail with
        # EAGAIN whenever the child's stderr had filled it. While the relay runs
        # they go through the same transport as the child's stderr: queued in
        # order, never blocking.
        saved_stderr = sys.stderr
        if stderr.writer is not None:
            sys.stderr = stderr.text_stream(saved_stderr)
        try:
            return await self._relay(stdin, stdout, stderr)
        finally:
            if sys.stderr is not saved_stderr:
                with contextlib.suppress(Exception):
                    sys.stderr.flush()
                sys.stderr = saved_stderr
            stdin.close()
            await stdout.close(self.options.grace)
            await stderr.close(self.options.grace)
            _restore_blocking(blocking)

    async def _relay(self, stdin: _Input, stdout: _Output, stderr: _Output) -> int:
        """Pump until the child exits and its pipes are drained; return its status."""
        assert self.proc is not None
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        to_child = asyncio.create_task(self._pump_stdin(stdin, proc))
        from_child = asyncio.create_task(self._pump_out(proc.stdout, stdout, S2C))
        errors = asyncio.create_task(self._pump_stderr(proc.stderr, stderr))
        # Not ``proc.wait()``, which (Python 3.11) resolves only once the child
        # has exited *and* all its pipes are closed: a grandchild that keeps
        # them open (npx, uv, a shell's background job) would hold the relay
        # forever. Wait for the child itself.
        assert self._child_exited is not None and self._child_transport is not None
        await self._child_exited
        returncode = self._child_transport.get_returncode()
        assert returncode is not None
        exited_at = time.time()
        # The child is gone: drain what it left in its pipes. Grandchildren
        # that still hold them open get the grace period, then the group is killed.
        _, pending = await asyncio.wait({from_child, errors}, timeout=self.options.grace)
        if pending:
            self._kill_group(signal.SIGKILL)
            await asyncio.wait(pending, timeout=2)
            for task in pending:
                task.cancel()
        to_child.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await to_child
        if self._first_signal_at is not None:
            await self._end_group()
        self._child_transport.close()  # its pipes; the child is already reaped
        status = 128 + -returncode if returncode < 0 else returncode
        exit_data: dict[str, Any] = {"returncode": returncode, "status": status}
        if returncode < 0:
            exit_data["signal"] = signal.Signals(-returncode).name
        if self._signals:
            exit_data["forwarded_signals"] = [signal.Signals(s).name for s in self._signals]
        self._event("exit", exit_data, exited_at)
        await self._finish()
        return status

    def _event(self, name: str, data: dict[str, Any], t: float | None = None) -> None:
        self.channel.send(TransportEvent(SESSION, name, time.time() if t is None else t, data))

    async def _finish(self) -> None:
        """End the capture and wait until the analysis process has completed the trace.

        mcpsniff exits only after the trace is complete, so whoever ran it
        (a test, a script running ``mcpsniff check`` next) can read it at once.
        The analysis process reports its own warnings (trace incomplete).
        """
        channel = self.channel
        broken = channel.broken
        channel.end(time.time())
        status = await self.analysis.finish()
        if status not in (0, TRACE_INCOMPLETE) and not broken:
            self.warn(
                f"mcpsniff stdio: warning: the analysis process exited with status {status}; "
                "the trace may be incomplete"
            )

    def _analysis_lost(self, exc: OSError) -> None:
        """The analysis process is gone: keep relaying, and say the trace stops here."""
        self.warn(
            f"mcpsniff stdio: warning: the analysis process is gone ({exc.strerror or exc}); "
            "relaying continues, the trace ends here"
        )

    # ------------------------------------------------------------------ pumps

    async def _pump_stdin(self, source: _Input, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        sink = proc.stdin
        _write_through(sink.transport)
        send_data, send = self.channel.send_data, self.channel.send
        while True:
            chunk = await source.read()
            if not chunk:
                break
            try:
                sink.write(chunk)
                await sink.drain()
            except (BrokenPipeError, ConnectionResetError):
                # The child closed its stdin (or died): keep reading so the
                # client is not blocked, and still record what it sent.
                pass
            send_data(C2S, time.time(), chunk)
        send(StreamEnd(C2S, time.time()))
        with contextlib.suppress(Exception):
            sink.close()

    async def _pump_out(self, source: asyncio.StreamReader, sink: _Output, direction: str) -> None:
        send_data = self.channel.send_data
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            await sink.write(chunk)
            send_data(direction, time.time(), chunk)
        self.channel.send(StreamEnd(direction, time.time()))

    async def _pump_stderr(self, source: asyncio.StreamReader, sink: _Output) -> None:
        send = self.channel.send
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            await sink.write(chunk)
            # Splitting into lines and redacting is the analysis's job.
            send(Stderr(time.time(), chunk))
        send(Stderr(time.time(), b""))

    # ------------------------------------------------------------------ signals

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self._forward_signal, sig)

    def _forward_signal(self, sig: int) -> None:
        self._signals.append(sig)
        if self._first_signal_at is None:
            self._first_signal_at = time.monotonic()
        self._event("signal", {"signal": signal.Signals(sig).name})
        self._kill_group(sig)
        loop = asyncio.get_running_loop()
        loop.call_later(self.options.grace, self._kill_group, signal.SIGKILL)

    async def _end_group(self) -> None:
        """After a forwarded signal: let the group finish until the grace period ends, then kill.

        ``_forward_signal`` schedules a SIGKILL on the event loop, but when the
        child exits at once (it handled the signal) the loop closes before
        then; grandchildren that survived the signal and hold none of our
        pipes would linger.
        """
        assert self._first_signal_at is not None
        deadline = self._first_signal_at + self.options.grace
        while self._group_exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self._kill_group(signal.SIGKILL)

    def _group_exists(self) -> bool:
        """Whether any process is left in the child's process group."""
        if self.proc is None:
            return False
        try:
            os.killpg(self.proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _kill_group(self, sig: int) -> None:
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


def _write_through(transport: asyncio.WriteTransport) -> None:
    """Make ``drain()`` wait until the pipe has taken every byte, not just most of them.

    A chunk is handed to the analysis process only after ``drain()``; with
    asyncio's default high-water mark up to 64 KiB could still sit in the
    transport's buffer then, and if mcpsniff were killed at that moment the
    trace would record bytes the peer never received.
    """
    transport.set_write_buffer_limits(high=0, low=0)


def _blocking_modes() -> dict[int, bool]:
    """The blocking mode of each of our standard descriptors."""
    modes: dict[int, bool] = {}
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            modes[fd] = os.get_blocking(fd)
    return modes


def _restore_blocking(modes: dict[int, bool]) -> None:
    # All at once, from modes read before any was changed: stdout and stderr
    # are often one pipe (2>&1), so per-descriptor bookkeeping would read the
    # mode another transport had already changed.
    for fd, mode in modes.items():
        with contextlib.suppress(OSError):
            os.set_blocking(fd, mode)


def run_stdio(
    options: StdioOptions,
    writer: TraceWriter,
    show: Callable[[Record], None] | None = None,
    warn: Callable[[str], None] | None = None,
    show_flush: Callable[[], None] | None = None,
) -> int:
    """Run the relay to completion and return the exit status to pass on.

    The analysis process is forked first, before the event loop or any
    thread exists; it takes over ``writer`` (this process never writes to
    the trace again), and the relay then spawns the server and forwards.
    """
    # Flushed once per batch of observations (the worker does it).
    recorder = Recorder(writer, "stdio", redact=options.redact, autoflush=False)
    if show is not None:
        recorder.listeners.append(show)
    if show_flush is not None:
        recorder.batch_listeners.append(show_flush)
    adapter = StdioAdapter(recorder, redact=options.redact)
    worker = Worker(recorder, adapter.apply, lost=adapter.lost, label="mcpsniff stdio", warn=warn)

    def work(fd: int) -> int:
        attach(recorder, options.outputs)  # here, in the analysis process
        return worker.run(fd)

    try:
        analysis = AnalysisProcess.fork(work, options.backlog_limit)
    except OSError as exc:
        raise StartError(f"cannot start the analysis process: {exc.strerror or exc}") from None
    # The trace belongs to the analysis process now. This process never
    # writes to ``writer`` again; its buffer is empty (the header was
    # flushed), so even its finalizer writes nothing.
    relay = StdioRelay(options, analysis, warn)
    return asyncio.run(relay.run())
