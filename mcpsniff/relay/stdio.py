"""``mcpsniff stdio -- COMMAND``: a transparent, recording stdio relay.

The relay spawns COMMAND and moves bytes: our stdin to the child's stdin, the
child's stdout to our stdout, the child's stderr to our stderr. Each chunk is
written first and only then handed to the analyzer (DESIGN.md invariant 2,
"forward first, observe second"): the forwarding tasks never run protocol
code, they only append the chunk to a queue that an analysis task drains.
The queue is bounded by bytes; when the analyzer falls that far behind, the
relay keeps forwarding and the trace records exactly how many bytes it lost.
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
from mcpsniff.core.redact import recorded_argv
from mcpsniff.relay.observer_pipe import AnalysisProcess, ObservationSender
from mcpsniff.relay.outputs import Outputs
from mcpsniff.relay.stdio_analysis import TRACE_INCOMPLETE, StdioAnalysis
from mcpsniff.trace.format import TraceWriter
from mcpsniff.trace.paths import TraceOpenError, open_trace_file, resolve_trace_path

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


def default_trace_path(label: str, now: float | None = None) -> Path:
    """A new trace file in the per-user state folder, named by label, date and pid."""
    return resolve_trace_path(None, label, now)


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

        Fix: this drained, closed and awaited ``writer.wait_closed()``. That
        needs a method FlowControlMixin lacks, so it failed at once (the
        error was suppressed), and ``drain()`` returns while up to the
        low-water mark is still queued: the relay returned, the loop closed
        and the tail of the child's output was lost whenever our reader was
        slower than the child. Now wait until the transport has written
        everything, as long as the reader makes progress; a reader that takes
        nothing for ``stall`` seconds no longer holds the relay forever.
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
        # Fix: this used ``loop.run_in_executor(None, os.read, ...)``. On a
        # terminal that read blocks until the user types something, and
        # ``asyncio.run`` joins the default executor's threads before it
        # returns, so after the child exited mcpsniff hung until Enter was
        # pressed. A daemon thread per read is abandoned instead.
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
        #: The forked analysis process (it owns the trace) and the pipe to it.
        self.analysis = analysis
        self.observer: ObservationSender = analysis.sender
        self.warn = warn or (lambda text: None)
        self.observer.on_broken = self._analysis_lost
        self.proc: asyncio.subprocess.Process | None = None
        self._signals: list[int] = []
        self._first_signal_at: float | None = None
        self._child_transport: asyncio.SubprocessTransport | None = None
        self._child_exited: asyncio.Future[None] | None = None

    async def run(self) -> int:
        """Relay until the child exits; return the exit status to pass on."""
        observer = self.observer
        observer.attach(asyncio.get_running_loop())
        observer.event(
            "session-start",
            time.time(),
            {
                "command": recorded_argv(self.options.command, self.options.redact),
                "transport": "stdio",
                "pid": os.getpid(),
            },
        )
        argv = list(self.options.command)
        resolved = shutil.which(argv[0])
        if resolved is None and os.sep in argv[0]:
            # Fix: like a shell, run a path as given, so that the error is the
            # real one ("Permission denied", "No such file or directory")
            # rather than "command not found" for a file that is there.
            resolved = argv[0]
        try:
            if resolved is None:
                raise FileNotFoundError(2, "command not found", argv[0])
            # What asyncio.create_subprocess_exec does, with _ChildProtocol.
            loop = asyncio.get_running_loop()
            transport, protocol = await loop.subprocess_exec(
                lambda: _ChildProtocol(loop),
                # Fix: the child's argv[0] is the name as typed, as a shell
                # passes it; only the program to execute is the resolved path.
                # (It used to be the resolved path, which programs that look
                # at argv[0] see as a different name.)
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
            observer.event("spawn-failed", time.time(), {"command": shown, "error": reason})
            observer.event("session-end", time.time(), {"exit": EXIT_NOT_STARTED})
            await self._finish()
            return EXIT_NOT_STARTED
        observer.event("spawned", time.time(), {"child_pid": self.proc.pid, "argv0": resolved})
        self._install_signals()
        # Fix: the transports below make our stdin, stdout and stderr pipes
        # non-blocking, and O_NONBLOCK belongs to the open file description,
        # which the process that gave us the pipe (and whoever runs after us,
        # e.g. ``mcpsniff stdio ... ; next-command`` in a script) shares. Put
        # every mode back as it was when we are done.
        blocking = _blocking_modes()
        stdout, stderr = _Output(1), _Output(2)
        stdin = _Input(0)
        await stdout.open()
        await stderr.open()
        await stdin.open()
        # Fix: mcpsniff's own stderr text (--show lines, warnings) is written
        # with ordinary sys.stderr writes. On the now non-blocking pipe those
        # failed with EAGAIN whenever the child's stderr had filled it, and
        # the lines were lost. While the relay runs they go through the same
        # transport as the child's stderr: queued in order, never blocking.
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
        observer = self.observer
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        to_child = asyncio.create_task(self._pump_stdin(stdin, proc))
        from_child = asyncio.create_task(self._pump_out(proc.stdout, stdout, S2C))
        errors = asyncio.create_task(self._pump_stderr(proc.stderr, stderr))
        # Fix: this was ``await proc.wait()``, which (Python 3.11) resolves only
        # once the child has exited *and* all its pipes are closed. When a
        # grandchild kept them open (npx, uv, a shell's background job) the
        # relay waited for the grandchild forever, and the grace period and
        # group kill below never ran. Wait for the child itself.
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
        observer.event("exit", exited_at, exit_data)
        observer.event("session-end", time.time(), {"status": status})
        await self._finish()
        return status

    async def _finish(self) -> None:
        """Hand the analysis process its last observations and wait until the trace is done.

        mcpsniff exits only after the trace is complete, so whoever ran it
        (a test, a script running ``mcpsniff check`` next) can read it at once.
        The analysis process reports its own warnings (trace incomplete).
        """
        await self.observer.close()
        status = await self.analysis.wait()
        if status not in (0, TRACE_INCOMPLETE) and not self.observer.broken:
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
        observer = self.observer
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
            observer.data(C2S, chunk, time.time())
        observer.eof(C2S, time.time())
        with contextlib.suppress(Exception):
            sink.close()

    async def _pump_out(self, source: asyncio.StreamReader, sink: _Output, direction: str) -> None:
        observer = self.observer
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            await sink.write(chunk)
            observer.data(direction, chunk, time.time())
        observer.eof(direction, time.time())

    async def _pump_stderr(self, source: asyncio.StreamReader, sink: _Output) -> None:
        observer = self.observer
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            await sink.write(chunk)
            # Splitting into lines and redacting is the analysis task's job.
            observer.stderr(chunk, time.time())
        observer.stderr(b"", time.time())

    # ------------------------------------------------------------------ signals

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self._forward_signal, sig)

    def _forward_signal(self, sig: int) -> None:
        self._signals.append(sig)
        if self._first_signal_at is None:
            self._first_signal_at = time.monotonic()
        self.observer.event("signal", time.time(), {"signal": signal.Signals(sig).name})
        self._kill_group(sig)
        loop = asyncio.get_running_loop()
        loop.call_later(self.options.grace, self._kill_group, signal.SIGKILL)

    async def _end_group(self) -> None:
        """After a forwarded signal: let the group finish until the grace period ends, then kill.

        Fix: ``_forward_signal`` schedules the SIGKILL on the event loop, but
        when the child exits at once (it handled the signal) the relay
        returns before the grace period is over, the loop is closed, and the
        kill never happened: grandchildren that survived the signal and hold
        none of our pipes (so the drain above did not wait for them) lingered.
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
    recording = StdioAnalysis(
        writer,
        redact=options.redact,
        show=show,
        show_flush=show_flush,
        warn=warn,
        outputs=options.outputs,
    )
    try:
        analysis = AnalysisProcess.start(recording.run, options.backlog_limit)
    except OSError as exc:
        raise StartError(f"cannot start the analysis process: {exc.strerror or exc}") from None
    # The trace belongs to the analysis process now. This process never
    # writes to ``writer`` again; its buffer is empty (the header was
    # flushed), so even its finalizer writes nothing.
    relay = StdioRelay(options, analysis, warn)
    return asyncio.run(relay.run())


def _stderr_warn(text: str) -> None:
    with contextlib.suppress(OSError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
