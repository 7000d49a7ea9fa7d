"""core/upgrade.py: a recorded session judged by the rules of another protocol version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.protocol import HANDSHAKE, STATELESS
from mcpsniff.core.upgrade import (
    NEGOTIATION_RULES,
    PinnedAnalyzer,
    UpgradeReport,
    _PinnedState,
    judge_upgrade,
    upgrade_json,
)
from mcpsniff.trace.reader import TraceReader

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def judge(name: str, target: str) -> UpgradeReport:
    return judge_upgrade(lambda: TraceReader(RECORDINGS / name), target)


def test_a_2025_session_as_2026_lists_what_its_peers_must_change() -> None:
    report = judge("clean-2025-11-25.jsonl", "2026-07-28")
    assert report.recorded == {"clean-2025-11-25": "2025-11-25"}
    rules = {c.rule: c for c in report.appear}
    assert {"MOD-META-REQUIRED", "MOD-RESULTTYPE", "MOD-REMOVED", "MOD-LOG-OPTIN"} <= set(rules)
    removed = [message for _, _, message in rules["MOD-REMOVED"].examples]
    assert any('"ping"' in m for m in removed)
    assert any('"notifications/initialized"' in m for m in removed)
    # initialize itself is the legacy fallback a dual-era server may still accept
    # (basic/versioning.mdx § Backward Compatibility): not listed as removed.
    assert not any('"initialize"' in m for m in removed)
    assert rules["MOD-RESULTTYPE"].severity == "error"
    # every client request after initialize lacks it, and the server accepted each one
    assert rules["MOD-META-REQUIRED"].count == 8
    assert report.resolved == [] and report.unchanged == 0
    assert report.failing("error") > 0


def test_near_miss_a_session_judged_by_its_own_version_changes_nothing() -> None:
    report = judge("clean-2026-07-28.jsonl", "2026-07-28")
    assert (report.appear, report.resolved, report.renegotiated) == ([], [], 0)
    assert report.failing("info") == 0
    report = judge("string-id-echo.jsonl", "2025-11-25")
    assert report.appear == [] and report.resolved == [] and report.unchanged == 1


def test_what_would_stop_being_a_problem() -> None:
    # 2026-07-28 has no handshake: a missing notifications/initialized is no longer wrong.
    report = judge("missing-initialized.jsonl", "2026-07-28")
    assert "LC-INITIALIZED-MISSING" in {c.rule for c in report.resolved}


def test_version_negotiation_findings_are_left_out_and_counted() -> None:
    report = judge("empty-batch.jsonl", "2024-11-05")
    assert report.renegotiated >= 1
    assert not {c.rule for c in report.appear} & NEGOTIATION_RULES
    assert "MSG-BATCH-V1" in {c.rule for c in report.appear}


def test_json_for_ci_names_rules_links_and_caveats() -> None:
    data = upgrade_json(judge("clean-2025-11-25.jsonl", "2026-07-28"))
    assert data["target"] == "2026-07-28"
    first = data["appear"][0]
    assert set(first) == {"rule", "severity", "count", "spec", "description", "examples"}
    assert first["spec"].startswith("https://modelcontextprotocol.io/specification/2026-07-28/")
    assert first["examples"][0]["session"] == "clean-2025-11-25"
    assert any("renegotiated" in caveat for caveat in data["caveats"])


def test_pinned_state_reads_the_target_and_keeps_what_was_negotiated() -> None:
    from mcpsniff.core.state import SessionState

    state = _PinnedState("2026-07-28")
    state.version = "2025-11-25"
    state.era = HANDSHAKE
    assert (state.version, state.era) == ("2026-07-28", STATELESS)
    assert SessionState.version.__get__(state) == "2025-11-25"  # type: ignore[attr-defined]
    assert _PinnedState("2025-06-18").era == HANDSHAKE
    assert isinstance(PinnedAnalyzer("2025-06-18").session("s").state, _PinnedState)


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown protocol version"):
        judge("clean-2025-11-25.jsonl", "2030-01-01")


def _pinned_http(*steps: Any) -> list[str]:
    """Play HTTP ``steps`` in a session judged as 2026-07-28 (``check --as``)."""
    from mcpsniff.core.upgrade import _PinnedState
    from tests.conftest import Conversation

    convo = Conversation("http")
    convo.session.state = _PinnedState("2026-07-28")
    for name, data in steps:
        convo.t += 0.001
        convo.records.extend(convo.session.event(name, convo.t, data))
    return [f.rule for f in convo.findings]


def _exchange(method: str, status: int, **response: str) -> list[tuple[str, dict[str, Any]]]:
    headers = [["mcp-protocol-version", "2025-11-25"], ["mcp-session-id", "s" * 32]]
    return [
        ("http-request", {"exchange": 1, "method": method, "path": "/mcp", "headers": headers}),
        ("http-response", {"exchange": 1, "status": status, "headers": list(response.items())}),
    ]


def test_as_2026_an_older_trace_s_get_is_judged_by_the_post_only_endpoint() -> None:
    assert "MOD-HTTP-POST-ONLY" in _pinned_http(
        *_exchange("GET", 200, content_type="text/event-stream")
    )
    assert "MOD-HTTP-POST-ONLY" not in _pinned_http(*_exchange("GET", 405))
