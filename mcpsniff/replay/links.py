"""Connections from ``replay drive`` to a live server: a spawned stdio command or a URL."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from mcpsniff.core.model import C2S, S2C
from mcpsniff.replay.script import Frame, ReplayError, Script
from mcpsniff.replay.tap import Tap

Receive = Callable[[bytes], None]
#: How long a spawned server may take to exit once its stdin is closed.
EXIT_GRACE = 5.0
#: Request headers that belong to the recorded connection, never to the live one.
_NOT_REPLAYED = frozenset(
    {"host", "content-length", "accept-encoding", "mcp-session-id", "connection", "user-agent"}
)


class StdioLink:
    """A spawned server: frames go to its stdin, its stdout lines come back."""

    def __init__(self, command: list[str], tap: Tap, receive: Receive, lost: Callable[[], None]):
        self.command = command
        self.tap = tap
        self.receive = receive
        self.lost = lost
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                # Lines can be long (a whole resource), far beyond asyncio's 64 KiB default.
                limit=1 << 26,
            )
        except OSError as exc:
            raise ReplayError(f"cannot start {self.command[0]}: {exc.strerror or exc}") from None
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                self.tap.stream(S2C, line)
                if line.strip():
                    self.receive(line)
        finally:
            self.lost()

    async def send(self, raw: bytes, frame: Frame | None) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = raw if raw.endswith(b"\n") else raw + b"\n"
        self.tap.stream(C2S, data)
        try:
            self.proc.stdin.write(data)
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self.lost()

    async def close(self) -> int | None:
        """Close stdin, give the server a moment to exit, then end it."""
        if self.proc is None:
            return None
        if self.proc.stdin is not None:
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
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        return self.proc.returncode


class HttpLink:
    """A Streamable HTTP server: each frame is a POST, answered by JSON, SSE or 202."""

    def __init__(
        self, url: str, script: Script, tap: Tap, receive: Receive, lost: Callable[[], None]
    ) -> None:
        self.url = url
        self.lost = lost
        #: The first connection failure: the drive then ends with an error, not a diff.
        self.error: str | None = None
        self.script = script
        self.tap = tap
        self.receive = receive
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._posts: set[asyncio.Task[None]] = set()
        self._client: Any = None

    async def start(self) -> None:
        import aiohttp

        self._client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))

    def _headers(self, frame: Frame | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        recorded = None
        if frame is not None and frame.exchange is not None:
            recorded = self.script.http_requests.get(frame.exchange)
        for pair in (recorded or {}).get("headers") or []:
            if isinstance(pair, list) and len(pair) == 2 and pair[0].lower() not in _NOT_REPLAYED:
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
        if self.session_id is None:
            # Until the session id is known, later requests would go out without it.
            await asyncio.wait({task})

    async def _post(self, raw: bytes, frame: Frame | None) -> None:
        import aiohttp

        body = raw.rstrip(b"\r\n")
        self.tap.frame(C2S, body, "http")
        try:
            async with self._client.post(self.url, data=body, headers=self._headers(frame)) as resp:
                sid = resp.headers.get("Mcp-Session-Id")
                if sid:
                    self.session_id = sid
                ctype = resp.headers.get("Content-Type", "")
                if ctype.startswith("text/event-stream"):
                    await self._read_sse(resp)
                else:
                    data = await resp.read()
                    if data.strip():
                        self.tap.frame(S2C, data, "http", status=resp.status)
                        self._note_version(data)
                        self.receive(data)
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            self.error = self.error or f"cannot reach {self.url}: {exc}"
            self.lost()

    async def _read_sse(self, resp: Any) -> None:
        data: list[str] = []
        async for line_bytes in resp.content:
            line = line_bytes.decode("utf-8").rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                payload = "\n".join(data).encode("utf-8")
                data = []
                if not payload.strip():
                    continue  # a priming event (an id for resumption, no message)
                self.tap.frame(S2C, payload, "sse")
                self._note_version(payload)
                self.receive(payload)

    def _note_version(self, data: bytes) -> None:
        """Remember the negotiated version: later requests carry it in a header."""
        if self.protocol_version is not None:
            return
        try:
            value = json.loads(data)
        except ValueError:
            return
        result = value.get("result") if isinstance(value, dict) else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            self.protocol_version = result["protocolVersion"]

    async def close(self) -> None:
        for task in list(self._posts):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._posts, return_exceptions=True)
        if self._client is not None:
            if self.session_id is not None:
                with contextlib.suppress(Exception):
                    headers = {"Mcp-Session-Id": self.session_id}
                    async with self._client.delete(self.url, headers=headers):
                        pass
            await self._client.close()
