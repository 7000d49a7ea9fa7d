"""``mcpsniff check TRACE --as VERSION`` (mcpsniff/check/upgrade.py): text, JSON, exit status."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_text_report_of_a_2025_session_as_2026() -> None:
    code, out, _ = run(str(RECORDINGS / "clean-2025-11-25.jsonl"), "--as", "2026-07-28")
    assert code == 1  # errors would appear
    assert "recorded as 2025-11-25; judged as 2026-07-28" in out
    assert "would break under 2026-07-28:" in out
    assert "error   MOD-RESULTTYPE" in out
    assert 'the client sent "ping", which 2026-07-28 removed' in out
    assert "spec: https://modelcontextprotocol.io/specification/2026-07-28/" in out
    assert "what this cannot know:" in out


def test_near_miss_the_same_version_exits_clean() -> None:
    code, out, _ = run(str(RECORDINGS / "clean-2026-07-28.jsonl"), "--as", "2026-07-28")
    assert code == 0
    assert "every session already speaks 2026-07-28" in out
    assert "would break under 2026-07-28: 0 finding(s)" in out


def test_json_is_one_object_and_fail_on_counts_only_what_appears() -> None:
    trace = str(RECORDINGS / "clean-2025-11-25.jsonl")
    code, out, _ = run(trace, "--as", "2026-07-28", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["target"] == "2026-07-28"
    assert {c["rule"] for c in data["appear"]} >= {"MOD-META-REQUIRED", "MOD-REMOVED"}
    # Nothing would appear for a 2025-11-25 session judged as 2025-11-25: exit 0.
    code, out, _ = run(str(RECORDINGS / "string-id-echo.jsonl"), "--as", "2025-11-25")
    assert code == 0


def test_bad_usage_and_unreadable_traces_are_one_line_errors(tmp_path: Path) -> None:
    code, _, err = run(
        str(RECORDINGS / "clean-2025-11-25.jsonl"), "--as", "2026-07-28", "--format", "sarif"
    )
    assert code == 2 and "--as VERSION reports as text or json" in err
    code, _, err = run(str(RECORDINGS / "clean-2025-11-25.jsonl"), "--as", "2031-01-01")
    assert code == 2 and "Invalid value for '--as'" in err
    missing = tmp_path / "nope.jsonl"
    code, out, err = run(str(missing), "--as", "2026-07-28")
    assert code == 2 and out == ""
    assert "nope.jsonl" in err and "Traceback" not in err
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff not a trace\n")
    code, out, err = run(str(garbage), "--as", "2026-07-28")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
