"""One trace of many sessions checked by several workers reports what one process reports."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from mcpsniff.check import split
from mcpsniff.check.run import CheckOptions, run_check
from mcpsniff.check.split import check_split
from mcpsniff.core.analyzer import Analyzer, replay_notable
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord
from mcpsniff.trace.codec import encode_line
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
#: Recordings with findings of several kinds, sessions ended and not.
SOURCES = [
    "stdout-pollution",
    "missing-initialized",
    "string-id-echo",
    "orphan-response",
    "unanswered-request",
    "pretty-printed-response",
    "trailing-comma",
    "clean-2025-11-25",
    "clean-2026-07-28",
    "empty-batch",
]


def interleaved(path: Path, copies: int, *, ended: bool = True, step: int = 3) -> Path:
    """A trace of ``copies`` times each source recording's session, their inputs interleaved.

    Session ``i`` takes ``step`` inputs at a time in turn with the others, so
    runs of frames break where another session's input comes between. With
    ``ended=False`` the odd sessions lose their ``session-end``.
    """
    queues = []
    for copy in range(copies):
        for number, name in enumerate(SOURCES):
            with TraceReader(RECORDINGS / f"{name}.jsonl") as reader:
                inputs = list(reader.inputs())
            key = f"{name}-{copy}"
            if not ended and (copy + number) % 2:
                inputs = [r for r in inputs if getattr(r, "event", None) != "session-end"]
            queues.append((key, inputs))
    writer = TraceWriter.create(path, meta={"test": "split"}, created=1.0, overwrite=True)
    seq = 0
    t = 2.0
    while any(inputs for _, inputs in queues):
        for key, inputs in queues:
            for record in inputs[:step]:
                seq += 1
                t += 0.001
                if type(record) is FrameRecord:
                    writer.write(
                        FrameRecord(seq, t, key, record.direction, record.transport, record.raw)
                    )
                else:
                    assert type(record) is EventRecord
                    writer.write(dataclasses.replace(record, seq=seq, t=t, session=key))
            del inputs[:step]
    writer.close()
    return path


def _check(path: Path, fmt: str, jobs: int) -> tuple[str, str, int]:
    out, said, warned = io.StringIO(), [], []
    options = CheckOptions(trace=path, fmt=fmt, fail_on="info", jobs=jobs)
    failing = run_check(options, out, said.append, warned.append)
    return out.getvalue() + "\n".join(said), "\n".join(warned), failing


@pytest.fixture(autouse=True)
def _split_small_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "MIN_SPLIT_BYTES", 0)


@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "junit"])
@pytest.mark.parametrize("ended", [True, False])
def test_workers_report_what_one_process_reports(tmp_path: Path, fmt: str, ended: bool) -> None:
    path = interleaved(tmp_path / "many.jsonl", 3, ended=ended)
    assert check_split(path, 3) is not None  # split indeed, not checked in one process
    alone = _check(path, fmt, 1)
    assert alone[2] > 20
    assert _check(path, fmt, 2) == alone
    assert _check(path, fmt, 3) == alone
    if not ended:
        assert "has no session-end" in alone[1]


@pytest.mark.parametrize("workers", [2, 4])
def test_the_merge_is_one_replays_order(tmp_path: Path, workers: int) -> None:
    path = interleaved(tmp_path / "many.jsonl", 2, ended=False, step=1)
    merged = check_split(path, workers)
    assert merged is not None
    with TraceReader(path) as reader:
        analyzer = Analyzer()
        alone = [_key(r) for r in replay_notable(reader.inputs(), analyzer)]
    assert [_key(r) for r in merged.records()] == alone
    made_up = [r for r in alone if r[0] == "session-end" and r[3]]
    assert len(made_up) == 10  # the sessions left open, ended after the last input
    assert sorted(merged.sessions()) == sorted(analyzer.sessions)


def _key(record: FindingRecord | EventRecord) -> tuple:
    if type(record) is FindingRecord:
        return (record.rule, record.seq, record.session, record.message)
    return (record.event, record.seq, record.session, record.data.get("synthetic"))


def test_facts_shared_across_sessions_keep_the_check_in_one_process(tmp_path: Path) -> None:
    path = interleaved(tmp_path / "many.jsonl", 2)
    with path.open("ab") as trace:
        # An HTTP exchange's number is a fact of the capture, not of one session
        # (rules/http.py): a worker seeing one session's exchanges cannot know it.
        request = EventRecord(10_000, 9.0, "clean-2025-11-25-0", "http-request", {"exchange": 1})
        trace.write(encode_line(request))
    # The worker owning that session gives up, which leaves the check to one
    # process; and the guess does not even start workers on such a trace.
    shares = [split.check_share(path, k, 2) for k in (0, 1)]
    assert shares.count(None) == 1
    assert split.many_sessions(path) is False
    assert check_split(path, 2) is None
    assert _check(path, "json", 2) == _check(path, "json", 1)


def test_an_unreadable_trace_falls_back_to_one_process(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"not a trace\n")
    assert check_split(path, 2) is None


def test_one_job_or_a_small_trace_is_not_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = interleaved(tmp_path / "many.jsonl", 1)
    assert check_split(path, 1) is None
    monkeypatch.setattr(split, "MIN_SPLIT_BYTES", path.stat().st_size + 1)
    assert check_split(path, 2) is None


def test_a_trace_of_one_session_is_not_worth_a_split(tmp_path: Path) -> None:
    one = interleaved(tmp_path / "one.jsonl", 1)
    lines = one.read_bytes().splitlines(keepends=True)
    keep = [lines[0]] + [line for line in lines[1:] if b'"session":"string-id-echo-0"' in line]
    single = tmp_path / "single.jsonl"
    single.write_bytes(b"".join(keep))
    assert split.many_sessions(one) is True
    assert split.many_sessions(single) is False
    assert check_split(single, 2) is None
    assert check_split(one, 2) is not None


def test_a_worker_that_dies_leaves_the_check_to_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = interleaved(tmp_path / "many.jsonl", 2)
    monkeypatch.setattr(split, "check_share", _die)
    assert check_split(path, 2) is None
    assert _check(path, "json", 2) == _check(path, "json", 1)


def _die(*args: object) -> None:
    import os

    os._exit(9)


def test_skipped_and_torn_lines_are_told_once_as_by_one_process(tmp_path: Path) -> None:
    path = interleaved(tmp_path / "many.jsonl", 2)
    lines = path.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    hostile = b'{"type":"frame","seq":"x","t":1.0}\n'  # a record of the wrong shape
    torn = b'{"type":"frame","seq":99999,"t":9.0,"session":"stdout-poll'
    path.write_bytes(b"".join([*lines[:middle], hostile, *lines[middle:], torn]))
    assert check_split(path, 2) is not None
    alone = _check(path, "text", 1)
    assert _check(path, "text", 2) == alone
    warnings = alone[1].splitlines()
    assert len(warnings) == 2
    assert "line" in warnings[0] and "incomplete" in warnings[1]
