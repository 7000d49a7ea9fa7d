"""Connections from ``replay drive`` to a live server: a spawned stdio command or a URL.

One link serves one recorded session. It hands what the server sends to its
``LinkSink`` and tells it, once, when the server can no longer answer: the
process exited (with its code or signal and its last stderr lines), or the
URL cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections import deque
from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import C2S, S2C
from mcpsniff.relay.stdio_io import forward
from mcpsniff.replay.drive import LinkSink
from mcpsniff.replay.script import REQUEST, Frame, ReplayError, Script

#: How long a spawned server may take to exit once its stdin is closed, and then once
#: it was asked to terminate.
EXIT_GRACE = 2.0
#: How long to wait for a server's exit status once its stdout has ended.
EXIT_STATUS_WAIT = 1.0
#: How many of a spawned server's last stderr lines are shown when it exits on its own.
STDERR_TAIL = 5
#: Seconds to connect to a live HTTP server.
CONNECT_TIMEOUT = 10.0
#: Request headers that belong to the recorded connection, never to the live one.
_NOT_REPLAYED = frozenset(
    {"host", "content-length", "accept-encoding", "mcp-session-id", "connection", "user-agent"}
)


def describe_exit(code: int | None) -> str:
    """``exited with code 1`` or ``was killed by signal SIGKILL``."""
    if code is None:
        return "closed its output"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"was killed by signal {name}"
    return f"exited with code {code}"


def _names_session(request: dict[str, Any] | None) -> bool:
    """Whether a recorded ``http-request`` carried an ``Mcp-Session-Id``."""
    headers = (request or {}).get("headers") or []
    return any(
        isinstance(pair, list) and len(pair) == 2 and str(pair[0]).lower() == "mcp-session-id"
        for pair in headers
    )


class _LinkBase:
    """What every link keeps: the tap that records its traffic, where answers go, its session."""

    def __init__(self, tap: Any, sink: LinkSink, session: str) -> None:
        self.tap = tap
        self.sink = sink
        self.session = session
        self.gone: str | None = None
        self.lost = asyncio.Event()


class StdioLink(_LinkBase):
    """A spawned server: frames go to its stdin, its stdout lines come back."""

    def __init__(self, command: list[str], tap: Any, sink: LinkSink, session: str) -> None:
        super().__init__(tap, sink, session)
        self.command = command
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._closing = False
        self._readers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # Lines can be long (a whole resource), far beyond asyncio's 64 KiB default.
                limit=1 << 26,
            )
        except OSError as exc:
            raise ReplayError(f"cannot start {self.command[0]}: {exc.strerror or exc}") from None
        self._readers = [
            asyncio.create_task(self._read_stderr()),
            asyncio.create_task(self._read()),
        ]

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        with contextlib.suppress(ValueError, OSError):
            while line := await self.proc.stderr.readline():
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                self.stderr_tail.append(text)
                self.tap.event("stderr", {"line": text}, self.session)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                self.tap.stream(S2C, line, self.session)
                if line.strip():
                    self.sink.receive(line)
        except (ValueError, OSError):
            pass  # a line beyond the limit, or a broken pipe: the server's output is over
        if self._closing:
            return
        code = None
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(self.proc.wait(), EXIT_STATUS_WAIT)
        # The last stderr lines are usually the reason; let them arrive.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._readers[0]), EXIT_STATUS_WAIT)
        self.sink.lost(f"the live server {describe_exit(code)}", list(self.stderr_tail))

    async def send(self, raw: bytes, frame: Frame | None) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if self.gone is not None:
            return
        data = raw if raw.endswith(b"\n") else raw + b"\n"
        self.tap.stream(C2S, data, self.session)
        # False when the server has gone: its stdout reader reports how, once.
        await forward(self.proc.stdin, data)

    async def close(self) -> None:
        """Close stdin, give the server a moment to exit, then end it."""
        self._closing = True
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), EXIT_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), EXIT_GRACE)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)


class HttpLink(_LinkBase):
    """A Streamable HTTP server: each frame is a POST, answered by JSON, SSE or 202.

    Each link is one client: its own connection pool, its own ``Mcp-Session-Id``
    (the one the live server assigns), its own negotiated protocol version.
    """

    def __init__(self, url: str, script: Script, tap: Any, sink: LinkSink, session: str) -> None:
        super().__init__(tap, sink, session)
        self.url = url
        self.script = script
        #: Whether the server could not be reached at all.
        self.unreachable: str | None = None
        #: Whether any answer came back on this link.
        self.answered = False
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._posts: set[asyncio.Task[None]] = set()
        self._client: Any = None
        self._stateless = not any(
            _names_session(script.http_requests.get(f.exchange or -1))
            for f in script.frames
            if f.session == session
        )

    def _tap_session(self, frame: Frame | None) -> str:
        """The session the own trace files a POST under.

        A stateless group mixes clients that count ids from the same start; the
        own trace keeps each recorded client connection apart, so that its check
        does not mistake two clients' id 1 for a reused id.
        """
        if not self._stateless or frame is None or frame.exchange is None:
            return self.session
        client = (self.script.http_requests.get(frame.exchange) or {}).get("client")
        return f"{self.session} {client}" if isinstance(client, str) else self.session

    async def start(self) -> None:
        import aiohttp

        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
        )

    def _headers(self, frame: Frame | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        recorded = None
        if frame is not None and frame.exchange is not None:
            recorded = self.script.http_requests.get(frame.exchange)
        for pair in (recorded or {}).get("headers") or []:
            if (
                isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(p, str) for p in pair)
                and pair[0].lower() not in _NOT_REPLAYED
            ):
                headers[pair[0]] = pair[1]
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "application/json, text/event-stream"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None and not any(
            k.lower() == "mcp-protocol-version" for k in headers
        ):
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def send(self, raw: bytes, frame: Frame | None) -> None:
        # Each POST runs on its own, as a client's do: a long SSE stream must not hold back
        # the next request, nor the answer to a server request that arrives on it.
        task = asyncio.create_task(self._post(raw, frame))
        self._posts.add(task)
        task.add_done_callback(self._posts.discard)
        if frame is not None and not any(m.kind == REQUEST for m in frame.messages):
            # A POST of notifications is answered at once (202); clients wait for it
            # before they go on, so that notifications/initialized arrives before the
            # next request does. Bounded: a server that holds it must not stall the drive.
            await asyncio.wait({task}, timeout=CONNECT_TIMEOUT)

    async def _post(self, raw: bytes, frame: Frame | None) -> None:
        import aiohttp

        body = raw.rstrip(b"\r\n")
        post = frame.seq if frame is not None else None
        tap_session = self._tap_session(frame)
        self.tap.frame(C2S, body, "http", tap_session)
        why = "the server's HTTP response ended without answering it"
        try:
            async with self._client.post(self.url, data=body, headers=self._headers(frame)) as resp:
                why = (
                    f"the server's HTTP response (status {resp.status}) ended without answering it"
                )
                sid = resp.headers.get("Mcp-Session-Id")
                if sid:
                    self.session_id = sid
                ctype = resp.headers.get("Content-Type", "")
                if ctype.startswith("text/event-stream"):
                    await self._read_sse(resp, post, tap_session)
                else:
                    data = await resp.read()
                    if data.strip():
                        self._deliver(data, "http", post, tap_session, status=resp.status)
        except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError) as exc:
            reason = f"cannot reach {self.url}: {terminal_safe(str(exc))}"
            if not self.answered:
                self.unreachable = reason
            self.sink.lost(reason, [])
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            why = f"the server's HTTP response broke off: {terminal_safe(str(exc))}"
        finally:
            if post is not None:
                self.sink.finished(post, why)

    def _deliver(
        self, data: bytes, transport: str, post: int | None, tap_session: str, **meta: Any
    ) -> None:
        self.answered = True
        self.tap.frame(S2C, data, transport, tap_session, **meta)
        self._note_version(data)
        self.sink.receive(data, post)

    async def _read_sse(self, resp: Any, post: int | None, tap_session: str) -> None:
        data: list[str] = []
        async for line_bytes in resp.content:
            line = line_bytes.decode("utf-8", "replace").rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                payload = "\n".join(data).encode("utf-8")
                data = []
                if not payload.strip():
                    continue  # a priming event (an id for resumption, no message)
                self._deliver(payload, "sse", post, tap_session)

    def _note_version(self, data: bytes) -> None:
        """Remember the negotiated version: later requests carry it in a header."""
        if self.protocol_version is not None:
            return
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            return
        result = value.get("result") if isinstance(value, dict) else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            self.protocol_version = result["protocolVersion"]

    async def close(self) -> None:
        for task in list(self._posts):
            task.cancel()
        await asyncio.gather(*self._posts, return_exceptions=True)
        if self._client is not None:
            if self.session_id is not None and self.gone is None:
                with contextlib.suppress(Exception):
                    headers = {"Mcp-Session-Id": self.session_id}
                    async with asyncio.timeout(EXIT_GRACE):
                        async with self._client.delete(self.url, headers=headers):
                            pass
            await self._client.close()
