"""``mcpsniff check`` on handcrafted traces whose fields have hostile types.

Found by mutating every field of real server-everything traces (Streamable
HTTP and HTTP+SSE, recorded through ``mcpsniff http``) and of the gallery
recordings into null, numbers, strings, lists, objects and lone surrogates,
and replaying each through the analyzer: ``check`` never raised, but an
sse-event whose exchange was a list made rules/sse_legacy raise (fixed on main
by d77964c meanwhile; kept as a regression test), and a rule that raises is
caught by ``Session`` as an ``analyzer-error`` record that ``check`` does not
mention at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord
from mcpsniff.core.session import Session
from mcpsniff.trace.reader import TraceReader

HEADER = {
    "type": "header",
    "format": "mcpsniff-trace",
    "version": 2,
    "meta": {"source": "mcpsniff http", "upstream": "http://127.0.0.1:3001/sse"},
}
SESSION = "sse-1"


def _event(seq: int, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "event",
        "seq": seq,
        "t": 1.0 + seq,
        "session": SESSION,
        "event": name,
        "data": data,
    }


def _legacy_stream(exchange: Any) -> list[dict[str, Any]]:
    """A legacy GET /sse stream whose endpoint event names ``exchange``."""
    return [
        HEADER,
        _event(
            1,
            "http-request",
            {
                "exchange": 1,
                "method": "GET",
                "path": "/sse",
                "headers": [["Host", "127.0.0.1:3001"], ["Accept", "text/event-stream"]],
                "transport": "legacy-sse",
            },
        ),
        _event(
            2,
            "http-response",
            {"exchange": 1, "status": 200, "headers": [["Content-Type", "text/event-stream"]]},
        ),
        _event(
            3,
            "sse-event",
            {
                "exchange": exchange,
                "index": 0,
                "event": "endpoint",
                "endpoint": "/message?sessionId=1",
            },
        ),
    ]


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _analyzer_errors(path: Path) -> list[str]:
    with TraceReader(path) as reader:
        return [
            record.data["error"]
            for record in replay(reader.inputs())
            if isinstance(record, EventRecord) and record.event == "analyzer-error"
        ]


def test_an_endpoint_event_of_a_known_exchange_raises_nothing(tmp_path: Path) -> None:
    """The near-miss: the same stream with an integer exchange number."""
    assert _analyzer_errors(_write(tmp_path, _legacy_stream(1))) == []


@pytest.mark.parametrize("exchange", [[], {}, [1]], ids=["list", "object", "list-of-one"])
def test_an_endpoint_event_with_an_unhashable_exchange_is_no_analyzer_error(
    tmp_path: Path, exchange: Any
) -> None:
    assert _analyzer_errors(_write(tmp_path, _legacy_stream(exchange))) == []


def test_check_says_when_the_analyzer_failed_on_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user must not read "nothing at or above error" when part of the trace was not
    analyzed (the rules after the failing one never ran on that record). The rule bug
    that showed it (an sse-event with a list as exchange) is fixed; any rule that raises
    shows it again, here every report."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a rule bug")

    monkeypatch.setattr(Session, "report", broken)
    path = Path(__file__).resolve().parents[2] / "recordings" / "trailing-comma.jsonl"
    assert _analyzer_errors(path)  # the premise: the analyzer did fail here
    result = CliRunner().invoke(main, ["check", str(path)])
    assert "analyzer" in (result.output + (result.stderr or "")).lower(), result.output
