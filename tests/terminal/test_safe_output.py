"""A peer's lone surrogate ("\\ud800", valid JSON) in a method, tool or session name.

It reached stdout raw: show, check and stats ended in UnicodeEncodeError, and
every --format json in orjson's TypeError. It must come out as the visible
text or JSON escape ``\\ud800``, with every command finishing normally.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord
from mcpsniff.trace.writer import TraceWriter
from tests.support import HOSTILE, hostile_trace

FRAMES = [
    ("c2s", r'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ud800"}}'),
    ("s2c", r'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}'),
    ("c2s", r'{"jsonrpc":"2.0","id":2,"method":"m\udc00x"}'),
    ("s2c", r'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no \ud800"}}'),
]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A trace as mcpsniff records it: frames, then the analyzer's own records."""
    frames = [
        FrameRecord(n + 1, 1767225600.0 + n, "s\ud800", d, "stdio", (text + "\n").encode())
        for n, (d, text) in enumerate(FRAMES)
    ]
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"label": "lab\ud800el"})
    writer.write_all(list(replay(frames)))
    writer.close()
    return path


COMMANDS = [
    ["show"],
    ["show", "-vv"],
    ["show", "--format", "json", "-vv"],
    ["stats"],
    ["stats", "--format", "json"],
    ["check"],
    ["check", "--format", "json"],
    ["ls"],
    ["ls", "--format", "json"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_lone_surrogate_is_shown_escaped(trace: Path, args: list[str]) -> None:
    target = trace.parent if args[0] == "ls" else trace
    done = subprocess.run(
        [sys.executable, "-m", "mcpsniff", args[0], str(target), *args[1:]],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    assert b"Traceback" not in done.stderr
    out = done.stdout.decode("utf-8")  # strict: valid UTF-8 throughout
    assert "\\ud800" in out or "\\udc00" in out
    if "json" in args:
        values = [json.loads(line) for line in out.splitlines()]
        assert values
        # The JSON escape decodes back to the very code point the peer sent.
        assert "\ud800" in json.dumps(values, ensure_ascii=False) or "\udc00" in json.dumps(
            values, ensure_ascii=False
        )


def test_nan_and_a_big_integer_together_still_give_strict_json(tmp_path: Path) -> None:
    """orjson refuses the big integer; the fallback wrote NaN, which no strict parser reads."""
    path = tmp_path / "nan.jsonl"
    path.write_text(
        '{"type":"header","format":"mcpsniff-trace","version":2,"meta":{}}\n'
        '{"type":"event","seq":1,"t":1767225600,"session":"s","event":"x",'
        '"data":{"a":NaN,"b":[Infinity],"c":123456789012345678901234567890}}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "show", "--format", "json", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr

    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    [value] = [json.loads(line, parse_constant=refuse) for line in done.stdout.splitlines()]
    assert value["data"] == {"a": None, "b": [None], "c": 123456789012345678901234567890}


# ------------------------------------------------------------ --format json of every command

# Terminal-active code points from a hostile trace in every ``--format json``.
#
# JSON escapes only U+0000..U+001F. ``show --format json`` also escaped the C1
# controls and the bidi marks, but ``check``, ``stats`` and ``ls`` wrote them
# raw: a peer's U+009B (the one-byte CSI) or U+202E (RIGHT-TO-LEFT OVERRIDE) in
# a session key, a method or a server label reached the terminal as it was
# sent. And ``stats``'s "errors by layer" printed a non-integer error code whole
# (200 KB on one line), where every other name in its tables is cut at 36.


#: What must never appear raw on the terminal (C0 is escaped by JSON itself).
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


@pytest.mark.parametrize(
    "args",
    [["check", "--format", "json"], ["stats", "--format", "json"], ["ls", "--format", "json"]],
    ids=" ".join,
)
def test_json_output_escapes_c1_and_bidi(tmp_path: Path, args: list[str]) -> None:
    path = hostile_trace(tmp_path)
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
