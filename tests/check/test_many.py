"""``check`` over several traces: the same output for any ``--jobs``, in the order given."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mcpsniff.check.many import (
    TraceVerdict,
    check_traces,
    default_jobs,
    handout_order,
    labelled,
)
from mcpsniff.check.run import CheckOptions

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
#: Recordings with findings and without, so that reports of different lengths interleave.
GALLERY = [
    RECORDINGS / "stdout-pollution.jsonl",
    RECORDINGS / "clean-2025-11-25.jsonl",
    RECORDINGS / "pretty-printed-response.jsonl",
    RECORDINGS / "orphan-response.jsonl",
    RECORDINGS / "unanswered-request.jsonl",
]


def _run(paths: list[Path], jobs: int, fmt: str = "text") -> tuple[str, str, list[TraceVerdict]]:
    out, err = io.StringIO(), io.StringIO()
    options = [labelled(CheckOptions(trace=p, fmt=fmt, fail_on="info"), True) for p in paths]
    verdicts = check_traces(options, jobs, out, err)
    return out.getvalue(), err.getvalue(), verdicts


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_workers_write_what_one_process_writes(fmt: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    paths = [*GALLERY, missing, *GALLERY[:2]]
    alone = _run(paths, 1, fmt)
    assert _run(paths, 3, fmt) == alone
    out, err, verdicts = alone
    assert [v.trace for v in verdicts] == paths
    assert [v.failing for v in verdicts] == [2, 0, 3, 1, 1, 0, 2, 0]
    assert [v.error is not None for v in verdicts] == [False] * 5 + [True] + [False] * 2
    assert err == f"mcpsniff check: {missing}: no such file\n"
    if fmt == "json":
        rows = [orjson.loads(line) for line in out.splitlines()]
        assert [(Path(r["trace"]).name, r["rule"]) for r in rows][:3] == [
            ("stdout-pollution.jsonl", "JR-PARSE"),
            ("stdout-pollution.jsonl", "STDIO-STDOUT-CLEAN"),
            ("pretty-printed-response.jsonl", "JR-PARSE"),
        ]
        assert len(rows) == sum(v.failing for v in verdicts)
    else:
        heads = [line for line in out.splitlines() if line.startswith("trace ")]
        assert heads == [f"trace {p}" for p in paths]


def test_an_error_naming_a_path_that_is_no_utf8_crosses_from_a_worker(tmp_path: Path) -> None:
    """A trace name with bytes that are no UTF-8 (lone surrogates in Python): its error intact."""
    folder = os.fsencode(tmp_path)
    Path(os.fsdecode(folder + b"/bad\xff.jsonl")).write_bytes(b"not json\n")
    paths = [
        GALLERY[1],
        Path(os.fsdecode(folder + b"/bad\xff.jsonl")),
        Path(os.fsdecode(folder + b"/missing\xfe.jsonl")),
    ]
    alone = _run(paths, 1)
    assert _run(paths, 2) == alone
    _, err, verdicts = alone
    assert [v.error is not None for v in verdicts] == [False, True, True]
    assert "\udcff" in verdicts[1].error and "not an mcpsniff trace" in verdicts[1].error
    assert verdicts[2].error.endswith("missing\udcfe.jsonl: no such file")
    assert "died" not in err


def test_warnings_of_a_trace_stay_with_it(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes((RECORDINGS / "orphan-response.jsonl").read_bytes() + b'{"type":"fra')
    paths = [GALLERY[0], torn, GALLERY[1]]
    out, err, _ = _run(paths, 2)
    assert _run(paths, 1) == (out, err, _)
    assert err.startswith(f"mcpsniff check: warning: {torn}: ")
    assert err.count("\n") == 1


def test_default_jobs_is_the_cores_this_process_may_use() -> None:
    assert default_jobs() == len(os.sched_getaffinity(0))


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "mcpsniff", "check", *args]
    return subprocess.run(command, capture_output=True, env=env, check=False, timeout=120)


def test_cli_several_traces_sum_up_and_exit_by_the_worst() -> None:
    paths = [str(p) for p in GALLERY[:2]]
    parallel = _cli("--jobs", "2", *paths)
    assert parallel.returncode == 1
    assert parallel.stdout == _cli("--jobs", "1", *paths).stdout
    assert parallel.stdout.decode().endswith("2 trace(s); 2 finding(s) at or above error\n")
    clean = _cli(str(GALLERY[1]), str(GALLERY[1]))
    assert clean.returncode == 0
    assert clean.stdout.decode().endswith("2 trace(s); nothing at or above error\n")


def test_cli_an_unreadable_trace_is_named_and_the_rest_still_checked(tmp_path: Path) -> None:
    result = _cli(str(tmp_path / "nope.jsonl"), str(GALLERY[0]))
    assert result.returncode == 2
    assert result.stderr.decode() == f"mcpsniff check: {tmp_path / 'nope.jsonl'}: no such file\n"
    assert "2 finding(s) in 1 session(s)" in result.stdout.decode()
    assert result.stdout.decode().endswith(
        "2 trace(s), 1 unreadable; 2 finding(s) at or above error\n"
    )


def test_cli_one_trace_is_reported_as_before() -> None:
    result = _cli("--format", "json", str(GALLERY[0]))
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["rule"] for r in rows] == ["JR-PARSE", "STDIO-STDOUT-CLEAN"]
    assert all("trace" not in r for r in rows)
    assert not result.stdout.startswith(b"trace ")


@pytest.mark.parametrize("option", [["--format", "sarif"], ["--as", "2025-11-25"]])
def test_cli_one_trace_options_refuse_several(option: list[str]) -> None:
    result = _cli(*option, str(GALLERY[0]), str(GALLERY[1]))
    assert result.returncode == 2
    assert b"checks one TRACE at a time" in result.stderr


def test_cli_a_filter_reaches_the_workers() -> None:
    paths = [str(p) for p in GALLERY[:3]]
    args = ["--format", "json", "--filter", "rule == JR-PARSE", *paths]
    parallel = _cli("--jobs", "2", *args)
    assert parallel.stderr == b""
    assert parallel.stdout == _cli("--jobs", "1", *args).stdout
    rows = [orjson.loads(line) for line in parallel.stdout.splitlines()]
    assert [(Path(r["trace"]).name, r["rule"]) for r in rows] == [
        ("stdout-pollution.jsonl", "JR-PARSE"),
        ("pretty-printed-response.jsonl", "JR-PARSE"),
    ]


def _die(*args: object) -> None:
    os._exit(9)


def test_a_worker_that_dies_leaves_its_trace_without_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpsniff.check import many

    monkeypatch.setattr(many, "_check_to_files", _die)
    out, err, verdicts = _run(GALLERY[:2], 2)
    assert [v.error for v in verdicts] == [
        f"{p}: the process checking it died" for p in GALLERY[:2]
    ]
    assert err.count("the process checking it died") == 2
    assert out == ""


def test_the_largest_traces_are_handed_out_first(tmp_path: Path) -> None:
    small, large, same = (tmp_path / name for name in ("small.jsonl", "large.jsonl", "same.jsonl"))
    small.write_bytes(b"x")
    large.write_bytes(b"x" * 100)
    same.write_bytes(b"y")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    paths = [small, tmp_path / "missing.jsonl", large, fifo, same]
    options = [CheckOptions(trace=p) for p in paths]
    # Largest first; a trace of unknown size (missing, a pipe) counts as empty;
    # ties keep the order given.
    assert handout_order(options) == [2, 0, 4, 1, 3]


def test_traces_of_different_sizes_are_reported_in_argument_order(tmp_path: Path) -> None:
    """Handed out largest first, the reports still come in the order given."""
    paths = sorted(GALLERY, key=lambda p: p.stat().st_size)
    assert handout_order([CheckOptions(trace=p) for p in paths]) == list(range(len(paths)))[::-1]
    for fmt in ("text", "json"):
        alone = _run(paths, 1, fmt)
        assert _run(paths, 2, fmt) == alone
        assert [v.trace for v in alone[2]] == paths


def test_one_process_keeps_nothing_of_the_traces_it_checked_before() -> None:
    """``--jobs 1`` over many traces: each trace's check leaves no object behind.

    ``run_check`` freezes what is alive when it starts (``gc.freeze``), so any
    cycle an earlier trace left uncollected would stay for good, and each
    later trace would run in a larger heap. The objects the collector knows
    (frozen ones included) stay as many from one round of traces to the next.
    """
    import gc

    paths = sorted(RECORDINGS.glob("*.jsonl"))
    counts = []
    for fmt in ("text", "json", "text", "json", "text", "json"):
        _run(paths, 1, fmt)
        counts.append(gc.get_freeze_count() + len(gc.get_objects()))
    # The first rounds import what checking needs; after that, nothing grows.
    # (A leak of a single object per trace checked would add 11 a round.)
    assert max(counts[2:]) - min(counts[2:]) < 10, counts
