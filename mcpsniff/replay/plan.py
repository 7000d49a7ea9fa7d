"""What the recorded server did for each client request, ready to be served again.

The recording is a single interleaved stream. Replay needs it cut into
*exchanges*: one client request, its recorded response, and the server
messages (notifications, server-initiated requests) that stood before that
response. A progress notification belongs to the request whose progress
token it carries; any other server message belongs to the next response the
server sent, which is where a client saw it; server messages after the last
response are sent after it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.model import C2S, S2C
from mcpsniff.replay.compare import match_key
from mcpsniff.replay.script import NOTIFICATION, REQUEST, RESPONSE, Message, Script, id_key


@dataclass(slots=True)
class Exchange:
    """One recorded client request and everything the server sent for it."""

    request: Message
    response: Message | None = None
    #: Server messages sent before the response, in recorded order.
    before: list[Message] = field(default_factory=list)
    #: Server messages sent after the response (the recording's tail).
    after: list[Message] = field(default_factory=list)
    used: bool = False

    @property
    def key(self) -> str:
        return match_key(self.request.body)

    @property
    def method(self) -> str:
        return self.request.method or "?"


@dataclass(slots=True)
class Plan:
    """The exchanges of a recording in the order the client sent the requests."""

    exchanges: list[Exchange]
    #: Recorded client answers to server-initiated requests: server request id key -> answer.
    client_answers: dict[str, Message]


def progress_token(body: dict[str, Any]) -> Any:
    """The progress token a request asked for, or None."""
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


def build_plan(script: Script) -> Plan:
    """Cut the recording into exchanges (see the module docstring)."""
    exchanges: list[Exchange] = []
    open_by_id: dict[str, Exchange] = {}
    #: HTTP exchange number -> the request POSTed in it, for error responses with a null id.
    open_by_http: dict[int, Exchange] = {}
    by_token: dict[str, Exchange] = {}
    answers: dict[str, Message] = {}
    waiting: list[Message] = []
    last: Exchange | None = None
    for message in script.messages():
        kind = message.kind
        if message.direction == C2S:
            if kind == REQUEST:
                exchange = Exchange(message)
                exchanges.append(exchange)
                open_by_id[id_key(message.id)] = exchange
                if message.exchange is not None and message.index is None:
                    open_by_http[message.exchange] = exchange
                token = progress_token(message.body)
                if token is not None:
                    by_token[json.dumps(token)] = exchange
            elif kind == RESPONSE:
                answers.setdefault(id_key(message.id), message)
            continue
        if message.direction != S2C:
            continue
        if kind == RESPONSE:
            exchange = open_by_id.pop(id_key(message.id), None)
            if exchange is None and message.id is None and message.exchange is not None:
                # An HTTP error answer (400 "not initialized") with a null id: it answers
                # the request POSTed in the same exchange.
                exchange = open_by_http.get(message.exchange)
                if exchange is not None:
                    open_by_id.pop(id_key(exchange.request.id), None)
            if exchange is None:
                continue  # an orphan response answers nothing a client can ask again
            exchange.response = message
            # Keep the recorded order between progress (owned) and other server messages.
            exchange.before = sorted(exchange.before + waiting, key=_position)
            waiting = []
            last = exchange
            continue
        owner = None
        if kind == NOTIFICATION and message.method == "notifications/progress":
            params = message.body.get("params")
            if isinstance(params, dict) and "progressToken" in params:
                owner = by_token.get(json.dumps(params["progressToken"]))
        if owner is not None and owner.response is None:
            owner.before.append(message)
        else:
            waiting.append(message)
    if waiting and last is not None:
        last.after.extend(waiting)
    return Plan(exchanges, answers)


def _position(message: Message) -> tuple[int, int]:
    """Where a message stood in the recording: frame seq, then batch index."""
    return message.frame, -1 if message.index is None else message.index
