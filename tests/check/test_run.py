"""``check`` on the recordings/ gallery reports what recordings/README.md says; ``run_check``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.check.run import CheckError, CheckOptions, run_check
from mcpsniff.cli import main

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"

# trace -> (exit code of `check`, sorted (severity, rule, cause) of `check --fail-on info`)
EXPECTED = {
    "stdout-pollution": (
        1,
        [("error", "JR-PARSE", "log-line"), ("error", "STDIO-STDOUT-CLEAN", "log-line")],
    ),
    "missing-initialized": (
        1,
        [("error", "LC-INITIALIZED-MISSING", None), ("info", "LC-INITIALIZED-ORDER", None)],
    ),
    "out-of-order-batch": (0, []),
    "string-id-echo": (1, [("error", "JR-RESP-ID", "id-type")]),
    "orphan-response": (1, [("error", "JR-RESP-ID", "unknown-id")]),
    "unanswered-request": (1, [("error", "JR-RESP-REQUIRED", None)]),
    "empty-batch": (1, [("error", "JR-TOPLEVEL", "empty-batch")]),
    "trailing-comma": (
        1,
        [
            ("error", "JR-PARSE", "trailing-comma"),
            ("error", "STDIO-STDIN-CLEAN", "trailing-comma"),
        ],
    ),
    # 26 lines of one indented response: one root finding and its two dependents
    "pretty-printed-response": (
        1,
        [
            ("error", "JR-PARSE", "pretty-printed"),
            ("error", "STDIO-FRAMING", "pretty-printed"),
            ("error", "STDIO-STDOUT-CLEAN", "pretty-printed"),
        ],
    ),
    "clean-2025-11-25": (0, []),
    "clean-2026-07-28": (0, []),
}


def test_gallery_is_complete_and_documented() -> None:
    names = {p.stem for p in RECORDINGS.glob("*.jsonl") if not p.stem.startswith("demo-")}
    assert names == set(EXPECTED)
    readme = (RECORDINGS / "README.md").read_text()
    for name in EXPECTED:
        assert f"`{name}.jsonl`" in readme


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_check_reports_what_the_readme_says(name: str) -> None:
    code, findings = EXPECTED[name]
    path = str(RECORDINGS / f"{name}.jsonl")
    runner = CliRunner()
    text = runner.invoke(main, ["check", path])
    assert text.exit_code == code, text.output
    as_json = runner.invoke(main, ["check", "--format", "json", "--fail-on", "info", path])
    got = sorted(
        (f["severity"], f["rule"], f["data"].get("cause"))
        for f in map(orjson.loads, as_json.output.splitlines())
    )
    assert got == sorted(findings)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gallery_is_up_to_date_with_the_generator(name: str, tmp_path: Path) -> None:
    """The committed traces are exactly what today's analyzer writes for them.

    If this fails after a change to the analyzer, run tools/make_recordings.py.
    """
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import make_recordings
    finally:
        sys.path.remove(str(ROOT / "tools"))
    (scenario,) = [s for s in make_recordings.SCENARIOS if s.name == name]
    make_recordings.record(scenario, tmp_path / "out.jsonl")
    committed = (RECORDINGS / f"{name}.jsonl").read_bytes()
    assert (tmp_path / "out.jsonl").read_bytes() == committed


# --------------------------------------------------------------------------- run_check itself


def _run(options: CheckOptions) -> tuple[int, str, list[str], list[str]]:
    """``run_check`` with its three outputs captured: (failing, out, said, warned)."""
    out = io.StringIO()
    said: list[str] = []
    warned: list[str] = []
    failing = run_check(options, out, said.append, warned.append)
    return failing, out.getvalue(), said, warned


def test_run_check_writes_a_json_line_per_finding_and_counts_the_failing() -> None:
    failing, out, said, warned = _run(CheckOptions(RECORDINGS / "string-id-echo.jsonl", fmt="json"))
    assert failing == 1
    (line,) = out.splitlines()
    assert orjson.loads(line)["rule"] == "JR-RESP-ID"
    assert said == [] and warned == []


def test_run_check_on_a_clean_trace_fails_nothing() -> None:
    failing, out, said, warned = _run(CheckOptions(RECORDINGS / "clean-2026-07-28.jsonl"))
    assert failing == 0
    assert out == "" and warned == []
    assert said[-1] == "0 finding(s) in 1 session(s); nothing at or above error"


def test_run_check_counts_by_the_fail_on_threshold() -> None:
    trace = RECORDINGS / "missing-initialized.jsonl"
    assert _run(CheckOptions(trace, fail_on="error"))[0] == 1
    failing, _out, said, _warned = _run(CheckOptions(trace, fail_on="info"))
    assert failing == 2
    assert said[-1] == "2 finding(s) in 1 session(s); 2 finding(s) at or above info"


def test_run_check_explains_every_rule_it_found() -> None:
    _failing, _out, said, _warned = _run(
        CheckOptions(RECORDINGS / "string-id-echo.jsonl", explain="all")
    )
    verdict = said.index("1 finding(s) in 1 session(s); 1 finding(s) at or above error")
    assert any("JR-RESP-ID" in line for line in said[verdict + 1 :])


def test_run_check_on_a_missing_trace_raises_one_line(tmp_path: Path) -> None:
    with pytest.raises(CheckError) as caught:
        _run(CheckOptions(tmp_path / "absent.jsonl"))
    assert str(caught.value) == f"{tmp_path / 'absent.jsonl'}: no such file"


def test_run_check_warns_about_a_torn_last_line_and_still_reports(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes((RECORDINGS / "string-id-echo.jsonl").read_bytes() + b'{"type":"fra')
    failing, _out, said, warned = _run(CheckOptions(torn))
    assert failing == 1
    assert len(warned) == 1 and "is incomplete, probably cut off by a crash" in warned[0]
    assert said[-1].endswith("1 finding(s) at or above error")
