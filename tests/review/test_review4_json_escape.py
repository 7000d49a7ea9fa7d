"""Review 4: terminal-active code points from a hostile trace in every ``--format json``.

JSON escapes only U+0000..U+001F. ``show --format json`` also escaped the C1
controls and the bidi marks, but ``check``, ``stats`` and ``ls`` wrote them
raw: a peer's U+009B (the one-byte CSI) or U+202E (RIGHT-TO-LEFT OVERRIDE) in
a session key, a method or a server label reached the terminal as it was
sent. And ``stats``'s "errors by layer" printed a non-integer error code whole
(200 KB on one line), where every other name in its tables is cut at 36.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

HOSTILE = "\x1b]0;PWN\x07\u202eRLO\u2066\x9b31m\u2028\x7f"
#: What must never appear raw on the terminal (C0 is escaped by JSON itself).
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _frames(code: object) -> list[tuple[str, dict[str, object]]]:
    return [
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "m" + HOSTILE}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": HOSTILE}}),
    ]


def _trace(tmp_path: Path, code: object = 42) -> Path:
    session = "s" + HOSTILE
    records = [
        FrameRecord(n + 1, 1767225600.0 + n, session, d, "stdio", (json.dumps(m) + "\n").encode())
        for n, (d, m) in enumerate(_frames(code))
    ]
    records.append(EventRecord(9, 1767225601.0, session, "session-end", {}))
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"label": "lab" + HOSTILE})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


@pytest.mark.parametrize(
    "args",
    [["check", "--format", "json"], ["stats", "--format", "json"], ["ls", "--format", "json"]],
    ids=" ".join,
)
def test_json_output_escapes_c1_and_bidi(tmp_path: Path, args: list[str]) -> None:
    path = _trace(tmp_path)
    target = tmp_path if args[0] == "ls" else path
    result = CliRunner().invoke(main, [args[0], str(target), *args[1:]])
    assert result.exit_code in (0, 1), result.output
    assert result.output.strip()
    for line in result.output.splitlines():
        assert RAW.search(line) is None, line
    # Still JSON, and the escapes decode to exactly what the peer sent.
    values = [json.loads(line) for line in result.output.splitlines()]
    assert any(HOSTILE in text for text in _strings(values))


def _strings(value: object) -> list[str]:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_stats_cuts_a_huge_error_code_like_every_other_name(tmp_path: Path) -> None:
    path = _trace(tmp_path, code="c" + "W" * 200_000)
    result = CliRunner().invoke(main, ["stats", str(path)])
    assert result.exit_code == 0, result.output
    assert "c" + "W" * 34 + "…" in result.output
    assert max(len(line) for line in result.output.splitlines()) < 200
