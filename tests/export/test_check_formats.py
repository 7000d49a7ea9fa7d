"""``mcpsniff check --format sarif|junit``: checked by the SARIF 2.1.0 schema, parsed as XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.export.sarif import help_uri

from .support import DATA, RECORDINGS, write_stdio_trace

SARIF_SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["check", *args])
    return result.exit_code, result.stdout


def validate_sarif(log: dict) -> None:
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)


@pytest.mark.parametrize("trace", sorted(RECORDINGS.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_recording_gives_a_schema_valid_sarif_log(trace: Path) -> None:
    code, out = check("--format", "sarif", str(trace))
    log = json.loads(out)
    validate_sarif(log)
    assert log["version"] == "2.1.0"
    # Same verdict as the text report: exit 1 exactly when an error-level result exists.
    levels = [r["level"] for r in log["runs"][0]["results"]]
    assert code == (1 if "error" in levels else 0)


def test_sarif_rules_results_and_locations_point_at_the_trace_line() -> None:
    trace = RECORDINGS / "stdout-pollution.jsonl"
    code, out = check("--format", "sarif", str(trace))
    assert code == 1
    run = json.loads(out)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["JR-PARSE", "STDIO-STDOUT-CLEAN"]
    assert rules[0]["helpUri"] == "https://www.jsonrpc.org/specification#response_object"
    # The page of the session's version (2025-11-25), at the section the rule cites.
    assert rules[1]["helpUri"] == (
        "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio"
    )
    assert "not valid JSON" in rules[0]["fullDescription"]["text"]
    assert rules[0]["defaultConfiguration"]["level"] == "error"
    results = run["results"]
    assert {r["ruleId"] for r in results} == {"JR-PARSE", "STDIO-STDOUT-CLEAN"}
    lines = trace.read_text(encoding="utf-8").splitlines()
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == trace.as_uri()
        line = lines[location["region"]["startLine"] - 1]
        # The line is the frame the finding is about: the banner on stdout.
        assert '"type":"frame"' in line and "Loading model" in line


def test_sarif_of_a_clean_trace_has_no_results() -> None:
    code, out = check("--format", "sarif", str(RECORDINGS / "clean-2025-11-25.jsonl"))
    log = json.loads(out)
    validate_sarif(log)
    assert code == 0
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_help_uri_resolves_version_placeholders() -> None:
    assert help_uri("CAP-RES-UPDATED") == (
        "https://modelcontextprotocol.io/specification/2025-11-25/server/resources#subscriptions"
    )
    assert help_uri("CAP-RES-UPDATED", "2024-11-05") == (
        "https://modelcontextprotocol.io/specification/2024-11-05/server/resources#subscriptions"
    )
    assert help_uri("NO-SUCH-RULE") == "https://modelcontextprotocol.io/specification/2026-07-28"


@pytest.mark.parametrize(
    ("fail_on", "failures", "quiet"),
    [("error", 1, 1), ("info", 2, 0)],
)
def test_junit_one_case_per_session_failures_at_or_above_fail_on(
    fail_on: str, failures: int, quiet: int
) -> None:
    trace = RECORDINGS / "missing-initialized.jsonl"  # one error, one info finding
    code, out = check("--format", "junit", "--fail-on", fail_on, str(trace))
    assert code == 1
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 1
    assert cases[0].get("name") == "session missing-initialized"
    found = cases[0].findall("failure")
    assert len(found) == failures
    assert "LC-INITIALIZED-MISSING" in {f.get("type") for f in found}
    assert root.get("tests") == "1" and root.get("failures") == "1"
    out_text = cases[0].findtext("system-out") or ""
    assert out_text.count("\n") + bool(out_text) == quiet
    if quiet:
        assert "LC-INITIALIZED-ORDER" in out_text


def test_junit_clean_trace_passes() -> None:
    code, out = check("--format", "junit", str(RECORDINGS / "clean-2026-07-28.jsonl"))
    root = ET.fromstring(out)
    assert code == 0
    assert root.get("tests") == "1" and root.get("failures") == "0"
    assert root.findall(".//failure") == []


def test_hostile_text_stays_valid_xml_and_json(tmp_path: Path) -> None:
    """Control codes and a lone surrogate from traffic: still parseable, shown as escapes."""
    evil_id = "\x1b]0;pwned\x07\ud800\u202e"
    trace = write_stdio_trace(
        tmp_path / "evil.jsonl",
        [
            ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
            ("s2c", {"jsonrpc": "2.0", "id": evil_id, "result": {}}),
        ],
        session="sess\x1b[31m<&>",
    )
    code, out = check("--format", "junit", "--fail-on", "info", str(trace))
    root = ET.fromstring(out)
    text = ET.tostring(root, encoding="unicode")
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b" in text
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["session sess\\x1b[31m<&>"]
    assert code == 1
    code, out = check("--format", "sarif", "--fail-on", "info", str(trace))
    log = json.loads(out)
    validate_sarif(log)
    messages = " ".join(r["message"]["text"] for r in log["runs"][0]["results"])
    assert "\x1b" not in messages and "\ud800" not in messages
    assert "\\u202e" in messages or "\\x1b" in messages


@pytest.mark.parametrize("fmt", ["sarif", "junit"])
def test_a_finding_that_quotes_a_credential_is_redacted_in_shared_reports(
    tmp_path: Path, fmt: str
) -> None:
    """A --no-redact trace: SARIF goes to code scanning, JUnit to CI; no secret goes with it."""
    secret = "sk-" + "Qw3rTy7uIo" * 3
    trace = write_stdio_trace(
        tmp_path / "leaky.jsonl",
        [
            ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
            ("s2c", f"starting with OPENAI_API_KEY={secret}\n".encode()),
        ],
    )
    code, text = check(str(trace))
    assert secret in text  # the local text report shows the trace as it is
    code, out = check("--format", fmt, "--fail-on", "info", str(trace))
    assert code == 1
    assert secret not in out
    assert "OPENAI_API_KEY=[REDACTED]" in out
    if fmt == "sarif":
        validate_sarif(json.loads(out))
    else:
        ET.fromstring(out)


def _gapped(tmp_path: Path) -> Path:
    """A ping whose answer may be in a capture gap: check passes, and says what it lacks."""
    version = {"protocolVersion": "2025-11-25", "capabilities": {}}
    frames = [
        (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {**version, "clientInfo": {"name": "c", "version": "1"}},
            },
        ),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {**version, "serverInfo": {"name": "s", "version": "1"}},
            },
        ),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ]
    path = write_stdio_trace(tmp_path / "gapped.jsonl", frames)
    lines = path.read_bytes().splitlines(keepends=True)
    gap = {
        "type": "event",
        "seq": 6,
        "t": 1767225600.5,
        "session": "s1",
        "event": "capture-gap",
        "data": {"direction": "s2c", "lost_bytes": 37, "reason": "the analysis died\x1b[2J"},
    }
    end = lines[-1].replace(b'"seq": 6', b'"seq": 7').replace(b'"seq":6', b'"seq":7')
    assert end != lines[-1]  # the session-end follows the gap
    path.write_bytes(b"".join([*lines[:-1], json.dumps(gap).encode() + b"\n", end]))
    return path


def test_sarif_of_a_gapped_trace_says_what_it_did_not_check(tmp_path: Path) -> None:
    code, out = check("--format", "sarif", str(_gapped(tmp_path)))
    log = json.loads(out)
    validate_sarif(log)
    assert code == 0
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "warning"
    assert "the trace lacks 37 bytes" in note["message"]["text"]
    assert "1 request(s) pending across a capture gap were not judged" in note["message"]["text"]
    assert "\x1b" not in note["message"]["text"]


def test_junit_of_a_gapped_trace_says_what_it_did_not_check(tmp_path: Path) -> None:
    code, out = check("--format", "junit", str(_gapped(tmp_path)))
    root = ET.fromstring(out)
    assert code == 0 and root.get("failures") == "0"
    said = root.findtext("./testsuite/system-err") or ""
    assert "the trace lacks 37 bytes" in said and "not judged unanswered" in said


def test_a_clean_trace_has_no_notes() -> None:
    _, out = check("--format", "sarif", str(RECORDINGS / "clean-2025-11-25.jsonl"))
    assert "invocations" not in json.loads(out)["runs"][0]
    _, out = check("--format", "junit", str(RECORDINGS / "clean-2025-11-25.jsonl"))
    assert ET.fromstring(out).find("./testsuite/system-err") is None


def test_text_json_and_junit_link_the_page_of_the_session_version() -> None:
    trace = RECORDINGS / "missing-initialized.jsonl"  # a 2025-11-25 session
    page = "https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#initialization"
    _, text = check(str(trace))
    assert f"spec: {page}" in text
    assert "S/<v>" not in text and ".mdx" not in text
    _, out = check("--format", "json", str(trace))
    links = {json.loads(line)["rule"]: json.loads(line)["spec"] for line in out.splitlines()}
    assert links["LC-INITIALIZED-MISSING"] == page
    _, xml = check("--format", "junit", str(trace))
    assert f"spec: {page}" in xml
