"""Each tool of ``mcpsniff mcp`` on the gallery: the same figures as the UI, stats and check."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.agent.access import Refused, TraceAccess
from mcpsniff.agent.tools import (
    MAX_LIMIT,
    ToolInputError,
    compare_sessions,
    explain_rule,
    follow_session,
    get_message,
    list_sessions,
    search_messages,
    session_findings,
    session_summary,
    stats,
)
from mcpsniff.cli import main

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
ECHO = RECORDINGS / "string-id-echo.jsonl"
COMMA = RECORDINGS / "trailing-comma.jsonl"
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_trace import generate  # noqa: E402


@pytest.fixture
def access() -> TraceAccess:
    found = TraceAccess([ECHO, COMMA])
    found.refresh()
    return found


def test_list_sessions_and_its_filters(access: TraceAccess) -> None:
    listed = list_sessions(access, {})
    assert listed["total"] == 2 and {s["key"] for s in listed["items"]} == {
        "string-id-echo",
        "trailing-comma",
    }
    assert list_sessions(access, {"trace": str(ECHO)})["items"][0]["key"] == "string-id-echo"
    assert list_sessions(access, {"contains": "GALLERY-SERVER"})["total"] == 2
    assert list_sessions(access, {"contains": "nobody"})["total"] == 0
    assert list_sessions(access, {"transport": "http"})["total"] == 0
    assert list_sessions(access, {"with_findings": True})["total"] == 2
    page = list_sessions(access, {"limit": 1})
    assert len(page["items"]) == 1 and page["next_offset"] == 1
    with pytest.raises(Refused):
        list_sessions(access, {"trace": str(RECORDINGS / "empty-batch.jsonl")})
    with pytest.raises(ToolInputError):
        list_sessions(access, {"limit": MAX_LIMIT + 1})


def test_summary_agrees_with_stats(access: TraceAccess) -> None:
    summary = session_summary(access, {"session": "0:0"})
    cli = CliRunner().invoke(main, ["stats", str(ECHO), "--format", "json"])
    expected = orjson.loads(cli.output)
    assert summary["by_method"] == expected["methods"]
    assert summary["findings_by_rule"] == {"JR-RESP-ID": 1}
    assert summary["duration_s"] == pytest.approx(0.5625)


def test_search_with_the_filter_language(access: TraceAccess) -> None:
    errors = search_messages(access, {"session": "1:0", "filter": "kind == error"})
    assert errors["total"] == 1
    (row,) = errors["items"]
    assert row["error_code"] == "-32700" and row["dir"] == "s2c"
    everything = search_messages(access, {"session": "0:0", "limit": 2, "offset": 1})
    assert everything["offset"] == 1 and len(everything["items"]) == 2
    # Five messages and the two session events, as `show` lists them.
    assert everything["total"] == 7 and everything["next_offset"] == 3


def test_get_message_with_its_findings(access: TraceAccess) -> None:
    got = get_message(access, {"session": "0:0", "seq": 6})
    assert got["body"]["id"] == "1" and got["message"]["kind"] == "response"
    assert [f["rule"] for f in got["findings"]] == ["JR-RESP-ID"]
    by_row = get_message(access, {"session": "0:0", "row": got["message"]["n"]})
    assert by_row["body"] == got["body"]
    with pytest.raises(ToolInputError, match="no message at seq 999"):
        get_message(access, {"session": "0:0", "seq": 999})


def test_a_large_message_is_cut_and_says_so(tmp_path: Path) -> None:
    trace = tmp_path / "big.jsonl"
    generate(trace, 30, payload=30_000)
    access = TraceAccess([trace])
    access.refresh()
    rows = search_messages(access, {"session": "0:0", "filter": "size > 20000", "limit": 1})
    seq = rows["items"][0]["seq"]
    got = get_message(access, {"session": "0:0", "seq": seq, "max_bytes": 1024})
    assert "body" not in got and 1000 < len(got["text"].encode()) <= 1024
    assert "first 1024 are shown" in got["truncated"] and got["size"] > 20_000


def test_findings_with_explanations(access: TraceAccess) -> None:
    found = session_findings(access, {"session": "1:0"})
    rules = [f["rule"] for f in found["items"]]
    assert "JR-PARSE" in rules
    assert set(found["explanations"]) == set(rules)
    assert all(found["explanations"].values())
    errors_only = session_findings(access, {"session": "1:0", "min_severity": "error"})
    assert all(f["severity"] == "error" for f in errors_only["items"])


def test_trace_stats_equal_the_command(access: TraceAccess) -> None:
    cli = CliRunner().invoke(main, ["stats", str(COMMA), "--format", "json"])
    assert stats(access, {"trace": str(COMMA)}) == orjson.loads(cli.output)
    with pytest.raises(ToolInputError):
        stats(access, {})


def test_explain_rule() -> None:
    access = TraceAccess([ECHO])
    rule = explain_rule(access, {"rule": "lc-initialized-missing"})
    assert rule["rule"] == "LC-INITIALIZED-MISSING" and rule["explanation"]
    with pytest.raises(ToolInputError, match="no rule"):
        explain_rule(access, {"rule": "NOT-A-RULE"})


def test_compare(access: TraceAccess) -> None:
    compared = compare_sessions(access, {"a": "0:0", "b": "1:0"})
    assert compared["identity"]["name"] == {"a": "gallery-server", "b": "gallery-server"}
    assert "JR-RESP-ID" in compared["differences"]["rules"]
    assert compared["differences"]["rules"]["JR-RESP-ID"]["b"] is None


def test_follow_a_growing_trace(tmp_path: Path) -> None:
    lines = (RECORDINGS / "clean-2025-11-25.jsonl").read_bytes().splitlines(keepends=True)
    trace = tmp_path / "live.jsonl"
    trace.write_bytes(b"".join(lines[:6]))
    access = TraceAccess([trace])
    access.refresh()
    first = follow_session(access, {"session": "0:0"})
    assert first["rows"] and not first["more"]
    after = first["next_after"]
    assert follow_session(access, {"session": "0:0", "after": after})["rows"] == []
    with trace.open("ab") as handle:
        handle.write(b"".join(lines[6:]))
    later = follow_session(access, {"session": "0:0", "after": after, "wait_seconds": 5})
    assert later["rows"] and later["rows"][0]["n"] == after
    assert later["ended"] is True
    with pytest.raises(ToolInputError):
        follow_session(access, {"session": "0:0", "wait_seconds": 60})


def test_search_every_session(access: TraceAccess) -> None:
    found = search_messages(access, {"filter": "kind == error or rule == JR-RESP-ID"})
    sessions = {row["session"] for row in found["items"]}
    assert sessions == {"0:0", "1:0"}
    assert all("seq" in row for row in found["items"])


def test_paging_reads_the_trace_once_and_a_huge_match_is_cut(
    access: TraceAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpsniff.agent import tools

    reads: list[Path] = []
    real = tools.session_views

    def counted(path: Path):  # type: ignore[no-untyped-def]
        reads.append(path)
        return real(path)

    monkeypatch.setattr(tools, "session_views", counted)
    for offset in (0, 2, 4):
        search_messages(access, {"session": "0:0", "offset": offset, "limit": 2})
    assert reads == [ECHO]
    monkeypatch.setattr(tools, "MATCH_LIMIT", 3)
    capped = search_messages(access, {"session": "1:0"})
    assert capped["total"] == 3 and "narrow the filter" in capped["cut"]


@pytest.mark.parametrize(
    ("since", "total"),
    [("2026-01-01", 2), ("2026-01-01T00:00:00.5Z", 2), ("2026-01-02", 0), (1767225600, 2)],
)
def test_list_sessions_since(access: TraceAccess, since: object, total: int) -> None:
    assert list_sessions(access, {"since": since})["total"] == total


def test_since_must_be_a_time(access: TraceAccess) -> None:
    with pytest.raises(ToolInputError, match="ISO 8601"):
        list_sessions(access, {"since": "last week"})


def test_explain_rule_gives_the_severities_the_findings_carry() -> None:
    access = TraceAccess([ECHO])
    # The catalogue says error (a MUST); the rule's findings are info.
    rule = explain_rule(access, {"rule": "CANCEL-IN-PROGRESS"})
    assert (rule["severity"], rule["severities"]) == ("info", ["info"])
    assert "reported as" not in rule["explanation"]
    several = explain_rule(access, {"rule": "SAMP-TOOLCHOICE"})
    assert (several["severity"], several["severities"]) == ("error", ["error", "info"])
    assert several["explanation"].endswith(
        "Its findings are reported as error or info, depending on what the finding shows; "
        "error is the level it is listed with."
    )
