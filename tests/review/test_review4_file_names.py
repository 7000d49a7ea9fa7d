"""Review 4: a file name holding terminal controls, in every command's messages.

``check``, ``export``, ``report`` and ``redact`` escaped the file name in their
error lines, but ``show``, ``stats``, ``ls``, ``install``/``uninstall`` and
``stdio``'s "recording ... to" line printed it raw: a trace called
``t\\x1b]0;PWN\\x07.jsonl`` (a download, a ``{name}`` from a config file's
server name) retitled the terminal when it was missing, empty or not a trace.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NAME = "t\x1b]0;PWN\x07\u202e"
RAW = ("\x1b", "\x07", "\u202e")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.mark.parametrize(
    "args",
    [
        ["show", "{missing}"],
        ["show", "{empty}"],
        ["stats", "{missing}"],
        ["stats", "{binary}"],
        ["ls", "{missing}"],
        ["install", "--config", "{binary}", "--all"],
        ["uninstall", "--config", "{empty}"],
        ["uninstall", "--config", "{binary}"],
        ["stdio", "--trace", "{missing}", "--", "true"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_hostile_file_name_is_escaped(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / f"e{NAME}.jsonl").write_bytes(b"")
    (tmp_path / f"b{NAME}.jsonl").write_bytes(b"\xff\x00" * 50)
    names = {
        "{missing}": f"m{NAME}.jsonl",
        "{empty}": f"e{NAME}.jsonl",
        "{binary}": f"b{NAME}.jsonl",
    }
    done = _run([names.get(a, a) for a in args], tmp_path)
    assert "Traceback" not in done.stderr
    output = done.stdout + done.stderr
    assert "\\x1b]0;PWN\\x07\\u202e" in output, output  # named, visibly
    for mark in RAW:
        assert mark not in output, (args, output)
