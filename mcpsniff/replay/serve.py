"""The replay server: answers client messages from a recording, whatever the transport.

A transport hands each incoming frame to ``ReplayServer.handle`` with an
``emit`` callback; the server emits the recorded server messages that stood
before the matching response, then the response itself with the client's id.
Server-initiated requests are emitted with their recorded ids, and the
replay waits for the client's answer (which arrives through another
``handle`` call) before it goes on, as the recorded server did.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.replay.matcher import PARAMS, Matcher
from mcpsniff.replay.plan import Exchange, Plan, build_plan, progress_token
from mcpsniff.replay.script import (
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    Message,
    Script,
    contains_redacted,
    id_key,
)

Emit = Callable[[bytes], Awaitable[None]]
#: JSON-RPC "method not found": the replay has no answer for the request.
UNMATCHED_CODE = -32601
#: How long a server-initiated request waits for the client's answer.
ANSWER_TIMEOUT = 30.0


@dataclass(slots=True)
class Unmatched:
    """A client request the recording had no answer for."""

    method: str
    id: Any
    target: str | None


@dataclass(slots=True)
class Handled:
    """What one incoming frame turned into, for transports that shape the reply (HTTP)."""

    #: The recorded exchanges that answered requests in the frame.
    exchanges: list[Exchange] = field(default_factory=list)
    #: Whether the frame held a request (so a response was emitted).
    answered: bool = False


def encode(body: Any) -> bytes:
    """A message as compact JSON, as most SDKs write it."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def target_of(body: dict[str, Any]) -> str | None:
    """The tool, prompt or resource a request acts on, for messages people read."""
    params = body.get("params")
    if not isinstance(params, dict):
        return None
    for key in ("name", "uri"):
        if isinstance(params.get(key), str):
            return params[key]
    return None


class ReplayServer:
    """Serves one recording to one client connection (or one HTTP client)."""

    def __init__(
        self,
        script: Script,
        mode: str = PARAMS,
        warn: Callable[[str], None] | None = None,
        on_unmatched: Callable[[Unmatched], None] | None = None,
    ) -> None:
        self.script = script
        self.plan: Plan = build_plan(script)
        self.matcher = Matcher(self.plan.exchanges, mode)
        self.unmatched: list[Unmatched] = []
        self._warn = warn
        self._warned_redacted = False
        self._on_unmatched = on_unmatched
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}

    def peek(self, raw: bytes) -> Exchange | None:
        """The exchange the first request in ``raw`` would get, without taking it.

        The HTTP transport needs it before answering: the recorded exchange
        decides between a JSON body and an SSE stream, and the status.
        """
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and "method" in item and "id" in item:
                return self.matcher.peek(item)
        return None

    async def handle(self, raw: bytes, emit: Emit) -> Handled:
        """Answer one incoming frame: a message or a batch."""
        handled = Handled()
        try:
            value = json.loads(raw)
        except ValueError:
            error = {"code": -32700, "message": "Parse error"}
            await emit(encode({"jsonrpc": "2.0", "id": None, "error": error}))
            handled.answered = True
            return handled
        batch = isinstance(value, list)
        replies: list[dict[str, Any]] = []
        for item in value if batch else [value]:
            reply = await self._one(item, emit, handled)
            if reply is not None:
                replies.append(reply)
        if replies:
            handled.answered = True
            # A batch is answered by one array, rebuilt element by element (JSON-RPC §6).
            await emit(encode(replies if batch else replies[0]))
        for exchange in handled.exchanges:
            for message in exchange.after:
                await self._send_server_message(message, exchange, None, emit)
        return handled

    async def _one(self, body: Any, emit: Emit, handled: Handled) -> dict[str, Any] | None:
        if not isinstance(body, dict):
            return {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Invalid Request"},
            }
        kind = Message(0, None, "c2s", body).kind
        if kind == RESPONSE:
            future = self._answers.pop(id_key(body.get("id")), None)
            if future is not None and not future.done():
                future.set_result(body)
            return None
        if kind == NOTIFICATION:
            return None
        exchange = self.matcher.take(body)
        if exchange is None or exchange.response is None:
            return self._unmatched(body)
        handled.exchanges.append(exchange)
        token = progress_token(body)
        for message in exchange.before:
            await self._send_server_message(message, exchange, token, emit)
        response = copy.deepcopy(exchange.response.body)
        response["id"] = body.get("id")
        self._check_redacted(response)
        return response

    async def _send_server_message(
        self, message: Message, exchange: Exchange, token: Any, emit: Emit
    ) -> None:
        body = copy.deepcopy(message.body)
        recorded_token = progress_token(exchange.request.body)
        params = body.get("params")
        if (
            token is not None
            and message.method == "notifications/progress"
            and isinstance(params, dict)
            and params.get("progressToken") == recorded_token
        ):
            # The client tracks progress by the token it chose this time.
            params["progressToken"] = token
        self._check_redacted(body)
        if message.kind != REQUEST:
            await emit(encode(body))
            return
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[id_key(body.get("id"))] = future
        await emit(encode(body))
        try:
            await asyncio.wait_for(future, ANSWER_TIMEOUT)
        except TimeoutError:
            self._answers.pop(id_key(body.get("id")), None)
            if self._warn is not None:
                self._warn(f"warning: no answer from the client to {message.method}; going on")

    def _unmatched(self, body: dict[str, Any]) -> dict[str, Any]:
        method = body.get("method")
        name = method if isinstance(method, str) else "?"
        target = target_of(body)
        miss = Unmatched(name, body.get("id"), target)
        self.unmatched.append(miss)
        if self._on_unmatched is not None:
            self._on_unmatched(miss)
        what = f"{name} ({target})" if target else name
        known = "with these params " if self.matcher.recorded_method(name) else ""
        message = f"replay: nothing was recorded for {what} {known}in {self.script.path}"
        return {
            "jsonrpc": "2.0",
            "id": body.get("id"),
            "error": {"code": UNMATCHED_CODE, "message": message, "data": {"method": name}},
        }

    def _check_redacted(self, body: dict[str, Any]) -> None:
        if self._warned_redacted or not contains_redacted(body):
            return
        self._warned_redacted = True
        if self._warn is not None:
            self._warn(
                "warning: the recording was redacted; values recorded as [REDACTED] "
                "are served as they are"
            )
