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
from mcpsniff.replay.pairing import Pairer, RequestRef, ref_of
from mcpsniff.replay.script import NOTIFICATION, REQUEST, RESPONSE, Message, Script, id_key


@dataclass(slots=True)
class RecordedExchange:
    """One recorded client request and everything the server sent for it."""

    request: Message
    response: Message | None = None
    #: Server messages sent before the response, in recorded order.
    before: list[Message] = field(default_factory=list)
    #: Server messages sent after the response (the recording's tail).
    after: list[Message] = field(default_factory=list)
    #: The client's ``notifications/cancelled`` for this request, if it sent one unanswered.
    cancelled: Message | None = None

    @property
    def key(self) -> str:
        return match_key(self.request.body)

    @property
    def method(self) -> str:
        return self.request.method or "?"


@dataclass(slots=True)
class Plan:
    """The exchanges of a recording in the order the client sent the requests."""

    exchanges: list[RecordedExchange]
    #: Recorded client answers to server-initiated requests: server request id key -> answer.
    client_answers: dict[str, Message]


def progress_token(body: dict[str, Any]) -> Any:
    """The progress token a request asked for, or None."""
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


def build_plan(script: Script) -> Plan:
    """Cut the recording into exchanges (see the module docstring).

    Requests and responses are paired per session, as ``pairing`` does, so
    that sessions counting ids from the same start do not answer each other.
    """
    exchanges: list[RecordedExchange] = []
    by_ref: dict[RequestRef, RecordedExchange] = {}
    pairers: dict[str, Pairer] = {}
    #: (session, id key) -> the exchange still open, for notifications/cancelled.
    open_by_id: dict[tuple[str, str], RecordedExchange] = {}
    by_token: dict[tuple[str, str], RecordedExchange] = {}
    answers: dict[str, Message] = {}
    waiting: list[Message] = []
    last: RecordedExchange | None = None
    for frame in script.frames:
        pairer = pairers.setdefault(frame.session, Pairer())
        for message in frame.messages:
            kind = message.kind
            if frame.direction == C2S:
                _client_message(message, frame.session, pairer, exchanges, by_ref, open_by_id)
                if kind == REQUEST:
                    token = progress_token(message.body)
                    if token is not None:
                        by_token[(frame.session, json.dumps(token))] = by_ref[ref_of(message)]
                elif kind == RESPONSE:
                    answers.setdefault(id_key(message.id), message)
                continue
            if frame.direction != S2C:
                continue
            if kind == RESPONSE:
                ref = pairer.answer(message.id, message.exchange)
                if ref is None:
                    continue  # an orphan response answers nothing a client can ask again
                exchange = by_ref[ref]
                open_by_id.pop((frame.session, id_key(exchange.request.id)), None)
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
                    key = (frame.session, json.dumps(params["progressToken"]))
                    owner = by_token.get(key)
            if owner is not None and owner.response is None:
                owner.before.append(message)
            else:
                waiting.append(message)
    if waiting and last is not None:
        last.after.extend(waiting)
    return Plan(exchanges, answers)


def _client_message(
    message: Message,
    session: str,
    pairer: Pairer,
    exchanges: list[RecordedExchange],
    by_ref: dict[RequestRef, RecordedExchange],
    open_by_id: dict[tuple[str, str], RecordedExchange],
) -> None:
    """Open an exchange for a client request; mark one cancelled by the client."""
    if message.kind == REQUEST:
        exchange = RecordedExchange(message)
        exchanges.append(exchange)
        by_ref[ref_of(message)] = exchange
        open_by_id[(session, id_key(message.id))] = exchange
        pairer.opened(message.id, ref_of(message), message.exchange)
    elif message.method == "notifications/cancelled":
        params = message.body.get("params")
        if isinstance(params, dict) and "requestId" in params:
            cancelled = open_by_id.get((session, id_key(params["requestId"])))
            if cancelled is not None and cancelled.cancelled is None:
                cancelled.cancelled = message


def _position(message: Message) -> tuple[int, int]:
    """Where a message stood in the recording: frame seq, then batch index."""
    return message.frame, -1 if message.index is None else message.index
