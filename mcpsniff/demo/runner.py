"""Run the demo: a real MCP client and a real MCP server with mcpsniff between them.

Both peers are child processes (``python -m mcpsniff.demo.client`` and
``python -m mcpsniff.demo.server``). The runner is the relay: it copies the
client's stdout to the server's stdin and the server's stdout to the client's
stdin byte for byte, in the chunks it reads them, and hands a copy of every
chunk to a :class:`~mcpsniff.capture.recorder.TraceRecorder` *after* forwarding it
(forward first, observe second: docs/architecture.md, invariant 2). The result is an
ordinary trace that ``mcpsniff show`` and ``mcpsniff check`` can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mcpsniff
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.core.model import C2S, S2C, FindingRecord, FrameRecord, Record
from mcpsniff.relay.stdio_io import forward
from mcpsniff.trace.writer import TraceWriter

#: The session key of the single stdio session the demo records.
SESSION = "demo"
CHUNK = 65536
#: How long to wait for the pipes to drain after the children were killed.
KILL_GRACE = 5.0

SERVER_MODULE = "mcpsniff.demo.server"
CLIENT_MODULE = "mcpsniff.demo.client"


@dataclass(slots=True)
class DemoResult:
    """What happened in one demo run."""

    client_exit: int | None
    server_exit: int | None
    #: Number of frame records written to the trace.
    frames: int
    trace_path: Path
    #: Everything the client wrote to stderr (its notes and summary line).
    client_log: str = ""
    timed_out: bool = False
    findings: list[FindingRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Both peers finished in time and exited with status 0."""
        return not self.timed_out and self.client_exit == 0 and self.server_exit == 0


def run_demo(
    trace_path: Path,
    *,
    server_args: Sequence[str] = (),
    client_args: Sequence[str] = (),
    timeout: float = 30.0,
) -> DemoResult:
    """Run the demo client against the demo server, recording their traffic to ``trace_path``.

    ``server_args`` and ``client_args`` are passed to the two processes (for
    example ``["--banner"]`` to make the server pollute its stdout). After
    ``timeout`` seconds both processes are killed; the trace is finished
    either way. Raises ``OSError`` if the trace file cannot be created (an
    existing file is never overwritten); nothing is started then. Must not be
    called from a running event loop (it uses ``asyncio.run``).
    """
    trace_path = Path(trace_path)
    server_cmd = [sys.executable, "-m", SERVER_MODULE, *server_args]
    client_cmd = [sys.executable, "-m", CLIENT_MODULE, *client_args]
    meta = {
        "source": "mcpsniff demo",
        "transport": "stdio",
        "server_command": server_cmd,
        "client_command": client_cmd,
    }
    writer = TraceWriter.create(trace_path, meta=meta, created=time.time())
    relay = _Relay(TraceRecorder(writer, transport="stdio"), server_cmd, client_cmd, timeout)
    try:
        asyncio.run(relay.run())
    finally:
        # Whatever went wrong, end the session and close the file so the
        # trace that exists is complete and readable.
        relay.finish()
        writer.close()
    return DemoResult(
        client_exit=relay.client_exit,
        server_exit=relay.server_exit,
        frames=relay.frames,
        trace_path=trace_path,
        client_log=relay.client_log.decode("utf-8", errors="replace"),
        timed_out=relay.timed_out,
        findings=relay.findings,
    )


def _child_env() -> dict[str, str]:
    """The children's environment: they must import this very mcpsniff, installed or not."""
    env = dict(os.environ)
    root = str(Path(mcpsniff.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class _Relay:
    """The asyncio relay between the two children, feeding one recorder."""

    def __init__(
        self, recorder: TraceRecorder, server_cmd: list[str], client_cmd: list[str], timeout: float
    ) -> None:
        self.recorder = recorder
        self.server_cmd = server_cmd
        self.client_cmd = client_cmd
        self.timeout = timeout
        self.client_exit: int | None = None
        self.server_exit: int | None = None
        self.timed_out = False
        self.frames = 0
        self.findings: list[FindingRecord] = []
        self.client_log = bytearray()
        self._procs: list[asyncio.subprocess.Process] = []
        self._finished = False
        recorder.listeners.append(self._count)

    def _count(self, record: Record) -> None:
        if isinstance(record, FrameRecord):
            self.frames += 1
        elif isinstance(record, FindingRecord):
            self.findings.append(record)

    async def run(self) -> None:
        """Start both children, relay until both have exited (or the timeout), reap them."""
        env = _child_env()
        pipes = {
            "stdin": asyncio.subprocess.PIPE,
            "stdout": asyncio.subprocess.PIPE,
            "stderr": asyncio.subprocess.PIPE,
        }
        # The server first: a real client spawns its server, then talks to it.
        server = await asyncio.create_subprocess_exec(*self.server_cmd, env=env, **pipes)
        self._procs.append(server)
        try:
            client = await asyncio.create_subprocess_exec(*self.client_cmd, env=env, **pipes)
        except BaseException:
            await self._kill_all()
            raise
        self._procs.append(client)
        assert server.stdin and server.stdout and server.stderr
        assert client.stdin and client.stdout and client.stderr
        self.recorder.event(
            SESSION,
            "session-start",
            time.time(),
            {
                "command": self.server_cmd,
                "client_command": self.client_cmd,
                "transport": "stdio",
                "pid": server.pid,
                "client_pid": client.pid,
            },
        )
        tasks = [
            asyncio.create_task(self._pump(client.stdout, server.stdin, C2S)),
            asyncio.create_task(self._pump(server.stdout, client.stdin, S2C)),
            asyncio.create_task(self._server_stderr(server.stderr)),
            asyncio.create_task(self._collect(client.stderr)),
            asyncio.create_task(server.wait()),
            asyncio.create_task(client.wait()),
        ]
        try:
            _, pending = await asyncio.wait(tasks, timeout=self.timeout)
            if pending:
                self.timed_out = True
                await self._kill_all()
                # Killed children close their pipes, so the pumps reach EOF
                # and record it; give them a moment, then stop waiting.
                _, pending = await asyncio.wait(pending, timeout=KILL_GRACE)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._kill_all()
        self.server_exit = server.returncode
        self.client_exit = client.returncode
        for task in tasks:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, direction: str
    ) -> None:
        """Copy one stream to the other, then record what was copied."""
        forwarding = True
        while True:
            chunk = await src.read(CHUNK)
            t = time.time()
            if not chunk:
                break
            if forwarding:
                forwarding = await forward(dst, chunk)
            self.recorder.feed(SESSION, direction, chunk, t)
        self.recorder.eof(SESSION, direction, time.time())
        # EOF travels on: the other side sees its input end, as it would
        # without mcpsniff in between.
        dst.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await dst.wait_closed()

    async def _server_stderr(self, src: asyncio.StreamReader) -> None:
        """Record every line the server logs to stderr as a ``stderr`` event."""
        async for line in _lines(src):
            text = line.decode("utf-8", errors="replace").rstrip("\r\n")
            self.recorder.event(SESSION, "stderr", time.time(), {"line": text})

    async def _collect(self, src: asyncio.StreamReader) -> None:
        """Keep the client's stderr for the result (it is not part of the MCP session)."""
        while chunk := await src.read(CHUNK):
            self.client_log += chunk

    async def _kill_all(self) -> None:
        for proc in self._procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()

    def finish(self) -> None:
        """Record the exit and end the session; safe to call once the relay stopped."""
        if self._finished:
            return
        self._finished = True
        data: dict[str, object] = {"client": self.client_exit, "server": self.server_exit}
        if self.timed_out:
            data["timed_out"] = True
            data["timeout"] = self.timeout
        t = time.time()
        self.recorder.event(SESSION, "exit", t, data)
        self.recorder.close(t)


async def _lines(src: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """Lines of a stream, the last one possibly unterminated; no length limit.

    ``StreamReader.readline`` fails on lines over its 64 KiB limit, and a
    crashing server can print a traceback line longer than that.
    """
    buffer = bytearray()
    while chunk := await src.read(CHUNK):
        buffer += chunk
        while (nl := buffer.find(b"\n")) >= 0:
            yield bytes(buffer[: nl + 1])
            del buffer[: nl + 1]
    if buffer:
        yield bytes(buffer)
