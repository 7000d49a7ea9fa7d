"""``mcpsniff stats`` on the gallery and on a generated trace, figures asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import FrameRecord, MessageRecord
from mcpsniff.stats.compute import percentile
from mcpsniff.trace.reader import TraceReader
from tests.show.test_run import FULL, frames_copy
from tests.support import hostile_trace

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_trace import generate  # noqa: E402


def stats_json(*args: str) -> dict:
    result = CliRunner().invoke(main, ["stats", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return orjson.loads(result.output)


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_gallery_clean_trace() -> None:
    doc = stats_json(str(RECORDINGS / "clean-2025-11-25.jsonl"))
    assert doc["messages"] == 14 and doc["sessions"] == 1
    call = doc["methods"]["tools/call"]
    assert (call["requests"], call["responses"], call["errors"]) == (2, 2, 0)
    assert (call["p50_ms"], call["p99_ms"], call["max_ms"]) == (12.5, 50.0, 50.0)
    assert doc["methods"]["notifications/progress"]["notifications"] == 2
    assert doc["tools"]["add"]["requests"] == 2
    assert all(layer["total"] == 0 for layer in doc["errors_by_layer"].values())
    assert doc["unanswered"] == {}


def test_gallery_unanswered_request_and_findings() -> None:
    doc = stats_json(str(RECORDINGS / "unanswered-request.jsonl"))
    assert doc["unanswered"] == {"tools/call": 1}
    assert doc["findings"]["error"] == 1


def test_text_report_names_layers_and_tools() -> None:
    result = CliRunner().invoke(main, ["stats", str(RECORDINGS / "clean-2025-11-25.jsonl")])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    (call,) = [line for line in lines if line.startswith("tools/call ")]
    assert call.split() == [
        "tools/call",
        "2",
        "-",
        "-",
        "-",
        "12.5ms",
        "50.0ms",
        "50.0ms",
        "50.0ms",
    ]
    assert any(line.strip().startswith("tool error (isError: true)") for line in lines)
    # The context cost of the listed tools comes last (mcpsniff/guard/tools_report.py).
    cost = lines.index("context cost of definitions (what each server adds to a model's context)")
    assert lines[cost - 2] == "unanswered requests: 0"
    assert lines[-1].startswith("  tokens by o200k_base, cl100k_base;")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gen") / "trace.jsonl"
    generate(path, 6000, seed=3)
    return path


def expected_from_records(path: Path) -> dict[str, int]:
    """The same figures, counted straight from the records, not through views."""
    frames: dict[int, FrameRecord] = {}
    requests: dict[int, MessageRecord] = {}
    counts = {"calls": 0, "tool_errors": 0, "rpc_errors": 0, "server_layer": 0, "cancels": 0}
    with TraceReader(path) as reader:
        for record in reader.records():
            if isinstance(record, FrameRecord):
                frames[record.seq] = record
            elif isinstance(record, MessageRecord):
                if record.kind == "request":
                    requests[record.frame] = record
                    counts["calls"] += record.method == "tools/call"
                elif record.kind == "notification":
                    counts["cancels"] += record.method == "notifications/cancelled"
                elif record.kind == "error":
                    counts["rpc_errors"] += 1
                    counts["server_layer"] += -32099 <= record.error_code <= -32000
                elif record.answers is not None:
                    request = requests.get(record.answers)
                    if request is not None and request.method == "tools/call":
                        body = orjson.loads(frames[record.frame].raw)
                        counts["tool_errors"] += body["result"].get("isError") is True
    return counts


def test_generated_trace_figures_match_a_direct_count(generated: Path) -> None:
    doc = stats_json(str(generated))
    expected = expected_from_records(generated)
    assert doc["methods"]["tools/call"]["requests"] == expected["calls"] > 1000
    assert doc["errors_by_layer"]["tool"]["total"] == expected["tool_errors"] > 0
    assert doc["errors_by_layer"]["server"]["total"] == expected["server_layer"]
    total_rpc = sum(
        doc["errors_by_layer"][layer]["total"] for layer in ("protocol", "server", "application")
    )
    assert total_rpc == expected["rpc_errors"] > 0
    assert doc["cancellations"] == expected["cancels"] > 0
    assert sum(tool["requests"] for tool in doc["tools"].values()) == expected["calls"]
    call = doc["methods"]["tools/call"]
    assert call["p50_ms"] <= call["p95_ms"] <= call["p99_ms"] <= call["max_ms"]


def test_filter_keeps_only_matching_messages(generated: Path) -> None:
    everything = stats_json(str(generated))
    (tool,) = sorted(everything["tools"])[:1]
    doc = stats_json(str(generated), "--filter", f"gen_ai.tool.name == {tool}")
    assert list(doc["tools"]) == [tool]
    assert doc["tools"][tool]["requests"] == everything["tools"][tool]["requests"]
    assert doc["tools"][tool]["errors"] == everything["tools"][tool]["errors"]
    assert set(doc["methods"]) <= {"tools/call", "notifications/cancelled"}
    slow = stats_json(str(generated), "--filter", "latency > 100ms")
    assert slow["methods"]["tools/call"]["p50_ms"] > 100


def test_bad_filter_and_bad_trace_exit_2_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["stats", str(RECORDINGS / "clean-2025-11-25.jsonl"), "--filter", "latency > soon"]
    )
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "mcpsniff stats: --filter: bad duration 'soon' (a number with ns, us, ms, s, m or h; "
        "plain means ms) (at column 11)",
        "  latency > soon",
        "            ^",
    ]
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"hello\n")
    result = CliRunner().invoke(main, ["stats", str(junk)])
    assert result.exit_code == 2
    assert result.output == f"mcpsniff stats: {junk}: not an mcpsniff trace (line 1 is not JSON)\n"


# ``stats``'s "errors by layer" printed a non-integer error code whole (200 KB on one
# line), where every other name in its tables is cut at 36.


def test_stats_cuts_a_huge_error_code_like_every_other_name(tmp_path: Path) -> None:
    path = hostile_trace(tmp_path, code="c" + "W" * 200_000)
    result = CliRunner().invoke(main, ["stats", str(path)])
    assert result.exit_code == 0, result.output
    assert "c" + "W" * 34 + "…" in result.output
    assert max(len(line) for line in result.output.splitlines()) < 200


# ----------------------------------------------------------------------------
# `mcpsniff stats` on a trace of frames without message records: its frames are
# analyzed, as `check` analyzes them, instead of counting "0 messages".


@pytest.fixture
def frames_only(tmp_path: Path) -> Path:
    return frames_copy(tmp_path)


def _stats(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "stats", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_frames_are_analyzed_and_counted_as_recorded_ones(frames_only: Path) -> None:
    recorded = _stats("--format", "json", str(FULL))
    analyzed = _stats("--format", "json", str(frames_only))
    assert analyzed.returncode == 0, analyzed.stderr
    got = orjson.loads(analyzed.stdout)
    assert got == orjson.loads(recorded.stdout)
    assert got["messages"] == 8 and got["unanswered"] == {"tools/call": 1}
    assert analyzed.stderr.splitlines() == [
        f"mcpsniff stats: {frames_only} holds frames but no message records: "
        "analyzing its frames with today's rules, as check does"
    ]


def test_a_filter_sees_the_analyzed_findings(frames_only: Path) -> None:
    args = ["--format", "json", "--filter", "severity >= error"]
    recorded = orjson.loads(_stats(*args, str(FULL)).stdout)
    analyzed = orjson.loads(_stats(*args, str(frames_only)).stdout)
    assert analyzed == recorded
    assert analyzed["messages"] == 1
