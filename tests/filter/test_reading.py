"""LazyTraceRecords (filter/reading.py) on two-lane traces: the one-lane records, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.filter.reading import LazyTraceRecords
from tests.lane_layout import two_lane

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "recordings").glob("*.jsonl")) + sorted(
    (ROOT / "tests" / "data" / "guard").glob("*.jsonl")
)


@pytest.mark.parametrize("source", CORPUS, ids=lambda p: p.name)
@pytest.mark.parametrize(("seed", "lag", "mixed"), [(0, 2, False), (1, 9, True)])
def test_a_two_lane_layout_reads_as_the_one_lane_trace(
    tmp_path: Path, source: Path, seed: int, lag: int, mixed: bool
) -> None:
    laid = tmp_path / source.name
    laid.write_bytes(two_lane(source.read_bytes(), seed, lag, mixed=mixed))
    skipped: list[str] = []
    got = list(LazyTraceRecords(laid, on_skip=skipped.append))
    assert got == list(LazyTraceRecords(source)) and skipped == []


def test_a_hostile_lane_record_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    source = ROOT / "recordings" / "unanswered-request.jsonl"
    header, *lines = two_lane(source.read_bytes(), 2, 3).splitlines(keepends=True)
    laid = tmp_path / "t.jsonl"
    laid.write_bytes(header + b'{"type":"lane","session":"x","through":-5}\n' + b"".join(lines))
    skipped: list[str] = []
    assert list(LazyTraceRecords(laid, on_skip=skipped.append)) == list(LazyTraceRecords(source))
    reason = "through is not a seq (an integer from 0 to 2**63-1)"
    assert skipped == [f"{laid}: line 2: {reason}; the record was skipped"]
