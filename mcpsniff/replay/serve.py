"""The replay server: answers client messages from a recording, whatever the transport.

A transport hands each incoming frame to ``ReplayServer.handle`` with an
``emit`` callback; the server emits the recorded server messages that stood
before the matching response, then the response itself with the client's id.
Server-initiated requests are emitted with their recorded ids, and the
replay waits for the client's answer (which arrives through another
``handle`` call) before it goes on, as the recorded server did.

What the recording cannot answer is said plainly: a request with no
recorded counterpart gets an error naming the nearest recorded request and
the JSON paths that differ; a request that the recorded client cancelled
gets no answer until this client cancels it too (or, after a while, an error
saying it was cancelled in the recording).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.replay import safejson
from mcpsniff.replay.compare import PathPart, format_path
from mcpsniff.replay.difftext import difference_lines, show_value
from mcpsniff.replay.matcher import AUTO, Match, Matcher
from mcpsniff.replay.plan import Plan, RecordedExchange, build_plan, progress_token
from mcpsniff.replay.script import (
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    Message,
    Script,
    contains_redacted,
    id_key,
)
from mcpsniff.terminal.safe_output import escape_surrogates

Emit = Callable[[bytes], Awaitable[None]]
#: JSON-RPC "method not found": the replay has no answer for the request.
UNMATCHED_CODE = -32601
#: An implementation-defined server error (JSON-RPC 2.0 §5.1, -32000 to -32099): the
#: recorded request was never answered, so there is no recorded answer to give.
NOT_ANSWERED_CODE = -32000
#: The largest frame answered, on either transport (a stdio line, an HTTP body).
FRAME_LIMIT = 64 << 20
#: How long a server-initiated request waits for the client's answer.
ANSWER_TIMEOUT = 30.0
#: How long a request that was cancelled in the recording waits for this client's cancel.
CANCEL_WAIT = 30.0


@dataclass(slots=True)
class Unmatched:
    """A client request the recording had no answer for."""

    method: str
    id: Any
    target: str | None
    #: The explanation (first line: what was asked; then the nearest candidate and diffs).
    lines: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Handled:
    """What one incoming frame turned into, for transports that shape the reply (HTTP)."""

    #: The recorded exchanges that answered requests in the frame.
    exchanges: list[RecordedExchange] = field(default_factory=list)
    #: Whether the frame held a request (so a response was emitted).
    answered: bool = False


def encode(body: Any) -> bytes:
    """A message as compact JSON, as most SDKs write it.

    A lone surrogate (a client's id ``"\\ud800"``, or one in the recording)
    is written as its escape: raw, it cannot be encoded and the reply was lost.
    """
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return escape_surrogates(text).encode("utf-8")


def target_of(body: dict[str, Any]) -> str | None:
    """The tool, prompt or resource a request acts on, for messages people read."""
    params = body.get("params")
    if not isinstance(params, dict):
        return None
    for key in ("name", "uri"):
        if isinstance(params.get(key), str):
            return params[key]
    ref = params.get("ref")
    if isinstance(ref, dict):
        for key in ("name", "uri"):
            if isinstance(ref.get(key), str):
                return ref[key]
    return None


def parse_error(reason: str) -> dict[str, Any]:
    """JSON-RPC 2.0 §5.1's answer to a frame that is not JSON: -32700, id null."""
    return _error(None, -32700, f"Parse error: {reason}")


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class ReplayServer:
    """Serves one recording to one client connection (or one HTTP client)."""

    def __init__(
        self,
        script: Script,
        mode: str = AUTO,
        warn: Callable[[str], None] | None = None,
        on_unmatched: Callable[[Unmatched], None] | None = None,
        allow: list[tuple[PathPart, ...]] | None = None,
    ) -> None:
        self.script = script
        self.plan: Plan = build_plan(script)
        self.matcher = Matcher(self.plan.exchanges, mode, allow)
        self.unmatched: list[Unmatched] = []
        self._warn = warn
        self._warned_redacted = False
        self._on_unmatched = on_unmatched
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        #: Requests held because the recorded client cancelled them: id key -> cancel.
        self._held: dict[str, asyncio.Future[None]] = {}
        self._supported = _supported_versions(script)

    def peek(self, raw: bytes) -> RecordedExchange | None:
        """The exchange the first request in ``raw`` would get, without taking it.

        The HTTP transport needs it before answering: the recorded exchange
        decides between a JSON body and an SSE stream, and the status.
        """
        try:
            value = safejson.loads(raw, finite=True)
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
            value = safejson.loads(raw, finite=True)
        except ValueError as exc:
            # JSON-RPC 2.0 §5.1: "Invalid JSON was received by the server", id null.
            reason = str(exc) if "nested" in str(exc) or "range" in str(exc) else "invalid JSON"
            await emit(encode(parse_error(reason)))
            handled.answered = True
            return handled
        batch = isinstance(value, list)
        if batch and not value:
            # JSON-RPC 2.0 §6: an empty array gets a single Invalid Request error.
            await emit(encode(_error(None, -32600, "Invalid Request: empty batch")))
            handled.answered = True
            return handled
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
            return _error(None, -32600, "Invalid Request")
        kind = Message(0, None, "c2s", body).kind
        if kind == RESPONSE:
            future = self._answers.pop(id_key(body.get("id")), None)
            if future is not None and not future.done():
                future.set_result(body)
            return None
        if kind == NOTIFICATION:
            self._notified(body)
            return None
        match = self.matcher.take(body)
        exchange = match.exchange
        if exchange is None:
            return self._unmatched(body, match)
        handled.exchanges.append(exchange)
        self._note_differences(body, match)
        token = progress_token(body)
        for message in exchange.before:
            await self._send_server_message(message, exchange, token, emit)
        if exchange.response is None:
            return await self._not_answered(body, exchange)
        response = copy.deepcopy(exchange.response.body)
        response["id"] = body.get("id")
        if body.get("method") == "initialize":
            self._negotiate(body, response)
        self._check_redacted(response)
        return response

    def _notified(self, body: dict[str, Any]) -> None:
        """A client notification; a cancel releases a request held for it."""
        params = body.get("params")
        if body.get("method") == "notifications/cancelled" and isinstance(params, dict):
            held = self._held.pop(id_key(params.get("requestId")), None)
            if held is not None and not held.done():
                held.set_result(None)

    async def _not_answered(
        self, body: dict[str, Any], exchange: RecordedExchange
    ) -> dict[str, Any] | None:
        """Replay a request the recorded server never answered: hold it until cancelled."""
        key = id_key(body.get("id"))
        held: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._held[key] = held
        try:
            await asyncio.wait_for(asyncio.shield(held), CANCEL_WAIT)
        except TimeoutError:
            self._held.pop(key, None)
        else:
            # MCP cancellation: "receivers ... SHOULD NOT send a response for the
            # cancelled request" (basic/utilities/cancellation).
            return None
        method = exchange.method
        if exchange.cancelled is not None:
            text = (
                f"replay: {method} was cancelled by the client in the recording "
                f"(notifications/cancelled at trace seq {exchange.cancelled.frame}) "
                "and never answered, so there is no answer to replay"
            )
        else:
            text = f"replay: the recorded server never answered this {method}"
        self._say(f"warning: {text}")
        return _error(body.get("id"), NOT_ANSWERED_CODE, text, {"method": method})

    def _note_differences(self, body: dict[str, Any], match: Match) -> None:
        """Warn about the ways the served request differs from the one asked."""
        if not match.differences:
            return
        method = body.get("method")
        if method in ("initialize", "server/discover"):
            paths = [d for d in match.differences if d.path[:2] == ("params", "capabilities")]
            if paths:
                where = ", ".join(format_path(d.path) for d in paths)
                self._say(
                    f"warning: {method}: this client's capabilities differ from the recorded "
                    f"client's ({where}); the recorded answer may not suit it"
                )
            return
        what = f"{method} ({target_of(body)})" if target_of(body) else str(method)
        served = match.exchange.request.id if match.exchange is not None else None
        head = (
            f"warning: {what}: served the recorded request id {show_value(served)}, "
            "which differs only where --allow lets it:"
        )
        self._say("\n".join([head, *difference_lines(match.differences, "recorded", "asked")]))

    def _negotiate(self, body: dict[str, Any], response: dict[str, Any]) -> None:
        """Answer the version the client asked for, if the recorded server supported it.

        MCP lifecycle: "If the server supports the requested protocol version,
        it MUST respond with the same version."
        """
        params = body.get("params")
        result = response.get("result")
        if not isinstance(params, dict) or not isinstance(result, dict):
            return
        asked = params.get("protocolVersion")
        recorded = result.get("protocolVersion")
        if not isinstance(asked, str) or asked == recorded:
            return
        if asked in self._supported:
            result["protocolVersion"] = asked
            self._say(
                f"warning: initialize: answering protocol version {asked}, which the client "
                f"asked for and the recorded server supported (the recording negotiated "
                f"{recorded})"
            )
        else:
            self._say(
                f"warning: initialize: the client asked for protocol version {asked}; the "
                f"recorded server answered {recorded} and is not known to support {asked}"
            )

    async def _send_server_message(
        self, message: Message, exchange: RecordedExchange, token: Any, emit: Emit
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
            self._say(f"warning: no answer from the client to {message.method}; going on")

    def _unmatched(self, body: dict[str, Any], match: Match) -> dict[str, Any]:
        method = body.get("method")
        name = method if isinstance(method, str) else "?"
        target = target_of(body)
        what = f"{name} ({target})" if target else name
        lines = [f"replay: nothing was recorded for {what} in {self.script.path}"]
        data: dict[str, Any] = {"method": name}
        nearest = match.nearest
        if nearest is not None:
            near_target = target_of(nearest.request.body)
            near = f"{nearest.method} ({near_target})" if near_target else nearest.method
            where = (
                f"nearest recorded request: {near}, request id "
                f"{show_value(nearest.request.id)} at trace seq {nearest.request.frame}"
            )
            if not match.differences:
                # Asked exactly as recorded, but that answer went out already.
                lines.append(f"{where}, asked the same way; its recorded answer was already served")
            else:
                used = ", already served" if self.matcher.used(nearest) else ""
                lines.append(f"{where}{used}; it differs at:")
                lines.extend(difference_lines(match.differences, "recorded", "asked"))
            data["nearest"] = {
                "method": nearest.method,
                "target": near_target,
                "id": nearest.request.id,
                "seq": nearest.request.frame,
                "differences": [
                    {"path": format_path(d.path), "recorded": d.recorded, "asked": d.live}
                    for d in match.differences
                ],
            }
        else:
            lines.append("the recording holds no request of this method")
        miss = Unmatched(name, body.get("id"), target, lines)
        self.unmatched.append(miss)
        if self._on_unmatched is not None:
            self._on_unmatched(miss)
        return _error(body.get("id"), UNMATCHED_CODE, "\n".join(lines), data)

    def _say(self, text: str) -> None:
        if self._warn is not None:
            self._warn(text)

    def _check_redacted(self, body: dict[str, Any]) -> None:
        if self._warned_redacted or not contains_redacted(body):
            return
        self._warned_redacted = True
        self._say(
            "warning: the recording was redacted; values recorded as [REDACTED] "
            "are served as they are"
        )


def _supported_versions(script: Script) -> set[str]:
    """Protocol versions the recorded server showed it supports.

    Those it answered ``initialize`` with, those ``server/discover`` listed, and
    those an unsupported-version error named (``error.data.supported``).
    """
    versions: set[str] = set()
    for message in script.messages("s2c"):
        result = message.body.get("result")
        error = message.body.get("error")
        if isinstance(result, dict):
            if isinstance(result.get("protocolVersion"), str):
                versions.add(result["protocolVersion"])
            listed = result.get("supportedVersions")
        elif isinstance(error, dict) and isinstance(error.get("data"), dict):
            listed = error["data"].get("supported")
        else:
            listed = None
        if isinstance(listed, list):
            versions.update(v for v in listed if isinstance(v, str))
    return versions
