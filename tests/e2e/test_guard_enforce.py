"""``mcpsniff stdio --guard enforce`` with a real scripted server: refusals, never forwarded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcpsniff.guard.enforce import REFUSED
from tests.e2e.guard_recording import DRIFTING, mcpsniff, record


def _pin(tmp_path: Path, description: str) -> Path:
    approved = tmp_path / "approved.jsonl"
    record(approved, "drifting", [sys.executable, DRIFTING, description], tmp_path)
    lock = tmp_path / "mcpsniff.lock"
    assert mcpsniff("pin", approved, "-o", lock, state=tmp_path).returncode == 0
    return lock


def _events(trace: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    return [r for r in lines if r.get("type") == "event" and r.get("event") == "guard-answered"]


def test_a_drifted_tool_is_refused_and_a_pinned_one_passes(tmp_path: Path) -> None:
    lock = _pin(tmp_path, "Adds two numbers.")
    trace = tmp_path / "enforced.jsonl"
    server = [sys.executable, DRIFTING, "Adds two integers."]
    out = record(
        trace,
        "drifting",
        ["--guard", "enforce", "--pins", lock, "--", *server],  # type: ignore[list-item]
        tmp_path,
        "--call",
        "add",
        "--call",
        "mutate",
        relay_options=True,
    )
    refused = out["calls"]["add"]["error"]
    assert refused["code"] == REFUSED
    assert "drifted from the pin" in refused["message"]
    assert "-'numbers.' +'integers.'" in refused["message"]
    assert out["calls"]["mutate"]["result"]["content"][0]["text"] == "ok"
    (event,) = _events(trace)
    assert event["data"]["tool"] == "add"  # type: ignore[index]
    # The server never saw the refused call: it answered only the one forwarded.
    frames = [json.loads(line) for line in trace.read_text().splitlines()]
    server_calls = [
        f for f in frames if f.get("type") == "message" and f.get("method") == "tools/call"
    ]
    assert len(server_calls) == 2  # both requests are recorded as the client sent them
    done = mcpsniff("check", trace, "--format", "json", state=tmp_path)
    errors = [json.loads(line) for line in done.stdout.splitlines()]
    assert [f for f in errors if f["severity"] == "error"] == []
    assert done.returncode == 0


def test_a_forbidden_tool_is_refused_and_guard_off_stays_transparent(tmp_path: Path) -> None:
    trace = tmp_path / "forbid.jsonl"
    server = [sys.executable, DRIFTING]
    out = record(
        trace,
        "drifting",
        ["--guard", "enforce", "--forbid-tool", "mut*", "--", *server],  # type: ignore[list-item]
        tmp_path,
        "--call",
        "mutate",
        "--call",
        "add",
        relay_options=True,
    )
    assert "forbidden by --forbid-tool 'mut*'" in out["calls"]["mutate"]["error"]["message"]
    assert out["calls"]["add"]["result"]["content"][0]["text"] == "ok"
    plain = tmp_path / "plain.jsonl"
    passed = record(plain, "drifting", server, tmp_path, "--call", "mutate")  # type: ignore[arg-type]
    assert passed["calls"]["mutate"]["result"]["content"][0]["text"] == "ok"
    assert _events(plain) == []


def test_enforce_needs_something_to_enforce(tmp_path: Path) -> None:
    done = mcpsniff("stdio", "--guard", "enforce", "--", "true", state=tmp_path)
    assert done.returncode == 2
    assert "--guard enforce needs --pins FILE or --forbid-tool GLOB" in done.stderr
    lone = mcpsniff("stdio", "--forbid-tool", "x", "--", "true", state=tmp_path)
    assert lone.returncode == 2 and "take effect with --guard enforce" in lone.stderr
