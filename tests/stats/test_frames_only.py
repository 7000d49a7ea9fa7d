"""``mcpsniff stats`` on a trace of frames without message records: its frames are
analyzed, as ``check`` analyzes them, instead of counting "0 messages"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.show.test_frames_only import FULL, frames_copy


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
