"""Read-only and path-confined: only the roots given, a path outside them refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpsniff.agent.access import Refused, TraceAccess

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    inside = tmp_path / "traces"
    inside.mkdir()
    (inside / "a.jsonl").write_bytes((RECORDINGS / "string-id-echo.jsonl").read_bytes())
    (tmp_path / "secret.jsonl").write_bytes((RECORDINGS / "empty-batch.jsonl").read_bytes())
    return inside


def test_a_trace_inside_a_root_is_allowed(roots: Path) -> None:
    access = TraceAccess([roots])
    assert access.confined(str(roots / "a.jsonl")) == (roots / "a.jsonl").resolve()


@pytest.mark.parametrize(
    "name",
    ["../secret.jsonl", "/etc/passwd", "", "x\x00y"],
)
def test_paths_outside_are_refused(roots: Path, name: str) -> None:
    access = TraceAccess([roots])
    target = str(roots / name) if name.startswith("..") else name
    with pytest.raises(Refused):
        access.confined(target)


def test_a_link_out_of_the_root_is_refused(roots: Path) -> None:
    os.symlink(roots.parent / "secret.jsonl", roots / "link.jsonl")
    access = TraceAccess([roots])
    with pytest.raises(Refused, match="outside the traces"):
        access.confined(str(roots / "link.jsonl"))


def test_a_file_root_allows_that_file_only(roots: Path) -> None:
    access = TraceAccess([roots / "a.jsonl"])
    assert access.confined(str(roots / "a.jsonl")).name == "a.jsonl"
    with pytest.raises(Refused):
        access.confined(str(roots.parent / "secret.jsonl"))


def test_the_library_sees_only_the_roots(roots: Path) -> None:
    access = TraceAccess([roots])
    access.refresh()
    sessions = access.library.sessions()
    assert [s["file"] for s in sessions] == ["a.jsonl"]
    path, session = access.session(sessions[0]["id"])
    assert path.name == "a.jsonl" and session.key == "string-id-echo"
    with pytest.raises(Refused, match="no session"):
        access.session("99:0")
    with pytest.raises(Refused):
        access.session(5)


def test_nothing_is_written(roots: Path) -> None:
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in roots.parent.rglob("*")
              if p.is_file()}  # fmt: skip
    access = TraceAccess([roots.parent])
    access.refresh()
    access.library.sessions()
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in roots.parent.rglob("*")
             if p.is_file()}  # fmt: skip
    assert after == before
