"""``mcpsniff stdio -- COMMAND``: a transparent, recording stdio relay.

The relay spawns COMMAND and moves bytes: our stdin to the child's stdin, the
child's stdout to our stdout, the child's stderr to our stderr. Each chunk is
written first and only then observed (docs/architecture.md, invariant 2, "forward first,
observe second"): the forwarding tasks never run protocol code, they only
send a ``StreamData`` (or ``Stderr``) observation down the capture channel
(``mcpsniff.capture.channel``) to the analysis process forked at start
(``mcpsniff.capture.worker``, with ``mcpsniff.core.stdio_adapter``). The
channel's backlog is bounded by bytes; when the analysis falls that far
behind, the relay keeps forwarding and the trace records exactly how many
bytes it lost. Should the analysis process die, the relay forwards on and
its ``Supervisor`` completes the trace (``mcpsniff.capture.supervisor``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mcpsniff.capture.analysis_process import AnalysisProcess
from mcpsniff.capture.channel import Channel
from mcpsniff.capture.lanes import lanes_for
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.supervisor import Forwarded, Supervisor
from mcpsniff.capture.worker import fork_analysis
from mcpsniff.core.model import C2S, S2C, Record
from mcpsniff.core.observations import (
    ChildExited,
    ChildSpawned,
    SignalForwarded,
    SpawnFailed,
    Stderr,
    StdioEvent,
    StdioStart,
    StreamEnd,
)
from mcpsniff.core.redact import recorded_argv
from mcpsniff.core.stdio_adapter import SESSION, StdioAdapter
from mcpsniff.faults.spec import Fault
from mcpsniff.guard.enforce import EnforcePolicy, Gate
from mcpsniff.intercept.stdio_pipes import CHUNK, ChildInput
from mcpsniff.relay.stdio_io import Input, Output, blocking_modes, restore_blocking
from mcpsniff.trace.paths import TraceOpenError, open_trace_file
from mcpsniff.trace.salvage import TracePlace
from mcpsniff.trace.writer import TraceWriter

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
    #: What the analysis process feeds besides the trace (``mcpsniff.capture.sinks``).
    outputs: Outputs = field(default_factory=Outputs)
    #: ``--guard enforce``: what the relay refuses (None: a transparent recorder).
    guard: EnforcePolicy | None = None
    #: Faults to inject (``mcpsniff.faults``); empty: a transparent relay.
    faults: list[Fault] = field(default_factory=list)
    #: ``--lanes``: 2 records at once and analyzes behind, when the trace is the
    #: only output (``mcpsniff.capture.lanes``); None: ``DEFAULT_LANES``.
    lanes: int | None = None


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
    if options.name:
        meta["name"] = options.name  # given by a person: the session's name in every view
    try:
        return open_trace_file(options.trace, name=label, meta=meta).writer
    except TraceOpenError as exc:
        raise StartError(str(exc)) from None


class _ChildProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol ``create_subprocess_exec`` uses, plus a future done when the child exits."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=CHUNK, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


# --------------------------------------------------------------------------- the relay


class StdioRelay:
    """One relay run: spawn, pump, observe, reap, finish the trace."""

    def __init__(
        self,
        options: StdioOptions,
        analysis: AnalysisProcess,
        warn: Callable[[str], None] | None = None,
        place: TracePlace | None = None,
    ) -> None:
        self.options = options
        #: Bytes forwarded (and handed to the channel) per direction.
        self.forwarded = {C2S: 0, S2C: 0}
        #: Bytes of the child's stderr forwarded (and handed to the channel).
        self.stderr_forwarded = 0
        #: The forked analysis process (it owns the trace) and the channel to it.
        self.analysis = analysis
        self.channel: Channel = analysis.channel
        self.warn = warn or (lambda text: None)
        #: Should the analysis process die, the stream bytes it missed are the gap.
        self.supervisor = Supervisor(
            analysis,
            place,
            Forwarded(
                SESSION,
                lambda: {"forwarded": dict(self.forwarded), "stderr": self.stderr_forwarded},
            ),
            lambda text: self.warn(f"mcpsniff stdio: warning: {text}"),
        )
        self.channel.on_broken = self.supervisor.pipe_broke
        self.proc: asyncio.subprocess.Process | None = None
        self._signals: list[int] = []
        self._first_signal_at: float | None = None
        self._child_transport: asyncio.SubprocessTransport | None = None
        self._child_exited: asyncio.Future[None] | None = None

    async def run(self) -> int:
        """Relay until the child exits; return the exit status to pass on."""
        self.channel.attach(asyncio.get_running_loop())
        command = recorded_argv(self.options.command, self.options.redact)
        self._tell(StdioStart(time.time(), command, os.getpid()))
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
            self._tell(SpawnFailed(time.time(), shown, reason))
            await self._finish()
            return EXIT_NOT_STARTED
        self._tell(ChildSpawned(time.time(), self.proc.pid, resolved))
        self._install_signals()
        # The transports below make our stdin, stdout and stderr pipes
        # non-blocking, and O_NONBLOCK belongs to the open file description,
        # which the process that gave us the pipe (and whoever runs after us,
        # e.g. ``mcpsniff stdio ... ; next-command`` in a script) shares. Every
        # mode is put back as it was when we are done.
        blocking = blocking_modes()
        stdout, stderr = Output(1), Output(2)
        stdin = Input(0)
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
            restore_blocking(blocking)

    async def _relay(self, stdin: Input, stdout: Output, stderr: Output) -> int:
        """Pump until the child exits and its pipes are drained; return its status."""
        assert self.proc is not None
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        if self.options.faults:
            # --fault: whole lines, each judged by the fault engine (intercept/stdio_faults.py).
            from mcpsniff.intercept.stdio_faults import faulted_pumps

            c2s_pump, s2c_pump = faulted_pumps(
                self.options.faults,
                proc,
                stdin,
                stdout,
                self.channel,
                self.forwarded,
                self._tell,
                lambda: self._kill_group(signal.SIGKILL),
                redact=self.options.redact,
            )
            to_child = asyncio.create_task(c2s_pump)
            from_child = asyncio.create_task(s2c_pump)
        elif self.options.guard is not None:
            # --guard enforce: whole lines, tools/call judged (intercept/stdio_gate.py).
            from mcpsniff.intercept.stdio_gate import gated_pumps

            gate = Gate(self.options.guard)
            to_child, from_child = gated_pumps(self, stdin, stdout, proc, gate)
        else:
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
        killed_by = signal.Signals(-returncode).name if returncode < 0 else None
        forwarded = [signal.Signals(s).name for s in self._signals]
        self._tell(ChildExited(exited_at, returncode, status, killed_by, forwarded))
        await self._finish()
        return status

    def _tell(self, event: StdioEvent) -> None:
        self.channel.send(event)

    async def _finish(self) -> None:
        """End the capture and wait until the analysis process has completed the trace.

        mcpsniff exits only after the trace is complete, so whoever ran it
        (a test, a script running ``mcpsniff check`` next) can read it at once.
        The analysis process reports its own warnings (trace incomplete).
        """
        self.channel.end(time.time())
        # The supervisor completes the trace if the process died before it could.
        await self.supervisor.settle(await self.analysis.finish())

    # ------------------------------------------------------------------ pumps

    async def _pump_stdin(self, source: Input, proc: asyncio.subprocess.Process) -> None:
        child = ChildInput(proc)
        send_data = self.channel.send_data
        forwarded = self.forwarded
        while True:
            chunk = await source.read()
            if not chunk:
                break
            forwarded[C2S] += len(chunk)
            await child.write(chunk)
            send_data(C2S, time.time(), chunk)
        self.channel.send(StreamEnd(C2S, time.time()))
        child.close()

    async def _pump_out(self, source: asyncio.StreamReader, sink: Output, direction: str) -> None:
        send_data = self.channel.send_data
        forwarded = self.forwarded
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            await sink.write(chunk)
            forwarded[direction] += len(chunk)
            send_data(direction, time.time(), chunk)
        self.channel.send(StreamEnd(direction, time.time()))

    async def _pump_stderr(self, source: asyncio.StreamReader, sink: Output) -> None:
        send = self.channel.send
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            await sink.write(chunk)
            self.stderr_forwarded += len(chunk)
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
        self._tell(SignalForwarded(time.time(), signal.Signals(sig).name))
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


def run_stdio(
    options: StdioOptions,
    *,
    announce: Callable[[TraceWriter], None] | None = None,
    warn: Callable[[str], None] | None = None,
    show: Callable[[Record], None] | None = None,
    show_flush: Callable[[], None] | None = None,
) -> int:
    """``mcpsniff stdio``: open the trace, fork the analysis, relay; the exit status to pass on.

    Raises ``StartError`` (a one-line reason) when it cannot start. The
    analysis process is forked first, before the event loop or any thread
    exists; it takes over the trace, and the relay then spawns the server
    and forwards. ``announce`` is told the trace before that.
    """
    writer = open_trace(options)
    place = TracePlace.after_header(writer)
    if announce is not None:
        announce(writer)
    try:
        analysis = fork_analysis(
            writer,
            "stdio",
            lambda recorder: StdioAdapter(recorder, redact=options.redact),
            limit=options.backlog_limit,
            redact=options.redact,
            outputs=options.outputs,
            show=show,
            show_flush=show_flush,
            warn=warn,
            label="mcpsniff stdio",
            idle=not options.show,
            history_label=f"stdio:{options.name or Path(options.command[0]).name}",
            lanes=lanes_for(
                options.lanes,
                show=options.show or show is not None,
                sinks=bool(options.outputs.otlp),
                writer=writer,
            ),
        )
    except OSError as exc:
        writer.close()
        raise StartError(f"cannot start the analysis process: {exc.strerror or exc}") from None
    # The trace belongs to the analysis process now: ``writer`` is closed here
    # (fork_analysis handed it over); ``place`` is how the salvage finds the file.
    relay = StdioRelay(options, analysis, warn, place)
    return asyncio.run(relay.run())
