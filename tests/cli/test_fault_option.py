"""cli/fault_option.py: --fault and --faults parsed, mistakes refused on one line (plus a caret)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.cli.fault_option import parsed_faults


def test_specs_and_files(tmp_path: Path) -> None:
    path = tmp_path / "faults"
    path.write_text("# slow\ndelay 10ms\n")
    faults = parsed_faults("stdio", ("drop times 1",), (str(path),), http=False)
    assert [f.action for f in faults] == ["delay", "drop"]
    assert parsed_faults("stdio", (), (), http=False) == []


def test_a_mistake_exits_2_with_its_column(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parsed_faults("stdio", ("drop when (",), (), http=False)
    assert exited.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("mcpsniff stdio: --fault: ") and "(at column 12)" in err[0]
    assert err[1:] == ["  drop when (", "             ^"]


def test_a_huge_spec_gets_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parsed_faults("stdio", ("drop when " + "x or " * 5000,), (), http=False)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "longer than 4096 characters (at column 4097)" in err[0]


def test_http_only_actions_are_refused_on_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parsed_faults("stdio", ("status 503",), (), http=False)
    assert "status needs an HTTP relay" in capsys.readouterr().err
