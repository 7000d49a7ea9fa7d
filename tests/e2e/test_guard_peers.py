"""The guard end to end with real servers: fingerprints across sessions, drift, pins, gates."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.e2e.guard_recording import (
    DRIFTING,
    EVERYTHING,
    SDK2_PYTHON,
    SDK2_SERVER,
    mcpsniff,
    record,
)

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


def _json_findings(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "server",
    [["node", EVERYTHING, "stdio"], [SDK2_PYTHON, SDK2_SERVER]],
    ids=["server-everything", "sdk2"],
)
def test_two_sessions_of_a_real_server_give_no_drift(tmp_path: Path, server: list[object]) -> None:
    trace = tmp_path / "t.jsonl"
    first = record(trace, "real", server, tmp_path)  # type: ignore[arg-type]
    second = record(trace, "real", server, tmp_path)  # type: ignore[arg-type]
    assert first["lists"]["tools/list"] == second["lists"]["tools/list"]
    done = mcpsniff(
        "check", trace, "--history", "--format", "json", "--fail-on", "warning", state=tmp_path
    )
    guard = [f for f in _json_findings(done.stdout) if str(f["rule"]).startswith("GUARD-")]
    assert guard == [], guard
    tools = mcpsniff("tools", trace, "--format", "json", state=tmp_path)
    assert tools.returncode == 0, tools.stdout + tools.stderr
    (server_data,) = json.loads(tools.stdout)["servers"]
    assert server_data["sessions"] == 2
    assert server_data["findings"] == []
    assert {d["name"] for d in server_data["definitions"] if d["kind"] == "tool"} == {
        t["name"] for t in first["lists"]["tools/list"]
    }


def test_drift_across_sessions_and_mid_session_with_the_diff(tmp_path: Path) -> None:
    trace = tmp_path / "drift.jsonl"
    record(trace, "drifting", [sys.executable, DRIFTING, "Adds two numbers."], tmp_path)
    record(
        trace,
        "drifting",
        [sys.executable, DRIFTING, "Adds two numbers, carefully."],
        tmp_path,
        "--call",
        "mutate",
        "--relist",
    )
    done = mcpsniff("check", trace, "--history", "--format", "json", state=tmp_path)
    findings = _json_findings(done.stdout)
    (across,) = [f for f in findings if f["rule"] == "GUARD-DRIFT"]
    (change,) = across["data"]["changes"]  # type: ignore[index]
    assert change["fields"] == [
        {
            "field": "description",
            "removed_words": ["numbers."],
            "added_words": ["numbers,", "carefully."],
        }
    ]
    (within,) = [f for f in findings if f["rule"] == "GUARD-DRIFT-SESSION"]
    assert "~/.ssh/id_rsa" in within["message"]
    hidden = [f for f in findings if f["rule"] == "GUARD-HIDDEN-DEFINITION"]
    assert hidden and hidden[0]["severity"] == "warning"
    assert done.returncode == 0  # warnings only, below --fail-on error


def test_pin_then_check_against_the_pin(tmp_path: Path) -> None:
    approved = tmp_path / "approved.jsonl"
    record(approved, "drifting", [sys.executable, DRIFTING, "Adds two numbers."], tmp_path)
    lock = tmp_path / "mcpsniff.lock"
    pinned = mcpsniff("pin", approved, "-o", lock, state=tmp_path)
    assert pinned.returncode == 0, pinned.stderr
    assert "pinned: stdio:drifting [drifting] (2 definition(s)" in pinned.stdout
    data = json.loads(lock.read_text())
    assert data["format"] == "mcpsniff-lock"
    assert list(data["servers"]) == ["stdio:drifting [drifting]"]
    # Pinning the same offer again changes no byte.
    before = lock.read_bytes()
    again = mcpsniff("pin", approved, "-o", lock, state=tmp_path)
    assert "unchanged: stdio:drifting" in again.stdout and lock.read_bytes() == before

    same = mcpsniff("check", approved, "--pins", lock, state=tmp_path)
    assert same.returncode == 0, same.stdout

    changed = tmp_path / "changed.jsonl"
    record(changed, "drifting", [sys.executable, DRIFTING, "Adds two integers."], tmp_path)
    verdict = mcpsniff("check", changed, "--pins", lock, "--format", "json", state=tmp_path)
    assert verdict.returncode == 1
    (finding,) = [f for f in _json_findings(verdict.stdout) if f["rule"] == "GUARD-PIN"]
    assert finding["severity"] == "error"
    assert 'tool "add" changed: description' in str(finding["message"])


def test_policy_gates_on_a_real_server(tmp_path: Path) -> None:
    trace = tmp_path / "everything.jsonl"
    record(trace, "everything", ["node", EVERYTHING, "stdio"], tmp_path)
    ok = mcpsniff(
        "check",
        trace,
        "--expect-tool",
        "echo",
        "--forbid-tool",
        "delete_*",
        "--max-duration",
        "60s",
        "--max-definition-tokens",
        "50000",
        state=tmp_path,
    )
    assert ok.returncode == 0, ok.stdout
    bad = mcpsniff(
        "check",
        trace,
        "--expect-tool",
        "launch_missiles",
        "--forbid-tool",
        "get-*",
        "--max-definition-tokens",
        "100",
        "--format",
        "json",
        state=tmp_path,
    )
    assert bad.returncode == 1
    rules = {f["rule"] for f in _json_findings(bad.stdout)}
    assert {"GUARD-EXPECT-TOOL", "GUARD-FORBID-TOOL", "GUARD-MAX-TOKENS"} <= rules


def test_a_bad_lock_file_is_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, "drifting", [sys.executable, DRIFTING], tmp_path)
    lock = tmp_path / "bad.lock"
    lock.write_text("{not json")
    done = mcpsniff("check", trace, "--pins", lock, state=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "not JSON" in done.stderr


def test_the_relay_keeps_history_and_a_later_trace_is_compared_with_it(tmp_path: Path) -> None:
    first, second = tmp_path / "monday.jsonl", tmp_path / "tuesday.jsonl"
    record(first, "drifting", [sys.executable, DRIFTING, "Adds two numbers."], tmp_path)
    (history,) = (tmp_path / "mcpsniff" / "guard").glob("*.json")
    assert history.stat().st_mode & 0o777 == 0o600
    kept = json.loads(history.read_text())
    assert kept["identity"] == "stdio:drifting [drifting]"
    assert kept["offers"][0]["trace"] == str(first)
    record(second, "drifting", [sys.executable, DRIFTING, "Adds numbers."], tmp_path)
    assert len(json.loads(history.read_text())["offers"]) == 2

    done = mcpsniff("check", second, "--history", "--format", "json", state=tmp_path)
    (drift,) = [f for f in _json_findings(done.stdout) if f["rule"] == "GUARD-DRIFT"]
    assert str(first) in str(drift["data"]["since"])  # type: ignore[index]
    # Checked again later, the verdict is the same: only earlier offers count.
    again = mcpsniff("check", second, "--history", "--format", "json", state=tmp_path)
    assert [f for f in _json_findings(again.stdout) if f["rule"] == "GUARD-DRIFT"] == [drift]
    # The first trace has nothing before it.
    older = mcpsniff("check", first, "--history", "--format", "json", state=tmp_path)
    assert [f for f in _json_findings(older.stdout) if f["rule"] == "GUARD-DRIFT"] == []
    listed = mcpsniff("tools", second, state=tmp_path)
    assert listed.returncode == 1 and "GUARD-DRIFT" in listed.stdout
