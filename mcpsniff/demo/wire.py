"""Newline-delimited JSON-RPC helpers shared by the demo client and server.

MCP's stdio transport carries one JSON message per line and nothing else on
stdout; both demo peers follow that strictly (unless a test asks the server to
misbehave), so the bytes mcpsniff records are exactly what a conforming peer
would send.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

import orjson

JSONRPC = "2.0"

#: Marker returned by :func:`decode` for bytes that are not JSON.
NOT_JSON = object()


def encode(message: Any) -> bytes:
    """One wire line: compact JSON (no embedded newlines) plus the terminating ``\\n``."""
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        # orjson refuses integers beyond 64 bits, which JSON allows (a huge
        # `add` result); the stdlib encoder writes them, still on one line.
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def decode(line: bytes) -> Any:
    """Parse one wire line; :data:`NOT_JSON` when it is not JSON at all."""
    # The stdlib parser, not orjson: orjson turns integers beyond 64 bits
    # into floats, and a peer must echo an id like 2**64 exactly. NaN and
    # Infinity are Python extensions, not JSON, so they stay errors.
    try:
        return json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return NOT_JSON


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def send(stream: IO[bytes], message: Any) -> None:
    """Write one message and flush, so the peer sees it now and not at exit."""
    stream.write(encode(message))
    stream.flush()


def log(prefix: str, text: str) -> None:
    """A diagnostic line on stderr: the only place a stdio peer may write free text."""
    sys.stderr.write(f"{prefix}: {text}\n")
    sys.stderr.flush()


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error object (``data`` only when there is some)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error


def excerpt(raw: bytes, limit: int = 60) -> str:
    """A short printable rendering of a wire line for log messages."""
    text = raw.decode("utf-8", errors="backslashreplace").rstrip("\r\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"
