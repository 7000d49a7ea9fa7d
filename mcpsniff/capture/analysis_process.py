"""The one launcher of analysis processes: a fork, or (the addon) a fresh interpreter.

``mcpsniff stdio`` and ``mcpsniff http`` fork before their event loop or any
thread exists; the child runs the worker (``mcpsniff.capture.worker``) on the
read end of the channel's pipe. mitmproxy may run threads, and a fork copies
none of them but every lock they hold, so the addon spawns ``python -m
mcpsniff.mitm.worker`` instead, which runs the same worker. Either way the
parent gets an ``AnalysisProcess``: the ``Channel`` to feed, and a way to
wait for the trace to be complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO

from mcpsniff.capture.channel import Channel, big_pipe
from mcpsniff.capture.priority import ForwardingClock, lower_priority

#: How much lower a forked analysis process's CPU priority is than the relay's.
ANALYSIS_NICENESS = 10
#: Exit status of an analysis process whose trace could not be written in full
#: (it says why itself).
TRACE_INCOMPLETE = 3
#: Seconds ``finish`` waits in silence before it says what it is waiting for.
FINISH_NOTICE_SECONDS = 1.0
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number


@dataclass
class AnalysisProcess:
    """A running analysis process and the channel that feeds it."""

    pid: int
    channel: Channel
    #: The spawned interpreter (None for a fork, reaped with waitpid).
    proc: subprocess.Popen[bytes] | None = None
    #: A forked process's exit status, once reaped.
    status: int | None = None

    @classmethod
    def fork(
        cls,
        work: Callable[[int], int],
        limit: int,
        *,
        idle: bool = False,
        delay: float = 0.0,
        clock: ForwardingClock | None = None,
    ) -> AnalysisProcess:
        """Fork; the child runs ``work(read_fd)`` (a ``Worker``) and exits with its status.

        ``idle``: the child runs only on CPU nobody else wants (``SCHED_IDLE``)
        instead of at ``ANALYSIS_NICENESS``. ``clock``: the channel stamps it
        with every observation, and the child stays at normal priority: its
        worker lowers only the thread that works while the relay forwards
        (``mcpsniff/capture/priority.py``). Call before the event loop starts
        or any thread exists: the child must inherit nothing that is running.
        """
        read_fd, write_fd = big_pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child; the relay tests cover it

            def child() -> int:
                os.close(write_fd)
                become_analysis_process(idle=idle, lower=clock is None)
                return work(read_fd)

            run_forked_child(child, "mcpsniff: analysis process")
        os.close(read_fd)
        return cls(pid, Channel(write_fd, limit, delay=delay, clock=clock))

    @classmethod
    def spawn(
        cls,
        module: str,
        arguments: Sequence[str],
        limit: int,
        *,
        pass_fds: Sequence[int],
        delay: float = 0.0,
    ) -> AnalysisProcess:
        """Start ``python -m MODULE --fd N ARGUMENTS`` (closes ``pass_fds`` here).

        The package this process imported comes first on its path: the addon
        may run from a checkout with no mcpsniff installed. Its folder is the
        working directory too, since ``-m`` puts that first on sys.path (an
        ``addons`` folder there would shadow us).
        """
        import mcpsniff

        read_fd, write_fd = big_pipe()
        root = str(Path(mcpsniff.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        argv = [sys.executable, "-m", module, "--fd", str(read_fd), *arguments]
        try:
            proc = subprocess.Popen(
                argv,
                pass_fds=(read_fd, *pass_fds),
                stdin=subprocess.DEVNULL,
                cwd=root,
                env=env,
                # Out of the parent's process group: a Ctrl-C meant for it must not
                # cut the trace short (the worker ends at EOF on its pipe).
                process_group=0,
            )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            for fd in (read_fd, *pass_fds):
                os.close(fd)
        return cls(proc.pid, Channel(write_fd, limit, delay=delay), proc)

    def poll(self) -> int | None:
        """The exit status, once the process has exited (None before)."""
        if self.proc is not None:
            return self.proc.poll()
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:  # reaped: waitpid would not know it again
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def wait_blocking(self, timeout: float) -> int | None:
        """``wait`` without an event loop, ``timeout`` seconds at most (None: still running)."""
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return self.proc.wait(timeout)
            return None
        deadline = time.monotonic() + timeout
        while (status := self.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.002)
        return status

    async def wait(self) -> int:
        """Wait for the analysis process to exit; its exit status."""
        while (status := self.poll()) is None:
            await asyncio.sleep(0.002)
        return status

    async def finish(self, warn: Callable[[str], None] | None = None) -> int:
        """Close the channel, wait until the process has written the trace; its status.

        Should that take a while (the analysis is behind, on a busy machine,
        where an idle-priority process gets little CPU), ``warn`` is told once
        why the command has not exited yet, instead of a silent wait.
        """
        notice = None
        if warn is not None:
            notice = asyncio.get_running_loop().call_later(
                FINISH_NOTICE_SECONDS,
                lambda: warn(
                    "mcpsniff: waiting for the analysis process to finish the trace "
                    "(it is behind the traffic; nothing is lost)"
                ),
            )
        try:
            await self.channel.close()
            return await self.wait()
        finally:
            if notice is not None:
                notice.cancel()


def run_forked_child(work: Callable[[], int], what: str) -> NoReturn:
    """In a forked child: run ``work()`` and leave the process with its status.

    The child never returns into its parent's code (an event loop's, a test
    runner's): whatever happens, it ends in ``os._exit``, with status 70
    (EX_SOFTWARE) and one line on stderr naming ``what`` if ``work`` raised.
    """
    status = 70
    try:
        status = work()
    except BaseException as exc:
        with contextlib.suppress(Exception):
            os.write(2, f"{what} failed: {exc!r}\n".encode())
    finally:
        os._exit(status)


def become_analysis_process(
    niceness: int = ANALYSIS_NICENESS, *, idle: bool = False, lower: bool = True
) -> None:
    """Detach this process from the relay's job: it only reads the pipe.

    Signals meant for the relay (Ctrl-C reaches the whole foreground process
    group) must not cut the trace short: the analysis process ends when the
    pipe does, which happens when the relay closes it or dies. It lets go of
    the client's stdin and stdout at once, so the client sees EOF when the
    relay closes them, and keeps stderr for ``--show`` and warnings.
    ``lower``: the whole process goes below the relay (``lower_priority``);
    without it, its worker lowers one thread (``mcpsniff/capture/priority.py``).
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    # Forward first, observe second, for the CPU too: when the client, the
    # server and the relay want every core, the scheduler serves them first,
    # and the analysis catches up in the pauses (the backlog holds the bytes).
    if lower:
        lower_priority(niceness, idle)
    _return_big_blocks_to_the_os()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    sys.stderr = _blocking_stderr(sys.stderr)


def _return_big_blocks_to_the_os() -> None:
    """Serve every allocation of 1 MiB or more with its own mapping (glibc only).

    glibc raises its mmap threshold each time a large block is freed (up to
    32 MiB), after which blocks of a big frame's size come from the heap and
    stay in the process when freed: an analysis process that parsed one 50 MB
    body would keep that memory. A fixed threshold returns it at once.
    """
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    with contextlib.suppress(Exception):
        mallopt(_M_MMAP_THRESHOLD, 1 << 20)


class _BlockingRaw(io.RawIOBase):
    """Writes all of ``data`` to fd 2, waiting whenever the pipe is full.

    The relay makes the stderr pipe non-blocking, and O_NONBLOCK belongs to
    the open file description, which we share: a plain write would fail with
    EAGAIN whenever the reader is slow. This process may simply wait.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                select.select([], [self.fd], [], 1.0)
                continue
            except OSError:
                break  # stderr is gone: nothing else to tell
            view = view[written:]
        return size


def _blocking_stderr(like: Any) -> TextIO:
    """A text stream on fd 2 that waits out a full pipe, encoded like ``like``."""
    with contextlib.suppress(Exception):
        like.flush()
    return io.TextIOWrapper(
        _BlockingRaw(2),
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors=getattr(like, "errors", None) or "backslashreplace",
        line_buffering=True,
        write_through=True,
    )
