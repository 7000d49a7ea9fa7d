"""A recorded session as replay needs it: the JSON-RPC messages of each frame, in order.

Loading is the only place that reads the trace. Everything the replay
commands reject as bad input (no such session, no server side, not a trace)
is raised here as ``ReplayError`` with a one-line reason, so the command
line can turn it into exit status 2 without a traceback.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord
from mcpsniff.core.redact import MARK as REDACTED
from mcpsniff.replay import safejson
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
#: Events that describe an HTTP exchange; frames point at them by exchange number.
_HTTP_EVENTS = ("http-request", "http-response")


class ReplayError(Exception):
    """The input cannot be replayed; the message is one line for the user."""


@dataclass(slots=True)
class Message:
    """One JSON-RPC message of the recording (a batch element counts as one)."""

    frame: int
    index: int | None
    direction: str
    body: dict[str, Any]
    #: The HTTP exchange the message travelled in, if it was recorded over HTTP.
    exchange: int | None = None

    @property
    def kind(self) -> str:
        if "method" in self.body:
            return REQUEST if "id" in self.body else NOTIFICATION
        return RESPONSE

    @property
    def method(self) -> str | None:
        method = self.body.get("method")
        return method if isinstance(method, str) else None

    @property
    def id(self) -> Any:
        return self.body.get("id")


@dataclass(slots=True)
class Frame:
    """One recorded frame that held JSON-RPC: a single message or a batch."""

    seq: int
    direction: str
    transport: str
    messages: list[Message]
    batch: bool
    meta: dict[str, Any] = field(default_factory=dict)
    #: The bytes as recorded (a stdio line keeps its newline).
    raw: bytes = b""
    #: The trace session the frame belongs to.
    session: str = ""

    @property
    def exchange(self) -> int | None:
        """The HTTP exchange the frame travelled in, when it was recorded over HTTP."""
        value = self.meta.get("exchange")
        return value if isinstance(value, int) else None


@dataclass(slots=True)
class Script:
    """The frames of the selected session(s), plus the HTTP exchanges' metadata."""

    path: str
    sessions: list[str]
    frames: list[Frame]
    #: Exchange number -> the recorded ``http-response`` event data (status, headers).
    http_responses: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: Exchange number -> the recorded ``http-request`` event data (method, headers).
    http_requests: dict[int, dict[str, Any]] = field(default_factory=dict)
    redacted: bool = False
    transport: str = "stdio"

    def messages(self, direction: str | None = None) -> list[Message]:
        """Every message, optionally only one direction's, in recorded order."""
        return [
            m
            for f in self.frames
            if direction is None or f.direction == direction
            for m in f.messages
        ]

    def responses_by_request(self) -> dict[tuple[str, str], Message]:
        """Map (direction of the request, id key) -> its response, first answer wins.

        Ids are reused by nothing sane, but a broken peer may: the first
        response after a request is the one that answered it.
        """
        out: dict[tuple[str, str], Message] = {}
        for message in self.messages():
            if message.kind == RESPONSE:
                asked = C2S if message.direction == S2C else S2C
                out.setdefault((asked, id_key(message.id)), message)
        return out


#: Sessions an error message lists (the rest are counted), and characters per name.
SESSIONS_LISTED = 20
NAME_LIMIT = 80


def id_key(value: Any) -> str:
    """A hashable key for a JSON-RPC id that keeps 1 and "1" apart."""
    return json.dumps(value, sort_keys=True)


def load_script(
    path: str | os.PathLike[str],
    session: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> Script:
    """Read ``path`` and keep the session to replay (all sessions when ``session`` is None).

    An HTTP capture splits one client's run into several trace sessions (one
    per ``Mcp-Session-Id``, plus the exchanges before one was assigned), so
    the default replays them all, in trace order.
    """
    try:
        reader = TraceReader(path)
    except TraceError as exc:
        raise ReplayError(str(exc)) from None
    frames: list[FrameRecord] = []
    responses: dict[int, dict[str, Any]] = {}
    requests: dict[int, dict[str, Any]] = {}
    with reader:
        try:
            for record in reader.inputs():
                if isinstance(record, FrameRecord):
                    frames.append(record)
                elif isinstance(record, EventRecord) and record.event in _HTTP_EVENTS:
                    number = record.data.get("exchange")
                    if isinstance(number, int):
                        kept = responses if record.event == "http-response" else requests
                        kept[number] = record.data
        except TraceError as exc:
            raise ReplayError(str(exc)) from None
        except OSError as exc:
            raise ReplayError(f"{path}: read failed: {exc.strerror or exc}") from None
    if reader.torn is not None and warn is not None:
        warn(f"warning: {path}: {reader.torn.describe()}")
    names = list(dict.fromkeys(f.session for f in frames))
    if session is not None:
        if session not in names:
            raise ReplayError(
                f"{path}: no session {terminal_safe(repr(_cut(session)))} in this trace "
                f"(sessions: {describe_sessions(frames)})"
            )
        frames = [f for f in frames if f.session == session]
        names = [session]
    if not frames:
        raise ReplayError(f"{path}: the trace holds no frames: nothing to replay")
    parsed = [p for p in (_parse_frame(f) for f in frames) if p is not None]
    if not any(f.direction == S2C for f in parsed):
        raise ReplayError(
            f"{path}: the trace has no server side (no server-to-client messages): "
            "nothing to replay"
        )
    if not any(f.direction == C2S for f in parsed):
        raise ReplayError(f"{path}: the trace has no client side: nothing to replay")
    meta = reader.header.get("meta") or {}
    return Script(
        path=str(path),
        sessions=names,
        frames=parsed,
        http_responses=responses,
        http_requests=requests,
        redacted=bool(meta.get("redacted")),
        transport=frames[0].transport,
    )


def _parse_frame(record: FrameRecord) -> Frame | None:
    """The JSON-RPC content of a frame, or None for frames that hold none (stdout noise)."""
    try:
        value = safejson.loads(record.raw)
    except ValueError:
        return None
    batch = isinstance(value, list)
    items = value if batch else [value]
    exchange = (record.meta or {}).get("exchange")
    messages = [
        Message(
            record.seq,
            i if batch else None,
            record.direction,
            item,
            exchange if isinstance(exchange, int) else None,
        )
        for i, item in enumerate(items)
        if isinstance(item, dict)
    ]
    if not messages and not batch:
        return None
    return Frame(
        seq=record.seq,
        direction=record.direction,
        transport=record.transport,
        messages=messages,
        batch=batch,
        meta=dict(record.meta or {}),
        raw=record.raw,
        session=record.session,
    )


def describe_sessions(frames: list[FrameRecord]) -> str:
    """Each session of a trace with its client and message count, for the user to pick from."""
    if not frames:
        return "none"
    counts: Counter[str] = Counter()
    clients: dict[str, str] = {}
    for record in frames:
        parsed = _parse_frame(record)
        counts[record.session] += len(parsed.messages) if parsed is not None else 0
        if parsed is not None and record.session not in clients and record.direction == C2S:
            found = _client_of(parsed)
            if found:
                clients[record.session] = found
    parts = []
    for name, count in list(counts.items())[:SESSIONS_LISTED]:
        client = clients.get(name, "client unknown")
        parts.append(f"{_cut(name)} ({_cut(client)}, {count} message(s))")
    if len(counts) > SESSIONS_LISTED:
        # A hostile trace may hold 200,000 sessions: one error line, not megabytes.
        parts.append(f"and {len(counts) - SESSIONS_LISTED} more")
    return terminal_safe("; ".join(parts))


def _cut(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` cut to ``limit`` characters: a session key is the peer's Mcp-Session-Id."""
    return text if len(text) <= limit else text[:limit] + "…"


def _client_of(frame: Frame) -> str | None:
    """``name version`` of the client a request frame names (initialize or ``_meta``)."""
    for message in frame.messages:
        params = message.body.get("params")
        if not isinstance(params, dict):
            continue
        meta = params.get("_meta")
        info = params.get("clientInfo")
        if info is None and isinstance(meta, dict):
            info = meta.get("io.modelcontextprotocol/clientInfo")
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            version = info.get("version")
            return info["name"] + (f" {version}" if isinstance(version, str) else "")
    return None


def contains_redacted(value: Any) -> bool:
    """Whether a recorded value holds a redaction placeholder anywhere."""
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, dict):
        return any(contains_redacted(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_redacted(v) for v in value)
    return False
