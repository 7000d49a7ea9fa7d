"""``mcpsniff diff``: two recordings of real relays compared, request by request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcpsniff.replay.script import load_script
from mcpsniff.replay.trace_diff import align, differs, exchanges

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
SERVER = """
import json, sys, time
version, total = sys.argv[1], int(sys.argv[2])
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "adder", "version": version}}
    else:
        args = msg["params"]["arguments"]
        # A timestamp that changes on every run: left out of the comparison.
        result = {"content": [{"type": "text", "text": str(args["a"] + args["b"] + total)}],
                  "structuredContent": {"at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z")}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def client_lines(calls: list[tuple[int, int]]) -> bytes:
    out = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for i, (a, b) in enumerate(calls, start=1):
        out.append(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": a, "b": b}},
            }
        )
    return b"".join(json.dumps(m).encode() + b"\n" for m in out)


def record(trace: Path, version: str, extra: int, calls: list[tuple[int, int]]) -> Path:
    """A real ``mcpsniff stdio`` recording of the adder server answering ``calls``."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpsniff",
            "stdio",
            "--trace",
            str(trace),
            "--",
            sys.executable,
            "-c",
            SERVER,
            version,
            str(extra),
        ],
        input=client_lines(calls),
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return trace


def run_diff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "diff", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )


def test_the_same_server_twice_answers_alike_exit_0(tmp_path: Path) -> None:
    a = record(tmp_path / "a.jsonl", "1.0", 0, [(1, 2), (3, 4)])
    b = record(tmp_path / "b.jsonl", "1.0", 0, [(1, 2), (3, 4)])
    done = run_diff(str(a), str(b))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].endswith(
        "3 requests aligned; 3 answered alike, 0 differently, 0 only in A, 0 only in B: "
        "the same answers"
    )


def test_a_changed_server_is_named_field_by_field_exit_1(tmp_path: Path) -> None:
    a = record(tmp_path / "a.jsonl", "1.0", 0, [(1, 2), (3, 4)])
    # Version 1.1 adds 1 to every sum, and the client asks in another order.
    b = record(tmp_path / "b.jsonl", "1.1", 1, [(3, 4), (1, 2), (5, 5)])
    done = run_diff(str(a), str(b))
    assert done.returncode == 1
    out = done.stdout
    assert "≠ initialize" in out
    assert '    $.result.serverInfo.version\n      A: "1.0"\n      B: "1.1"' in out
    # Aligned by arguments, not by position: (1, 2) with (1, 2), whatever the order.
    assert "≠ tools/call add  (A seq 5, B seq 6)" in out
    assert '      A: "3"\n      B: "4"' in out
    assert "+ tools/call add  (only in B, seq 7)" in out
    assert "structuredContent" not in out  # a timestamp, left out
    assert out.splitlines()[-1].endswith(
        "4 requests aligned; 0 answered alike, 3 differently, 0 only in A, 1 only in B: they differ"
    )
    as_json = json.loads(run_diff("--format", "json", str(a), str(b)).stdout)
    assert as_json["differ"] is True
    assert [r["same"] for r in as_json["requests"]] == [False, False, False, False]
    assert as_json["requests"][0]["differences"] == [
        {"path": "$.result.serverInfo.version", "change": "changed", "a": "1.0", "b": "1.1"}
    ]


def test_alignment_takes_the_nth_request_of_a_kind_with_the_nth(tmp_path: Path) -> None:
    a = record(tmp_path / "a.jsonl", "1.0", 0, [(1, 1), (1, 1)])
    b = record(tmp_path / "b.jsonl", "1.0", 0, [(1, 1)])
    pairs = align(exchanges(load_script(a)), exchanges(load_script(b)))
    assert [(p.a is not None, p.b is not None, p.same) for p in pairs] == [
        (True, True, True),
        (True, True, True),
        (True, False, False),
    ]
    assert differs(pairs)


def test_an_unreadable_trace_exits_2_with_one_line(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text("not a trace\n")
    done = run_diff(str(a), str(a))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("mcpsniff diff: ")


def test_the_page_form_is_bounded_and_says_how_much(tmp_path: Path) -> None:
    from mcpsniff.replay.compare import Difference
    from mcpsniff.replay.trace_diff import (
        PAGE_FIELDS,
        PAGE_PAIRS,
        PAGE_VALUE,
        Aligned,
        Exchange,
        compare_sessions,
        page_value,
    )

    huge = {"text": "x" * (PAGE_VALUE * 3)}
    many = [Difference(("result", i), i, i + 1) for i in range(PAGE_FIELDS + 5)]
    a = Exchange("k", "tools/call " + "n" * 1000, 3, huge)
    pairs = [Aligned(a, a, many)] * (PAGE_PAIRS + 7)
    page = page_value(pairs)
    assert page["total"] == PAGE_PAIRS + 7 and len(page["requests"]) == PAGE_PAIRS
    first = page["requests"][0]
    assert len(first["a"]["answer"]) == PAGE_VALUE and first["a"]["answer"].endswith("…")
    assert len(first["a"]["label"]) == 300
    assert first["fields"] == PAGE_FIELDS + 5 and len(first["differences"]) == PAGE_FIELDS
    assert first["differences"][0] == {
        "path": "$.result[0]",
        "change": "changed",
        "a": "0",
        "b": "1",
    }
    # Real recordings: the same as `mcpsniff diff --format json` says, and a clear error.
    before = record(tmp_path / "a.jsonl", "1.0", 0, [(1, 2)])
    after = record(tmp_path / "b.jsonl", "1.1", 0, [(1, 2)])
    result = compare_sessions(before, _only_session(before), after, _only_session(after))
    assert result["differ"] is True and result["total"] == 2 and result["same"] == 1
    assert result["requests"][0]["differences"][0]["path"] == "$.result.serverInfo.version"
    missing = compare_sessions(before, "no-such", after, _only_session(after))
    assert set(missing) == {"error"} and "no session 'no-such'" in missing["error"]


def _only_session(path: Path) -> str:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.trace.reader import TraceReader

    with TraceReader(path) as reader:
        (name,) = {r.session for r in reader.records() if isinstance(r, FrameRecord)}
    return name
