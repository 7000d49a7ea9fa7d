"""`check --explain`, `rules --format json` descriptions, and the folded text report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core import explain
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.export.sarif import help_uri
from tests.export.support import DATA, RECORDINGS, write_stdio_trace


def test_explain_a_rule_without_a_trace() -> None:
    result = CliRunner().invoke(main, ["check", "--explain", "STDIO-FRAMING"])
    assert result.exit_code == 0
    assert result.output.startswith("STDIO-FRAMING (error)\n")
    assert "delimited by newlines" in result.output and "Serialize compactly" in result.output


def test_explain_an_unknown_rule_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["check", "--explain", "JR-NOPE"])
    assert result.exit_code == 2
    assert "unknown rule id 'JR-NOPE'" in result.output


def test_check_without_trace_or_rule_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 2 and "missing argument TRACE" in result.output


def test_explain_all_follows_the_report_with_each_rule_found_once() -> None:
    path = str(RECORDINGS / "stdout-pollution.jsonl")
    result = CliRunner().invoke(main, ["check", "--explain", "all", path])
    assert result.exit_code == 1
    report, _, explained = result.output.partition("finding(s) at or above error\n")
    assert "↳ so also STDIO-STDOUT-CLEAN" in report
    heads = [line for line in explained.splitlines() if not line.startswith(" ")]
    assert heads == ["JR-PARSE (error)", "STDIO-STDOUT-CLEAN (error)"]


def test_json_output_keeps_every_finding_and_is_unchanged_by_explain() -> None:
    path = str(RECORDINGS / "stdout-pollution.jsonl")
    plain = CliRunner().invoke(main, ["check", "--format", "json", path]).output
    explained = CliRunner().invoke(main, ["check", "--format", "json", "--explain", "all", path])
    assert explained.output == plain
    assert [orjson.loads(line)["rule"] for line in plain.splitlines()] == [
        "JR-PARSE",
        "STDIO-STDOUT-CLEAN",
    ]


def test_rules_json_has_a_description_for_every_rule() -> None:
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    rows = [orjson.loads(line) for line in result.output.splitlines()]
    assert [r["rule"] for r in rows] == list(IMPLEMENTED)
    for row in rows:
        assert row["description"] == explain.description(row["rule"]) != ""


def test_text_report_names_the_layer_of_an_error_code() -> None:
    from mcpsniff.core.model import FindingRecord
    from mcpsniff.terminal.render import Style, report_lines

    findings = [
        FindingRecord("TASK-ERRORS", "error", "m", "s", [3], {"code": -32001}),
        FindingRecord("JR-ERROR-SEMANTICS", "info", "m", "s", [4], {"code": -32700}),
        FindingRecord("LOG-SETLEVEL-INVALID", "warning", "m", "s", [5], {"code": 7}),
    ]
    text = "\n".join(str(line) for line in report_lines({"s": findings}, Style(False)))
    assert "error -32001: implementation-defined server error (-32099..-32000)" in text
    assert "error -32700 Parse error: JSON-RPC protocol error (-32768..-32600)" in text
    assert "error 7: application error" in text


# ------------------------------------------------------------ as a new user types it

# ``mcpsniff check --explain`` as a new user types it.


CLEAN_TRACE = str(Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl")


def test_an_unknown_rule_without_a_trace_is_refused() -> None:
    """The near-miss: without TRACE, a typo is named."""
    result = CliRunner().invoke(main, ["check", "--explain", "JR-PARES"])
    assert result.exit_code == 2
    assert "unknown rule id 'JR-PARES'" in result.output


def test_an_unknown_rule_with_a_trace_is_named_too() -> None:
    """A typo in the rule id prints the report and no explanation, and no word why."""
    result = CliRunner().invoke(main, ["check", "--explain", "JR-PARES", CLEAN_TRACE])
    assert "JR-PARES" in result.output, result.output


def test_check_explain_takes_a_rule_id_in_any_case() -> None:
    lower = CliRunner().invoke(main, ["check", "--explain", "jr-resp-id"])
    upper = CliRunner().invoke(main, ["check", "--explain", "JR-RESP-ID"])
    assert lower.exit_code == 0, lower.output
    assert lower.output == upper.output
    assert lower.output.startswith("JR-RESP-ID (error)")


def test_check_explain_all_without_a_trace_says_what_all_means() -> None:
    result = CliRunner().invoke(main, ["check", "--explain", "all"])
    assert result.exit_code == 2
    assert "--explain all explains the rules a TRACE's report found" in result.output
    assert "mcpsniff rules --format json" in result.output


# ----------------------------------------------------------------------------
# `mcpsniff check --format sarif|junit`: checked by the SARIF 2.1.0 schema, parsed as XML.


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
    session, *failing = root.findall("./testsuite/testcase")
    # The session's own case passes; each rule at or above --fail-on is a failing case.
    assert session.get("name") == "session missing-initialized"
    assert session.findall("failure") == []
    assert len(failing) == failures
    assert all(len(case.findall("failure")) == 1 for case in failing)
    types = [case.find("failure").get("type") for case in failing]  # type: ignore[union-attr]
    assert "LC-INITIALIZED-MISSING" in types
    assert [case.get("name") for case in failing] == [
        f"session missing-initialized {t}" for t in types
    ]
    assert root.get("tests") == str(1 + failures) and root.get("failures") == str(failures)
    out_text = session.findtext("system-out") or ""
    # One line a finding, its spec link indented under it.
    assert len([line for line in out_text.splitlines() if not line.startswith("  ")]) == quiet
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
    assert names[0] == "session sess\\x1b[31m<&>" and len(names) > 1
    assert all(name.startswith("session sess\\x1b[31m<&> ") for name in names[1:])
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


def test_help_ends_with_the_filter_syntax() -> None:
    from mcpsniff.cli.check import check
    from mcpsniff.filter import HELP

    assert check.epilog == HELP
    result = CliRunner().invoke(main, ["check", "--help"], terminal_width=100)
    assert result.exit_code == 0
    first = "Filter expressions (--filter), for example:"
    assert first in HELP
    assert first in result.output
    assert result.output.index(first) > result.output.index("--jobs")
    with pytest.raises(TypeError):
        check.epilog = "something else"


def test_explain_heads_a_rule_with_the_severity_its_findings_carry() -> None:
    # MOD-LIST-STABLE: a MUST in the catalogue (error), reported at info.
    result = CliRunner().invoke(main, ["check", "--explain", "MOD-LIST-STABLE"])
    assert result.exit_code == 0
    assert result.output.startswith("MOD-LIST-STABLE (info)\n")
    several = CliRunner().invoke(main, ["check", "--explain", "MOD-HTTP-SSE"])
    assert several.output.startswith("MOD-HTTP-SSE (error)\n")
    assert "reported as error or warning" in " ".join(several.output.split())
