"""Every trace in the recordings/ gallery reports what recordings/README.md says."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

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
