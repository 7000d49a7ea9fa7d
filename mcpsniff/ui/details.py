"""The detail pane of one message: its body, its raw bytes, its HTTP heads.

Read back from the trace file when asked for (the model keeps only where
each record starts), and bounded: a 100 MB frame is shown as its first
mebibyte of raw text, and its body is not parsed for display.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.error_layers import TOOL_ERROR, ErrorLayer, error_layer
from mcpsniff.core.jsontypes import any_leaf
from mcpsniff.core.model import ERROR, EventRecord, FrameRecord, Record
from mcpsniff.filter import message_body
from mcpsniff.ui.follow import file_size, read_record_at
from mcpsniff.ui.model import SessionModel

#: Raw bytes shown per message.
RAW_LIMIT = 1 << 20
#: Frames larger than this are not parsed for the pretty body.
BODY_LIMIT = 4 << 20
#: Nesting beyond this is shown as a placeholder (a hostile body may nest 100k deep).
DEPTH_LIMIT = 64


#: The largest batch frame kept parsed between two detail requests (see ``_BatchCache``).
BATCH_CACHE_LIMIT = 32 << 20


class _BatchCache:
    """The last batch frame read for the detail pane, parsed, with where it came from.

    Clicking through a batch's elements asks for the same frame again and
    again; read and parsed anew each time, a 10,000-element batch cost 63 ms
    per click. Only one frame is kept, and only up to ``BATCH_CACHE_LIMIT``
    bytes, so the memory it holds is bounded.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[str, int, int] | None = None
        self._record: Record | None = None
        #: Whether the kept frame's raw bytes are UTF-8 (checked once: 24 MB take 20 ms).
        self._utf8: bool | None = None

    def read(self, path: Path, offset: int, batch: bool) -> tuple[Record | None, bool | None]:
        """The record at ``offset``, and whether its raw bytes are UTF-8 (None: not known)."""
        key = (str(path), offset, file_size(path))
        with self._lock:
            if key == self._key:
                return self._record, self._utf8
        record = read_record_at(path, offset)
        if batch and isinstance(record, FrameRecord) and len(record.raw) <= BATCH_CACHE_LIMIT:
            utf8 = _is_utf8(record.raw)
            with self._lock:
                self._key, self._record, self._utf8 = key, record, utf8
            return record, utf8
        return record, None


_BATCHES = _BatchCache()


def message_detail(
    path: Path, session: SessionModel, n: int, raw_limit: int = RAW_LIMIT
) -> dict[str, Any] | None:
    """Everything the detail pane shows about row ``n`` of ``session``, or ``None``."""
    if not 0 <= n < len(session.rows):
        return None
    row = session.row(n)
    batch = row.get("index") is not None or bool(row.get("batch"))
    record, utf8 = _BATCHES.read(path, session.offsets[n], batch)
    return record_detail(record, session, n, raw_limit, utf8=utf8)


def record_detail(
    record: Record | None,
    session: SessionModel,
    n: int,
    raw_limit: int | None = RAW_LIMIT,
    body_limit: int = BODY_LIMIT,
    utf8: bool | None = None,
) -> dict[str, Any]:
    """The detail of row ``n`` of ``session``, whose record (read back) is ``record``.

    ``raw_limit`` None leaves the raw text out (the report stores a batch's
    once, with its first element). A frame is parsed at most once whatever
    the number of its rows: the parsed value stays on ``record``. ``utf8``:
    whether its raw bytes are UTF-8, when the caller knows.
    """
    row = session.row(n)
    out: dict[str, Any] = {"n": n}
    if isinstance(record, EventRecord):
        out["event"] = json_safe(record.data)
        return out
    if not isinstance(record, FrameRecord):
        out["missing"] = "the record could not be read back from the trace file"
        return out
    raw = record.raw
    if raw_limit is not None:
        out.update(raw_view(raw, raw_limit, utf8))
    if len(raw) <= body_limit:
        body = message_body(record, row.get("index"))
        if body is not None:
            out["body"] = exact_for_page(body)
        layer = _error_layer(row, body)
        if layer is not None:
            # The same label as ``show``'s timeline (core/error_layers.py).
            out["errorLayer"] = layer.label
            out["errorLayerTitle"] = layer.title
    else:
        out["bodyOmitted"] = f"the frame is {len(raw)} bytes; only its raw start is shown"
    if record.meta:
        out["meta"] = json_safe(record.meta)
    exchange = row.get("exchange")
    if isinstance(exchange, int) and exchange in session.exchanges:
        out["http"] = json_safe(session.exchanges[exchange])
    return out


def _error_layer(row: dict[str, Any], body: Any) -> ErrorLayer | None:
    """The layer of an error row (its exact code from the body), or of an isError tool result."""
    if row.get("isError"):
        return TOOL_ERROR
    if row.get("kind") != ERROR:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error_layer(error.get("code") if isinstance(error, dict) else None)


def raw_view(raw: bytes, limit: int = RAW_LIMIT, utf8: bool | None = None) -> dict[str, Any]:
    """The raw bytes as text (invalid UTF-8 shown as ``\\xNN``), bounded.

    ``utf8``: whether ``raw`` is UTF-8, when known (else it is checked).
    """
    shown = raw[:limit]
    return {
        "raw": shown.decode("utf-8", "backslashreplace"),
        "rawTruncated": len(raw) > limit,
        "size": len(raw),
        "utf8": _is_utf8(raw) if utf8 is None else utf8,
    }


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def exact_for_page(value: Any) -> Any:
    """``value`` itself when a browser reads it back exactly, else ``json_safe(value)``."""
    try:
        orjson.dumps(value)
    except TypeError:
        return json_safe(value)
    if _has_big_int(value):
        return json_safe(value)
    return value


def _has_big_int(value: Any) -> bool:
    """Whether an integer beyond 2**53 (which JavaScript would round) is inside ``value``."""
    return any_leaf(value, lambda item: type(item) is int and abs(item) > 2**53)


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as something every JSON encoder (and ``JSON.parse``) takes exactly.

    Integers beyond 2**53 become strings (JavaScript would round them), lone
    surrogates are replaced, non-finite floats become null, deep nesting is cut.
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, orjson.Fragment):
        return value  # JSON text already made safe (the report's rows and details)
    if depth >= DEPTH_LIMIT:
        return f"<nested deeper than {DEPTH_LIMIT} levels>"
    if isinstance(value, dict):
        return {json_safe(str(k)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    return json.dumps(repr(value))
