"""faults/damage.py: each corruption gives the bytes its name promises; answers are JSON-RPC."""

from __future__ import annotations

import orjson
import pytest

from mcpsniff.faults.damage import BANNER, answer, corrupt, frames_in
from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.spec import parse_faults

MESSAGE = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": "hello"}})


def test_truncate_and_trailing_comma_are_invalid_json() -> None:
    for kind in ("truncate", "trailing-comma"):
        (damaged,) = corrupt(kind, MESSAGE, b"\n")
        assert damaged.endswith(b"\n")
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(damaged)
    assert corrupt("trailing-comma", MESSAGE, b"\n")[0].endswith(b"},}\n")


def test_invalid_utf8() -> None:
    (damaged,) = corrupt("invalid-utf8", MESSAGE, b"\n")
    with pytest.raises(UnicodeDecodeError):
        damaged.decode("utf-8")


def test_banner_split_and_pretty() -> None:
    (banner,) = corrupt("banner", MESSAGE, b"\n")
    assert banner == BANNER + MESSAGE + b"\n" and frames_in(banner) == 2
    pieces = corrupt("split", MESSAGE, b"\n")
    assert len(pieces) == 3 and b"".join(pieces) == MESSAGE + b"\n"
    (pretty,) = corrupt("pretty", MESSAGE, b"\r\n")
    assert orjson.loads(pretty) == orjson.loads(MESSAGE) and frames_in(pretty) > 3


def test_answers() -> None:
    engine = FaultEngine(parse_faults(['error -32020 "no header"', 'tool-error "disk full"']))
    request = engine.read("c2s", b'{"jsonrpc":"2.0","id":"a","method":"ping"}')
    injection = engine.judge(request)
    assert injection is not None
    assert orjson.loads(answer(injection)) == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32020, "message": "no header"},
    }


def test_an_injected_unsupported_version_lists_the_others() -> None:
    engine = FaultEngine(parse_faults(["error -32022 Unsupported"]))
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    raw = orjson.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}
    )
    injection = engine.judge(engine.read("c2s", raw))
    assert injection is not None
    error = orjson.loads(answer(injection))["error"]
    assert error["code"] == -32022 and error["data"]["requested"] == "2026-07-28"
    assert error["data"]["supported"][0] == "2025-11-25"
    assert "2026-07-28" not in error["data"]["supported"]
