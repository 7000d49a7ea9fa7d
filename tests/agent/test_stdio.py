"""``mcpsniff mcp`` over stdio, as a real process: one JSON line per answer, nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcpsniff.agent.stdio import LINE_LIMIT

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"


def _serve(data: bytes, *paths: str) -> tuple[list[dict], bytes, int]:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "mcp", *(paths or [str(RECORDINGS)])],
        input=data, capture_output=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    lines = proc.stdout.split(b"\n")
    assert lines[-1] == b""  # every answer ends with its newline
    return [json.loads(line) for line in lines[:-1]], proc.stderr, proc.returncode


def test_answers_are_lines_in_order() -> None:
    requests = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode() + b"\n" for n in range(5)
    )
    answers, _, code = _serve(b"\n" + requests + b"\r\n")  # blank lines are skipped
    assert code == 0
    assert [a["id"] for a in answers] == list(range(5))


def test_a_line_too_long_is_answered_once_and_the_next_one_still_works() -> None:
    huge = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (
        LINE_LIMIT + 200_000
    )
    data = huge + b'"}}\n' + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    answers, _, code = _serve(data)
    assert code == 0
    assert [a.get("id") for a in answers] == [None, 2]
    assert answers[0]["error"]["code"] == -32700


def test_a_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    _, err, code = _serve(b"", str(tmp_path / "nowhere"))
    assert code == 2
    assert err.decode().strip().count("\n") == 0 and "no such file or folder" in err.decode()
