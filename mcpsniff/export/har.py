"""HTTP exchanges of a trace as HAR 1.2 entries (W3C Web Performance WG, "HTTP Archive 1.2").

An exchange is what ``mcpsniff http`` (or the mitmproxy addon) recorded as one
HTTP request and its response: the ``http-request``, ``http-response`` and
``http-end`` events with the same ``exchange`` number, the frames of its
bodies, and for an event stream the ``sse-event`` events. The response body of
an event stream is rebuilt from those events as the client read it
(``id:``, ``event:`` and ``data:`` fields, one blank line after each event),
so that Chrome DevTools and other HAR viewers show the JSON-RPC messages in it.

:class:`HarBuilder` is pure and streams: it keeps only the exchanges still
open, and hands out each entry when its exchange ends. Bodies are bounded
(``MAX_BODY``); a cut is said in the entry's ``comment``.
"""

from __future__ import annotations

import base64
import datetime
import http
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mcpsniff import __version__
from mcpsniff.core.model import EventRecord, FrameRecord, Record

#: Body bytes copied into one entry, request or response.
MAX_BODY = 16 << 20
#: Exchanges open at once; beyond it the oldest is written as it stands.
MAX_OPEN = 10_000
#: Body bytes held for all open exchanges together; beyond it the oldest is written.
MAX_HELD = 256 << 20


@dataclass(slots=True)
class _SseEvent:
    index: int
    event_id: str | None = None
    name: str | None = None
    data: bytes | None = None


@dataclass(slots=True)
class _Exchange:
    number: int
    session: str
    start: float
    method: str = "GET"
    path: str = "/"
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    request_body: bytearray = field(default_factory=bytearray)
    response_t: float | None = None
    end_t: float | None = None
    status: int = 0
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytearray = field(default_factory=bytearray)
    sse: dict[int, _SseEvent] = field(default_factory=dict)
    outcome: str | None = None
    body_bytes: int | None = None
    error: str | None = None
    cut: bool = False


class HarBuilder:
    """Feed trace records in order; :meth:`take` returns finished HAR entries."""

    def __init__(self, upstream: str | None = None) -> None:
        self.base = _base_url(upstream)
        self._open: dict[int, _Exchange] = {}
        self._done: list[dict[str, Any]] = []
        #: Sessions seen per transport, to refuse or report stdio sessions.
        self.stdio_sessions: set[str] = set()
        self.http_sessions: set[str] = set()
        self.entries = 0
        self._held = 0

    def feed(self, record: Record) -> None:
        """Take one trace record."""
        if isinstance(record, FrameRecord):
            self._frame(record)
        elif isinstance(record, EventRecord):
            self._event(record)

    def take(self) -> list[dict[str, Any]]:
        """Entries of the exchanges that ended since the last call."""
        done, self._done = self._done, []
        return done

    def finish(self) -> list[dict[str, Any]]:
        """The trace ended: exchanges still open are written as they stand."""
        for number in list(self._open):
            self._close(number)
        return self.take()

    # ------------------------------------------------------------------ records

    def _frame(self, frame: FrameRecord) -> None:
        if frame.transport == "stdio":
            self.stdio_sessions.add(frame.session)
            return
        meta = frame.meta if isinstance(frame.meta, dict) else {}
        number = meta.get("exchange")
        exchange = self._open.get(number) if isinstance(number, int) else None
        if exchange is None:
            return
        if frame.direction == "c2s":
            self._append(exchange, exchange.request_body, frame.raw)
            return
        index = meta.get("sse_index")
        if isinstance(index, int):
            event = exchange.sse.setdefault(index, _SseEvent(index))
            self._held -= len(event.data or b"")
            event.data = frame.raw[:MAX_BODY]
            self._hold(len(event.data))
            if isinstance(meta.get("sse_id"), str):
                event.event_id = meta["sse_id"]
        else:
            self._append(exchange, exchange.response_body, frame.raw)

    def _append(self, exchange: _Exchange, body: bytearray, raw: bytes) -> None:
        room = MAX_BODY - len(body)
        if len(raw) > room:
            exchange.cut = True
        kept = raw[: max(room, 0)]
        body += kept
        self._hold(len(kept))

    def _hold(self, size: int) -> None:
        """Count body bytes held; past ``MAX_HELD`` write the oldest open exchanges out."""
        self._held += size
        while self._held > MAX_HELD and len(self._open) > 1:
            self._close(next(iter(self._open)))

    def _event(self, record: EventRecord) -> None:
        data = record.data if isinstance(record.data, dict) else {}
        if record.event == "session-start":
            if data.get("transport") == "stdio":
                self.stdio_sessions.add(record.session)
            return
        number = data.get("exchange")
        if not isinstance(number, int) or isinstance(number, bool):
            return
        if record.event == "http-request":
            if number in self._open:
                self._close(number)  # a new capture appended to the trace reuses numbers
            self.http_sessions.add(record.session)
            exchange = _Exchange(number, record.session, record.t)
            exchange.method = _text(data.get("method"), "GET")
            exchange.path = _text(data.get("path"), "/")
            exchange.request_headers = _headers(data.get("headers"))
            self._open[number] = exchange
            if len(self._open) > MAX_OPEN:
                self._close(next(iter(self._open)))
            return
        exchange = self._open.get(number)
        if exchange is None:
            return
        if record.event == "http-response":
            exchange.response_t = record.t
            status = data.get("status")
            exchange.status = status if isinstance(status, int) else 0
            exchange.response_headers = _headers(data.get("headers"))
        elif record.event == "sse-event":
            index = data.get("index")
            if isinstance(index, int):
                event = exchange.sse.setdefault(index, _SseEvent(index))
                if isinstance(data.get("id"), str):
                    event.event_id = data["id"]
                if isinstance(data.get("event"), str):
                    event.name = data["event"]
        elif record.event == "upstream-unreachable":
            exchange.error = f"upstream unreachable: {_text(data.get('error'), '')}"
        elif record.event == "http-end":
            exchange.end_t = record.t
            exchange.outcome = _text(data.get("outcome"), "")
            body_bytes = data.get("body_bytes")
            exchange.body_bytes = body_bytes if isinstance(body_bytes, int) else None
            self._close(number)

    # ------------------------------------------------------------------ entries

    def _close(self, number: int) -> None:
        exchange = self._open.pop(number, None)
        if exchange is not None:
            self._held -= len(exchange.request_body) + len(exchange.response_body)
            self._held -= sum(len(e.data or b"") for e in exchange.sse.values())
            self._done.append(self._entry(exchange))
            self.entries += 1

    def _entry(self, ex: _Exchange) -> dict[str, Any]:
        response_t = ex.response_t if ex.response_t is not None else ex.end_t or ex.start
        end_t = ex.end_t if ex.end_t is not None else response_t
        # HAR 1.2 "timings": send, wait and receive are required and non-negative;
        # the capture knows when the request went out, the head came back, and the
        # body ended. "time" is their sum.
        wait = max(0.0, (response_t - ex.start) * 1000)
        receive = max(0.0, (end_t - response_t) * 1000)
        body, body_size = self._response_body(ex)
        content_type = _header(ex.response_headers, "content-type") or ""
        content: dict[str, Any] = {"size": body_size, "mimeType": content_type}
        content.update(_body_text(body))
        request: dict[str, Any] = {
            "method": ex.method,
            "url": self._url(ex),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": n, "value": v} for n, v in ex.request_headers],
            "queryString": [{"name": n, "value": v} for n, v in _query(ex.path)],
            "headersSize": -1,
            "bodySize": len(ex.request_body),
        }
        if ex.request_body or ex.method in ("POST", "PUT", "PATCH"):
            post: dict[str, Any] = {
                "mimeType": _header(ex.request_headers, "content-type") or "",
            }
            post.update(_body_text(bytes(ex.request_body)))
            if "encoding" in post:
                # postData has no "encoding" member in HAR 1.2: keep the bytes readable.
                post["text"] = bytes(ex.request_body).decode("utf-8", "replace")
                del post["encoding"]
            request["postData"] = post
        notes = [f"mcpsniff session {ex.session}, exchange {ex.number}"]
        if ex.outcome and ex.outcome != "complete":
            notes.append(f"outcome: {ex.outcome}")
        if ex.error:
            notes.append(ex.error)
        if ex.sse:
            notes.append("event-stream body rebuilt from the recorded events")
        if ex.cut:
            notes.append(f"body cut at {MAX_BODY} bytes")
        return {
            "startedDateTime": _iso(ex.start),
            "time": wait + receive,
            "request": request,
            "response": {
                "status": ex.status,
                "statusText": _reason(ex.status),
                "httpVersion": "HTTP/1.1",
                "cookies": [],
                "headers": [{"name": n, "value": v} for n, v in ex.response_headers],
                "content": content,
                "redirectURL": _header(ex.response_headers, "location") or "",
                "headersSize": -1,
                "bodySize": body_size,
            },
            "cache": {},
            "timings": {
                "blocked": -1,
                "dns": -1,
                "connect": -1,
                "send": 0,
                "wait": wait,
                "receive": receive,
                "ssl": -1,
            },
            "comment": "; ".join(notes),
        }

    def _response_body(self, ex: _Exchange) -> tuple[bytes, int]:
        if not ex.sse:
            body = bytes(ex.response_body)
            return body, ex.body_bytes if ex.body_bytes is not None else len(body)
        parts: list[bytes] = []
        size = 0
        for index in sorted(ex.sse):
            event = ex.sse[index]
            lines: list[bytes] = []
            if event.event_id is not None:
                lines.append(b"id: " + event.event_id.encode("utf-8", "replace"))
            if event.name is not None:
                lines.append(b"event: " + event.name.encode("utf-8", "replace"))
            # An event's data may span lines: one "data:" field per line (WHATWG HTML §9.2.6).
            for line in (event.data or b"").split(b"\n"):
                lines.append(b"data: " + line.rstrip(b"\r"))
            chunk = b"\n".join(lines) + b"\n\n"
            if size + len(chunk) > MAX_BODY:
                ex.cut = True
                break
            parts.append(chunk)
            size += len(chunk)
        body = b"".join(parts)
        return body, ex.body_bytes if ex.body_bytes is not None else len(body)

    def _url(self, ex: _Exchange) -> str:
        path = ex.path if ex.path.startswith("/") else "/" + ex.path
        if self.base is not None:
            return self.base + path
        host = _header(ex.request_headers, "host") or "localhost"
        return f"http://{host}{path}"


def _base_url(upstream: str | None) -> str | None:
    """``scheme://host[:port]`` of the recorded upstream, or None."""
    if not isinstance(upstream, str):
        return None
    try:
        parts = urlsplit(upstream)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    netloc = parts.netloc.rsplit("@", 1)[-1]  # never userinfo (credentials) in a URL we write
    return f"{parts.scheme}://{netloc}"


def _headers(value: Any) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    if isinstance(value, list):
        for pair in value[:1000]:
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                headers.append((_text(pair[0], ""), _text(pair[1], "")))
    return headers


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _query(path: str) -> list[tuple[str, str]]:
    _, _, query = path.partition("?")
    try:
        return parse_qsl(query, keep_blank_values=True)
    except ValueError:
        return []


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _body_text(body: bytes) -> dict[str, Any]:
    """HAR ``content`` text: the body as text when UTF-8, else base64 with ``encoding``."""
    if not body:
        return {"text": ""}
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text": base64.b64encode(body).decode("ascii"), "encoding": "base64"}


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _iso(t: float) -> str:
    """ISO 8601 with milliseconds and a zone, as HAR's ``startedDateTime`` wants."""
    moment = datetime.datetime.fromtimestamp(t, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def har_document_head(comment: str = "") -> dict[str, Any]:
    """The ``log`` object without its entries (they are streamed in after it)."""
    return {
        "version": "1.2",
        "creator": {"name": "mcpsniff", "version": __version__},
        "pages": [],
        **({"comment": comment} if comment else {}),
    }


def har_entries(records: Iterable[Record], upstream: str | None) -> Iterable[dict[str, Any]]:
    """Every HAR entry of ``records`` (convenience for callers that need no counts)."""
    builder = HarBuilder(upstream)
    for record in records:
        builder.feed(record)
        yield from builder.take()
    yield from builder.finish()
