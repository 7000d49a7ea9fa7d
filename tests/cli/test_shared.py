"""Every command that reads a trace, given what a new user or an attacker gives it.

Missing files, folders, empty files, binary junk, and a trace whose session
key, method names, peer names and error messages hold terminal escapes: each
gives one clear line and exit 2, or correct output; never a traceback, never
a raw escape, bell or bidi control on the terminal.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

#: What must never reach a terminal raw: C0 controls but tab and newline, DEL, C1, bidi.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SESSION = "ev\x1b]0;pwn\x07il\x1b[2J\u202e"
METHOD = "tools/\x1b[31mlist\u202e"


def _line(obj: object) -> bytes:
    return orjson.dumps(obj) + b"\n"


def _hostile_inputs() -> list[EventRecord | FrameRecord]:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}}
    frames = [
        (
            "c2s",
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {**init, "clientInfo": {"name": "c\x1b[5m", "version": "1"}},
                }
            ),
        ),
        (
            "s2c",
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "result": {
                        **init,
                        "serverInfo": {"name": "s\x1b]8;;http://x\x07", "version": "1"},
                    },
                }
            ),
        ),
        ("c2s", _line({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        ("c2s", _line({"jsonrpc": "2.0", "id": 1, "method": METHOD})),
        (
            "s2c",
            _line(
                {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "n\x1b[31mo\x07"}}
            ),
        ),
        (
            "c2s",
            _line(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t\x1bx"}}
            ),
        ),
        ("c2s", b"\x1b[2Jnot json\x07\n"),
    ]
    records: list[EventRecord | FrameRecord] = [
        EventRecord(0, 1.0, SESSION, "session-start", {"transport": "stdio"})
    ]
    records += [
        FrameRecord(n, 1.0 + n / 10, SESSION, d, "stdio", raw)
        for n, (d, raw) in enumerate(frames, 1)
    ]
    return records


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "junk.jsonl").write_bytes(bytes(range(256)) * 20)
    (folder / "folder").mkdir()
    paths = {
        "missing": folder / "missing.jsonl",
        "folder": folder / "folder",
        "empty": folder / "empty.jsonl",
        "junk": folder / "junk.jsonl",
    }
    meta = {"label": "lab\x1b[31mel\x07", "source": "sweep"}
    for name, records in (
        ("hostile", list(replay(_hostile_inputs()))),
        ("frames", _hostile_inputs()),
    ):
        paths[name] = folder / f"{name}.jsonl"
        writer = TraceWriter.create(paths[name], meta=meta)
        writer.write_all(records)
        writer.close()
    return paths


COMMANDS = {
    "check": ["check"],
    "check-json": ["check", "--format", "json"],
    "check-sarif": ["check", "--format", "sarif"],
    "check-junit": ["check", "--format", "junit"],
    "show": ["show"],
    "show-vv": ["show", "-vv"],
    "show-json": ["show", "--format", "json"],
    "show-filter": ["show", "--filter", "method ~ list"],
    "stats": ["stats"],
    "stats-json": ["stats", "--format", "json"],
    "report-mermaid": ["report", "--format", "mermaid"],
    "export-har": ["export", "har"],
    "replay-drive": ["replay", "drive", "{T}", "--", "true"],
}


def _invoke(args: list[str], trace: Path) -> tuple[int, str, str]:
    argv = [a.replace("{T}", str(trace)) for a in args]
    if "{T}" not in args:
        argv.append(str(trace))
    result = CliRunner().invoke(main, argv)
    # A traceback would be an exception other than the exit click turns into a code.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad", ["missing", "folder", "empty", "junk"])
def test_a_file_that_is_no_trace_is_one_line_and_exit_2(
    inputs: dict[str, Path], command: str, bad: str
) -> None:
    code, out, err = _invoke(COMMANDS[command], inputs[bad])
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    # One line, naming the file (click names a folder where TRACE must be a file).
    assert len(lines) == 1 or lines[-1].startswith("Error: Invalid value for 'TRACE'"), err
    assert str(inputs[bad]) in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("trace", ["hostile", "frames"])
def test_traffic_escapes_never_reach_the_terminal_raw(
    inputs: dict[str, Path], command: str, trace: str
) -> None:
    code, out, err = _invoke(COMMANDS[command], inputs[trace])
    assert code in (0, 1, 2), (code, err)
    assert RAW.search(out) is None, RAW.search(out)
    assert RAW.search(err) is None, RAW.search(err)
    if command.startswith(("show", "check", "stats", "report")) and command != "show-filter":
        assert out, err  # the traffic (or the verdict on it) is shown, escaped


@pytest.mark.parametrize("trace", ["hostile", "frames"])
def test_show_names_a_hostile_method_escaped(inputs: dict[str, Path], trace: str) -> None:
    _, out, _ = _invoke(["show"], inputs[trace])
    assert "C→S request  id=1 tools/\\x1b[31mlist\\u202e" in out
    assert "\\x1b[2Jnot json\\x07" in out
