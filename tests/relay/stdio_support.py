"""Helpers for the ``mcpsniff stdio`` tests: real processes, real pipes, bounded waits.

``Relay`` runs ``python -m mcpsniff stdio [OPTIONS] -- COMMAND`` as a
subprocess and reads its stdout and stderr in threads (as a real MCP client
does), so a test can write to its stdin, wait for output, signal it and read
the trace it wrote. Every wait has a timeout: a relay that hangs fails the
test instead of blocking the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.trace.reader import TraceReader

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PEERS = str(HERE / "stdio_peers.py")
BATCH_SERVER = str(HERE / "batch_server.py")
MCPSNIFF = [sys.executable, "-m", "mcpsniff"]
#: Longest any single wait may take before the test counts the relay as hung.
TIMEOUT = 60.0


def relay_env(**extra: str) -> dict[str, str]:
    """Our environment, with this checkout importable, plus ``extra``."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + path if path else "")
    env.update(extra)
    return env


def show_follow(path: Path) -> subprocess.Popen[bytes]:
    """``mcpsniff show --follow`` of ``path``, polling every 50 ms, without colour."""
    return subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "show", "--follow", "--interval", "0.05", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=relay_env(NO_COLOR="1"),
    )


def stop_follow(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C a ``show_follow`` process, as a person at the terminal would, and reap it."""
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    wait_until(lambda: proc.poll() is not None, "show to exit")


def peer(*args: str) -> list[str]:
    """The command line of a ``stdio_peers.py`` mode."""
    return [sys.executable, PEERS, *args]


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Poll ``predicate`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.01)


def process_gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs. A zombie counts as gone: it is dead, merely unreaped
    (containers whose init never reaps keep orphans as zombies)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state in ("Z", "X")


class Collector:
    """Reads one pipe to EOF in a thread; ``delay`` makes it a deliberately slow reader."""

    def __init__(self, stream: Any, *, chunk: int = 1 << 16, delay: float = 0.0) -> None:
        self._stream = stream
        self._chunk = chunk
        self._delay = delay
        self._data = bytearray()
        self._cond = threading.Condition()
        self.eof = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fd = self._stream.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, self._chunk)
                except OSError:
                    chunk = b""
                with self._cond:
                    if not chunk:
                        self.eof = True
                        self._cond.notify_all()
                        return
                    self._data += chunk
                    self._cond.notify_all()
                if self._delay:
                    time.sleep(self._delay)
        finally:
            with self._cond:
                self.eof = True
                self._cond.notify_all()

    @property
    def data(self) -> bytes:
        with self._cond:
            return bytes(self._data)

    def wait_for(
        self, predicate: Callable[[bytes], bool], what: str, timeout: float = TIMEOUT
    ) -> bytes:
        """Wait until ``predicate(data so far)`` holds and return the data."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(bytes(self._data)):
                left = deadline - time.monotonic()
                if self.eof:
                    raise AssertionError(f"EOF before {what}; got {bytes(self._data)[-300:]!r}")
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}")
                self._cond.wait(min(left, 0.5))
            return bytes(self._data)

    def wait_eof(self, timeout: float = TIMEOUT) -> bytes:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError("timed out waiting for EOF")
        return self.data


class Relay:
    """``mcpsniff stdio OPTIONS -- COMMAND`` as a real subprocess."""

    def __init__(
        self,
        command: list[str],
        *options: str,
        env: dict[str, str] | None = None,
        stdin: Any = subprocess.PIPE,
        preexec_fn: Callable[[], None] | None = None,
        stderr_delay: float = 0.0,
        stdout_delay: float = 0.0,
        read_chunk: int = 1 << 16,
    ) -> None:
        self.argv = [*MCPSNIFF, "stdio", *options, "--", *command]
        self.proc = subprocess.Popen(
            self.argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else relay_env(),
            preexec_fn=preexec_fn,
        )
        self.pid = self.proc.pid
        self.stdout = Collector(self.proc.stdout, chunk=read_chunk, delay=stdout_delay)
        self.stderr = Collector(self.proc.stderr, chunk=read_chunk, delay=stderr_delay)
        self._writer: threading.Thread | None = None
        self.write_error: BaseException | None = None

    # ------------------------------------------------------------------ input

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send_json(self, message: Any) -> None:
        self.send(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def send_chunks(self, chunks: Iterable[bytes], *, close: bool = True) -> None:
        """Write ``chunks`` one write each from a thread (so big inputs cannot deadlock)."""
        assert self.proc.stdin is not None
        stdin = self.proc.stdin

        def write() -> None:
            try:
                fd = stdin.fileno()
                for chunk in chunks:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                if close:
                    stdin.close()
            except BaseException as exc:  # reported by finish()
                self.write_error = exc

        self._writer = threading.Thread(target=write, daemon=True)
        self._writer.start()

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    # ------------------------------------------------------------------ output

    def wait_stdout(self, needle: bytes, timeout: float = TIMEOUT) -> bytes:
        return self.stdout.wait_for(lambda data: needle in data, f"{needle!r} on stdout", timeout)

    # ------------------------------------------------------------------ end

    def wait(self, timeout: float = TIMEOUT) -> int:
        """Wait for mcpsniff to exit and for both pipes to reach EOF; return its status."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"mcpsniff did not exit within {timeout:.0f} s") from None
        self.stdout.wait_eof(timeout)
        self.stderr.wait_eof(timeout)
        if self._writer is not None:
            self._writer.join(timeout)
        return code

    def finish(self, timeout: float = TIMEOUT) -> int:
        """Close stdin (unless a writer thread does), then ``wait``."""
        if self._writer is None:
            self.close_stdin()
        return self.wait(timeout)

    def kill(self) -> None:
        """Clean up after a failed test: SIGKILL mcpsniff if it still runs."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        with contextlib.suppress(OSError):
            self.close_stdin()

    def stderr_lines(self) -> list[str]:
        return self.stderr.data.decode("utf-8", "replace").splitlines()


@contextlib.contextmanager
def relay(command: list[str], *options: str, **kwargs: Any) -> Iterator[Relay]:
    """A ``Relay`` that is killed (with its child's process group) if the test fails."""
    r = Relay(command, *options, **kwargs)
    try:
        yield r
    finally:
        running = r.proc.poll() is None
        r.kill()
        if running:
            _kill_child_group(r)


def _kill_child_group(r: Relay) -> None:
    # The child has a session of its own, so killing mcpsniff does not reach it.
    trace = _trace_option(r.argv)
    if trace is None or not trace.exists():
        return
    with contextlib.suppress(Exception):
        for record in read_trace(trace):
            if isinstance(record, EventRecord) and record.event == "spawned":
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(record.data["child_pid"], signal.SIGKILL)


def _trace_option(argv: list[str]) -> Path | None:
    for i, arg in enumerate(argv[:-1]):
        if arg == "--":
            return None
        if arg == "--trace":
            return Path(argv[i + 1])
    return None


# --------------------------------------------------------------------------- traces


def read_trace(path: Path) -> list[Record]:
    """Every record of the trace at ``path`` (the reader must not raise)."""
    with TraceReader(path) as reader:
        return list(reader.records())


def stream(records: list[Record], direction: str) -> bytes:
    """The raw frames of one direction, concatenated."""
    return b"".join(
        r.raw for r in records if isinstance(r, FrameRecord) and r.direction == direction
    )


def events(records: list[Record], name: str) -> list[EventRecord]:
    return [r for r in records if isinstance(r, EventRecord) and r.event == name]


def findings(records: list[Record], rule: str | None = None) -> list[FindingRecord]:
    return [r for r in records if isinstance(r, FindingRecord) and (rule is None or r.rule == rule)]


def messages(records: list[Record]) -> list[MessageRecord]:
    return [r for r in records if isinstance(r, MessageRecord)]


def recording_line(path: Path, command: str) -> bytes:
    """The line mcpsniff prints on stderr when it starts recording."""
    return f"mcpsniff: recording {command} to {path}\n".encode()


# --------------------------------------------------------------------------- a scripted client


class Client:
    """A scripted MCP client speaking through a ``Relay``: one request at a time."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self._seen = 0

    def request(self, id_: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.relay.send_json(message)
        return self.response(id_)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.relay.send_json(message)

    def response(self, id_: Any) -> Any:
        """The next response whose id is ``id_`` (compared as text, like tolerant clients)."""
        found: list[Any] = []

        def answered(data: bytes) -> bool:
            lines = data.split(b"\n")
            for index in range(self._seen, len(lines) - 1):
                try:
                    value = json.loads(lines[index])
                except ValueError:
                    continue  # a banner or other junk on stdout
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if (
                        isinstance(item, dict)
                        and "method" not in item
                        and str(item.get("id")) == str(id_)
                    ):
                        found.append(value)
                        self._seen = index + 1
                        return True
            return False

        self.relay.stdout.wait_for(answered, f"the response to id {id_!r}")
        return found[0]

    def handshake(self, version: str = "2025-06-18", *, initialized: bool = True) -> dict[str, Any]:
        reply = self.request(
            1,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "relay-test", "version": "1.0"},
            },
        )
        if initialized:
            self.notify("notifications/initialized")
        return reply


def children_of(pid: int) -> list[int]:
    """The processes ``pid`` forked (its main thread's children), e.g. a derived lane."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def analysis_process_of(relay_pid: int) -> int:
    """The analysis process mcpsniff forked: its child with its own command line."""
    own = Path(f"/proc/{relay_pid}/cmdline").read_bytes()
    for child in Path(f"/proc/{relay_pid}/task/{relay_pid}/children").read_text().split():
        with contextlib.suppress(OSError):
            if Path(f"/proc/{child}/cmdline").read_bytes() == own:
                return int(child)
    raise AssertionError("mcpsniff has no analysis process")
