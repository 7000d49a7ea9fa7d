"""``--set mcpsniff_fault=SPEC`` on a real ``mitmdump`` (reverse mode) in front of
server-everything, with the official SDK 1.x client over Streamable HTTP
(``tests/e2e/peers/fault_client.py``): the misbehaviour the client sees, the
trace, and ``check``'s verdict, as for ``mcpsniff http --fault``
(``tests/intercept/test_http_faults.py``, whose peers and helpers these tests share).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.intercept.test_http_faults import (
    ECHO,
    SDK1_PYTHON,
    Run,
    _ids,
    client_run,
    everything,
    judged,
)
from tests.mitm.support import Mitmdump

__all__ = ["everything"]  # the module-scoped server-everything fixture


def run_mitm(upstream: str, faults: list[str], tmp_path: Path, *, calls: int = 3) -> Run:
    """The SDK client through ``mitmdump -s addons/mcpsniff.py`` with ``faults``."""
    if not SDK1_PYTHON.exists():
        pytest.skip(f"{SDK1_PYTHON} missing (scripts/setup-peers.sh)")
    trace = tmp_path / "trace.jsonl"
    extra = [part for spec in faults for part in ("--set", f"mcpsniff_fault={spec}")]
    origin = upstream.rsplit("/", 1)[0]
    mitm = Mitmdump(tmp_path, mode=f"reverse:{origin}/", trace=trace, extra=extra).started()
    try:
        proc = client_run(SDK1_PYTHON, mitm.url("/mcp"), calls, 3.0)
    finally:
        assert mitm.stop(signal.SIGINT) == 0, mitm.output
    assert "Traceback" not in mitm.output, mitm.output
    assert f"injecting {len(faults)} fault(s)" in mitm.output
    return judged(proc, trace)


def test_an_injected_error_is_answered_in_the_request_hook(everything: str, tmp_path: Path) -> None:
    result = run_mitm(everything, [f'error -32603 "backend down" when {ECHO} times 1'], tmp_path)
    assert result.outcomes() == ["error", "ok", "ok"]
    assert result.client["calls"][0]["message"] == "backend down"
    (fault,) = result.faults
    assert fault.data["marks"] == {"c2s": 1, "s2c": 1} and fault.data["transport"] == "http"
    assert result.rules() == []


def test_status_404_and_the_client_reusing_its_session(everything: str, tmp_path: Path) -> None:
    result = run_mitm(everything, [f"status 404 when {ECHO} times 1"], tmp_path)
    assert result.outcomes()[0] == "error"
    assert result.rules() == ["RESIL-SESSION-REUSED"]


def test_a_delayed_request_is_held_by_the_hook(everything: str, tmp_path: Path) -> None:
    result = run_mitm(everything, [f"delay 300ms when {ECHO} and direction == c2s"], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    assert all(call["ms"] >= 300 for call in result.client["calls"])
    assert [f.data["delay_ms"] for f in result.faults] == [300] * 3
    assert result.rules() == []


def test_an_sse_answer_left_out_then_redelivered(everything: str, tmp_path: Path) -> None:
    result = run_mitm(everything, [f"drop when {ECHO} and direction == s2c times 1"], tmp_path)
    (fault,) = result.faults
    assert fault.data["delivered"] is False
    # Recorded, undelivered; the resumed stream brings it again: no second answer blamed.
    assert _ids(result.frames("s2c")).count(fault.data["id"]) == 2
    assert result.rules() == []


def test_an_sse_answer_delivered_twice(everything: str, tmp_path: Path) -> None:
    spec = f"duplicate when {ECHO} and direction == s2c times 1"
    result = run_mitm(everything, [spec], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    assert _ids(result.frames("s2c")).count(result.faults[0].data["id"]) == 2
    assert result.rules() == []


def test_a_truncated_request_body(everything: str, tmp_path: Path) -> None:
    spec = f"corrupt truncate when {ECHO} and direction == c2s times 1"
    result = run_mitm(everything, [spec], tmp_path)
    assert [f.data["corruption"] for f in result.faults] == ["truncate"]
    assert result.rules() == []
    assert "coped: the server answered -32700" in result.summary


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("delay 3 parsecs", "mcpsniff_fault: delay takes one duration, or MIN..MAX"),
        ("kill", "mcpsniff_fault: kill needs a stdio relay"),
    ],
)
def test_a_bad_fault_is_one_clear_line(spec: str, expected: str, tmp_path: Path) -> None:
    mitm = Mitmdump(tmp_path, trace=tmp_path / "t.jsonl", extra=["--set", f"mcpsniff_fault={spec}"])
    try:
        code = mitm.proc.wait(30)
    except Exception:
        mitm.stop(signal.SIGKILL)
        raise
    assert code == 1, mitm.output
    assert len([line for line in mitm.output.splitlines() if expected in line]) == 1
    assert "Traceback" not in mitm.output
