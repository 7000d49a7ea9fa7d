"""The bytes a fault puts on the wire: an answer in mcpsniff's name, or a damaged message.

Each corruption reproduces a mistake real servers make (the JR-PARSE causes
of docs/rules.md): a line cut short, a trailing comma, a byte that is not
UTF-8, a log line on stdout, a message written in pieces, a message
pretty-printed over several lines.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpsniff.core.catalog import VERSIONS
from mcpsniff.faults.engine import Injection
from mcpsniff.faults.spec import ERROR, TOOL_ERROR

#: The line ``corrupt banner`` writes before the message.
BANNER = b"mcpsniff: injected banner: server starting...\n"
#: JSON-RPC code of an UnsupportedProtocolVersionError (2026-07-28 schema).
UNSUPPORTED_VERSION = -32022
#: Where a 2026-07-28 request names its protocol version, in ``params._meta``.
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: How many pieces ``corrupt split`` writes a message in.
SPLIT_PIECES = 3
#: Pause between the pieces of ``corrupt split``, seconds: long enough that a
#: reader gets them in separate reads.
SPLIT_PAUSE = 0.02


def answer(injection: Injection) -> bytes:
    """The JSON-RPC message answering ``injection``'s request in mcpsniff's name (no newline)."""
    fault = injection.fault
    ident = injection.message.id
    reply: dict[str, Any]
    if fault.action == ERROR:
        error: dict[str, Any] = {"code": fault.code, "message": fault.message}
        if fault.code == UNSUPPORTED_VERSION:
            error["data"] = _versions_other_than(injection.message.value)
        reply = {"jsonrpc": "2.0", "id": ident, "error": error}
    elif fault.action == TOOL_ERROR:
        reply = {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {"content": [{"type": "text", "text": fault.message}], "isError": True},
        }
    else:
        raise ValueError(f"{fault.action} does not answer")
    return orjson.dumps(reply)


def _versions_other_than(request: Any) -> dict[str, Any]:
    """``data`` of an injected -32022: every version but the one the request asked for.

    2026-07-28 basic/versioning.mdx: the error lists "the versions it does
    support", so that the client can "select a mutually supported version ...
    and retry the request".
    """
    params = request.get("params") if isinstance(request, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    requested = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
    if requested is None and isinstance(params, dict):
        requested = params.get("protocolVersion")
    supported = [v for v in reversed(VERSIONS) if v != requested]
    data: dict[str, Any] = {"supported": supported}
    if isinstance(requested, str):
        data["requested"] = requested
    return data


def corrupt(kind: str, payload: bytes, eol: bytes) -> list[bytes]:
    """``payload`` (a message without its line terminator ``eol``) damaged by ``kind``.

    The pieces are written one after another (``split`` is the only kind with
    more than one); together they are what the receiving peer reads.
    """
    if kind == "truncate":
        return [payload[: max(1, len(payload) // 2)] + eol]
    if kind == "trailing-comma":
        end = payload.rfind(b"}")
        if end < 0:
            end = payload.rfind(b"]")
        if end <= 0:
            return [payload + b"," + eol]
        return [payload[:end] + b"," + payload[end:] + eol]
    if kind == "invalid-utf8":
        # Inside the first string, so the JSON shape stays and only the encoding is wrong.
        quote = payload.find(b'"')
        at = quote + 1 if quote >= 0 else 0
        return [payload[:at] + b"\xff\xfe" + payload[at:] + eol]
    if kind == "banner":
        return [BANNER + payload + eol]
    if kind == "split":
        size = max(1, -(-len(payload) // SPLIT_PIECES))
        pieces = [payload[i : i + size] for i in range(0, len(payload), size)]
        pieces[-1] += eol
        return pieces
    if kind == "pretty":
        try:
            value = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return [payload + eol]
        return [orjson.dumps(value, option=orjson.OPT_INDENT_2) + eol]
    raise ValueError(f"unknown corruption {kind!r}")


def frames_in(data: bytes) -> int:
    """How many line frames ``data`` (ending with a line terminator) makes on a stdio stream."""
    return max(1, data.count(b"\n"))
