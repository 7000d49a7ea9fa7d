"""``check --format junit`` (export/junit.py): a case per session, and per session and rule."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import FindingRecord
from mcpsniff.export.junit import RULE_LINES, junit_xml
from tests.export.support import RECORDINGS


def finding(session: str, rule: str, severity: str, seq: int) -> FindingRecord:
    return FindingRecord(rule, severity, f"{rule} at {seq}", session, [seq])


def cases_of(xml: str) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(xml)
    return root, root.findall("./testsuite/testcase")


def test_each_rule_of_a_session_is_a_case_with_all_its_findings_in_one_failure() -> None:
    findings = {
        "a": [
            finding("a", "JR-RESP-ID", "error", 3),
            finding("a", "STDIO-FRAMING", "error", 4),
            finding("a", "JR-RESP-ID", "error", 5),
            finding("a", "LC-INITIALIZED-ORDER", "info", 6),
            finding("a", "JR-RESP-ID", "error", 7),
        ]
    }
    root, cases = cases_of(junit_xml(["a", "b"], findings, "error", Path("t.jsonl")))
    assert [c.get("name") for c in cases] == [
        "session a",
        "session a JR-RESP-ID",
        "session a STDIO-FRAMING",
        "session b",
    ]
    assert root.get("tests") == "4" and root.get("failures") == "2"
    session_a, resp_id, framing, session_b = cases
    assert session_a.findall("failure") == [] and session_b.findall("failure") == []
    assert "LC-INITIALIZED-ORDER" in (session_a.findtext("system-out") or "")
    (failure,) = resp_id.findall("failure")
    assert failure.get("type") == "JR-RESP-ID"
    assert failure.get("message") == "JR-RESP-ID at 3 (and 2 more)"
    assert [line for line in (failure.text or "").splitlines() if not line.startswith("  ")] == [
        "error JR-RESP-ID (seq 3): JR-RESP-ID at 3",
        "error JR-RESP-ID (seq 5): JR-RESP-ID at 5",
        "error JR-RESP-ID (seq 7): JR-RESP-ID at 7",
    ]
    (only,) = framing.findall("failure")
    assert only.get("message") == "STDIO-FRAMING at 4"


def test_a_rule_found_thousands_of_times_is_one_bounded_failure() -> None:
    many = [finding("s", "JR-PARSE", "error", n) for n in range(RULE_LINES + 50)]
    root, cases = cases_of(junit_xml(["s"], {"s": many}, "error", Path("t.jsonl")))
    assert root.get("tests") == "2" and root.get("failures") == "1"
    text = cases[1].findtext("failure") or ""
    assert text.count("error JR-PARSE") == RULE_LINES
    assert text.endswith("... 50 more (mcpsniff check lists them all)")


def test_every_kind_of_finding_of_a_recording_is_a_first_failure() -> None:
    trace = RECORDINGS / "pretty-printed-response.jsonl"
    result = CliRunner().invoke(main, ["check", "--format", "junit", str(trace)])
    assert result.exit_code == 1
    root, cases = cases_of(result.stdout)
    first_failures = {c.find("failure").get("type") for c in cases if c.find("failure") is not None}  # type: ignore[union-attr]
    assert first_failures == {"JR-PARSE", "STDIO-STDOUT-CLEAN", "STDIO-FRAMING"}
    assert root.get("tests") == "4" and root.get("failures") == "3"
