"""The mcpsniff command line, run as a real process where terminals matter."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import FindingRecord
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.core.session import Session
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
MCPSNIFF = [sys.executable, "-m", "mcpsniff"]


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPSNIFF, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )


# --------------------------------------------------------------------------- check


def test_check_missing_trace_exits_2_with_one_line() -> None:
    result = run("check", "/nonexistent/trace.jsonl")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mcpsniff check: /nonexistent/trace.jsonl: no such file"
    ]
    assert "Traceback" not in result.stderr


def test_check_not_a_trace_exits_2(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello\n")
    result = run("check", str(bogus))
    assert result.returncode == 2
    assert "not an mcpsniff trace" in result.stderr
    result = run("check", str(tmp_path))
    assert result.returncode == 2 and "directory" in result.stderr


def test_check_fail_on_thresholds() -> None:
    trace = str(RECORDINGS / "missing-initialized.jsonl")
    runner = CliRunner()
    assert runner.invoke(main, ["check", trace]).exit_code == 1
    clean = str(RECORDINGS / "clean-2025-11-25.jsonl")
    for level in ("error", "warning", "info"):
        assert runner.invoke(main, ["check", "--fail-on", level, clean]).exit_code == 0


def test_check_fail_on_info_counts_info_findings(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    session = Session("s")
    # An empty line between messages is an info-level finding only.
    writer.write_all(session.feed("c2s", "stdio", b"\n", 1.0))
    writer.write_all(session.close(2.0))
    writer.close()
    runner = CliRunner()
    assert runner.invoke(main, ["check", str(path)]).exit_code == 0
    assert runner.invoke(main, ["check", "--fail-on", "warning", str(path)]).exit_code == 0
    assert runner.invoke(main, ["check", "--fail-on", "info", str(path)]).exit_code == 1


def test_check_json_lines_have_exactly_the_documented_keys() -> None:
    result = CliRunner().invoke(
        main, ["check", "--format", "json", str(RECORDINGS / "stdout-pollution.jsonl")]
    )
    lines = [orjson.loads(line) for line in result.output.splitlines()]
    assert len(lines) == 2
    for finding in lines:
        assert set(finding) == {"rule", "severity", "message", "session", "seq", "data", "spec"}
    assert lines[0]["rule"] == "JR-PARSE"
    assert lines[0]["data"]["excerpt"] == "Loading model..."
    assert lines[0]["session"] == "stdout-pollution"


def test_check_text_groups_by_session_with_cause_and_spec() -> None:
    result = CliRunner().invoke(main, ["check", str(RECORDINGS / "string-id-echo.jsonl")])
    out = result.output
    assert "session string-id-echo: 1 error" in out
    assert "cause: id-type" in out
    assert "spec: https://www.jsonrpc.org/specification#response_object" in out
    assert out.strip().endswith("1 finding(s) at or above error")


def test_check_counts_every_session_clean_or_not() -> None:
    """A clean trace is "0 finding(s) in 1 session(s)", not "in 0 session(s)"."""
    result = CliRunner().invoke(main, ["check", str(RECORDINGS / "string-id-echo.jsonl")])
    assert "1 finding(s) in 1 session(s)" in result.output
    result = CliRunner().invoke(main, ["check", str(RECORDINGS / "clean-2025-11-25.jsonl")])
    assert result.exit_code == 0, result.output
    assert "0 finding(s) in 1 session(s); nothing at or above error" in result.output


@pytest.mark.parametrize("trace", sorted(RECORDINGS.glob("[!d]*.jsonl")), ids=lambda p: p.stem)
def test_live_findings_equal_check_findings(trace: Path) -> None:
    with TraceReader(trace) as reader:
        live = [
            {
                "rule": r.rule,
                "severity": r.severity,
                "message": r.message,
                "session": r.session,
                "seq": r.seq,
                "data": r.data,
            }
            for r in reader.records()
            if isinstance(r, FindingRecord)
        ]
    result = CliRunner().invoke(
        main, ["check", "--format", "json", "--fail-on", "info", str(trace)]
    )
    checked = [orjson.loads(line) for line in result.output.splitlines()]
    # check adds the link into the specification of the session's version.
    assert all(c.pop("spec").startswith("https://") for c in checked)
    assert checked == live


def test_check_torn_trace_warns_and_still_reports(tmp_path: Path) -> None:
    data = (RECORDINGS / "string-id-echo.jsonl").read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data + b'{"type":"frame","seq":99,"t":1.0,"ses')
    result = run("check", str(torn))
    assert result.returncode == 1
    assert "incomplete" in result.stderr and "skipped" in result.stderr
    assert "JR-RESP-ID" in result.stdout


# --------------------------------------------------------------------------- show


def test_show_timeline_lines() -> None:
    result = CliRunner().invoke(main, ["show", str(RECORDINGS / "out-of-order-batch.jsonl")])
    assert result.exit_code == 0
    out = result.output
    assert "C→S request  id=0 initialize" in out
    assert "S→C result   id=0 initialize (12.5 ms)" in out
    assert "└ [0] result   id=3 tools/call add (12.5 ms)" in out
    assert "\x1b[" not in out


def test_show_inline_findings() -> None:
    out = CliRunner().invoke(main, ["show", str(RECORDINGS / "stdout-pollution.jsonl")]).output
    lines = out.splitlines()
    index = next(i for i, line in enumerate(lines) if "UNPARSEABLE" in line)
    assert "JR-PARSE" in lines[index + 1]
    assert "log-line" in lines[index + 1]


def _run_in_pty(args: list[str], env: dict[str, str]) -> str:
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 10)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=10)
    os.close(master)
    return b"".join(chunks).decode("utf-8", errors="replace")


def test_show_colours_only_on_a_terminal_and_honours_no_color() -> None:
    trace = str(RECORDINGS / "stdout-pollution.jsonl")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = _run_in_pty([*MCPSNIFF, "show", trace], env)
    assert "\x1b[" in coloured and "JR-PARSE" in coloured
    plain = _run_in_pty([*MCPSNIFF, "show", trace], {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain and "JR-PARSE" in plain


def test_show_follow_prints_records_as_the_trace_grows(tmp_path: Path) -> None:
    path = tmp_path / "growing.jsonl"
    writer = TraceWriter.create(path)
    session = Session("live")
    writer.write_all(
        session.feed("c2s", "stdio", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', 1.0)
    )
    writer.flush()
    proc = subprocess.Popen(
        [*MCPSNIFF, "show", "--follow", "--interval", "0.05", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "id=1 ping" in _read_until(proc, "ping")
        writer.write_all(
            session.feed("s2c", "stdio", b'{"jsonrpc":"2.0","id":1,"result":{}}\n', 1.5)
        )
        writer.flush()
        assert "(500.0 ms)" in _read_until(proc, "result")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        writer.close()


def _read_until(proc: subprocess.Popen[str], needle: str, timeout: float = 15.0) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if needle in line:
                return line
    raise AssertionError(f"{needle!r} never appeared")


def test_show_missing_trace_exits_2() -> None:
    result = run("show", "/nonexistent.jsonl")
    assert result.returncode == 2
    assert "no such file" in result.stderr


# --------------------------------------------------------------------------- rules


def test_rules_lists_every_implemented_rule() -> None:
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    rules = [orjson.loads(line) for line in result.output.splitlines()]
    assert [r["rule"] for r in rules] == list(IMPLEMENTED)
    assert len(rules) >= 80
    parse = next(r for r in rules if r["rule"] == "JR-PARSE")
    assert parse["severity"] == "error"
    assert parse["versions"] == [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ]
    assert "JSON-RPC §5" in parse["source"]
    text = CliRunner().invoke(main, ["rules"]).output
    assert f"{len(IMPLEMENTED)} rules implemented" in text


# --------------------------------------------------------------------------- demo


@pytest.mark.skipif(shutil.which("true") is None, reason="needs a POSIX system")
def test_demo_records_a_real_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = subprocess.run(
        [*MCPSNIFF, "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "XDG_STATE_HOME": str(state)},
    )
    assert result.returncode == 0, result.stderr
    # In the state folder, where ls and ui look; nothing in the current directory.
    (trace,) = (state / "mcpsniff" / "traces").glob("demo-*.jsonl")
    assert list(tmp_path.iterdir()) == [state]
    assert oct(trace.stat().st_mode & 0o777) == "0o600"
    assert "C→S request  id=1 initialize" in result.stdout
    assert "nothing at or above error" in result.stdout
    check = run("check", str(trace))
    assert check.returncode == 0


def test_demo_with_a_bug_shows_the_finding(tmp_path: Path) -> None:
    result = subprocess.run(
        [*MCPSNIFF, "demo", "--bug", "banner", "--trace", str(tmp_path / "b.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "STDIO-STDOUT-CLEAN" in result.stdout
    assert "cause: log-line" in result.stdout


def test_show_prints_a_last_record_without_newline(tmp_path: Path) -> None:
    data = (RECORDINGS / "string-id-echo.jsonl").read_bytes()
    trace = tmp_path / "no-newline.jsonl"
    trace.write_bytes(data.rstrip(b"\n"))
    out = CliRunner().invoke(main, ["show", str(trace)]).output
    assert out.rstrip().endswith("session-end")


def test_check_json_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    """`mcpsniff check --format json TRACE | head -1`: no 'read failed', no exit 2."""
    source = (RECORDINGS / "stdout-pollution.jsonl").read_bytes().splitlines(keepends=True)
    trace = tmp_path / "long.jsonl"
    trace.write_bytes(source[0] + b"".join(source[1:]) * 600)  # far more than a pipe buffer
    check = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "check", "--format", "json", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert check.stdout is not None and check.stderr is not None
    first = check.stdout.readline()
    check.stdout.close()  # what head does after its line
    stderr = check.stderr.read()
    assert check.wait(timeout=60) == 1  # the findings read so far are errors
    assert orjson.loads(first)["rule"]
    assert stderr == b""


def test_check_counts_the_sessions_whose_state_was_dropped(tmp_path: Path) -> None:
    """Past the analyzer's cap (MAX_SESSIONS) a session's state goes, not its count."""
    from mcpsniff.core.analyzer import MAX_SESSIONS
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.trace.writer import TraceWriter

    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    count = MAX_SESSIONS + 5
    path = tmp_path / "many.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.write_all(
        [FrameRecord(n + 1, 1.0 + n, f"s{n}", "c2s", "stdio", ping) for n in range(count)]
    )
    writer.close()
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert f"in {count} session(s)" in result.output
    assert "state" in result.stderr and "dropped" in result.stderr


def test_rules_json_has_a_link_and_no_placeholder_for_every_rule() -> None:
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    rows = [orjson.loads(line) for line in result.output.splitlines()]
    assert len(rows) >= 215
    for row in rows:
        assert row["spec"].startswith(
            ("https://modelcontextprotocol.io/", "https://www.jsonrpc.org/")
        )
        assert "<v>" not in row["source"] and ".mdx" not in row["source"], row["rule"]
        assert "⇒" not in row["description"] and "[Snd]" not in row["description"], row["rule"]


# ------------------------------------------------------------ hostile file names

# A file name holding terminal controls, in every command's messages.
#
# ``check``, ``export``, ``report`` and ``redact`` escaped the file name in their
# error lines, but ``show``, ``stats``, ``ls``, ``install``/``uninstall`` and
# ``stdio``'s "recording ... to" line printed it raw: a trace called
# ``t\x1b]0;PWN\x07.jsonl`` (a download, a ``{name}`` from a config file's
# server name) retitled the terminal when it was missing, empty or not a trace.


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


# --------------------------------------------------------------------------- start-up

#: What each command needs and nothing else: the modules loaded by ``mcpsniff
#: ARGS`` run in a fresh interpreter (the command's own module comes on use).
_LOADED = """
import sys
from mcpsniff.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def _modules_loaded(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return set(done.stderr.splitlines())


def test_version_imports_no_command() -> None:
    loaded = _modules_loaded("--version")
    assert {m for m in loaded if m.startswith("mcpsniff")} == {
        "mcpsniff",
        "mcpsniff.cli",
        "mcpsniff.cli.main",
    }


@pytest.mark.parametrize("jobs", [["--jobs", "1"], []], ids=["jobs 1", "default jobs"])
def test_check_imports_only_what_checking_one_trace_needs(jobs: list[str]) -> None:
    # A small trace is never split, whatever --jobs says: no workers, no multiprocessing.
    trace = str(RECORDINGS / "stdout-pollution.jsonl")
    loaded = _modules_loaded("check", "--format", "json", *jobs, trace)
    assert "mcpsniff.check.run" in loaded and "mcpsniff.core.analyzer" in loaded
    commands = {m for m in loaded if m.startswith("mcpsniff.cli.")}
    assert commands == {
        "mcpsniff.cli.main",
        "mcpsniff.cli.check",
        "mcpsniff.cli.filter_option",
        "mcpsniff.cli.guard_options",
        "mcpsniff.cli.options",
        "mcpsniff.cli.shared",
    }
    # Only --filter, the guard options, several traces or a split need these.
    for heavy in (
        "mcpsniff.filter",
        "mcpsniff.guard.findings",
        "mcpsniff.guard.enforce",
        "mcpsniff.relay",
        "mcpsniff.agent",
        "asyncio",
        "aiohttp",
        "multiprocessing",
        "concurrent.futures",
        # The catalogue's data files are read by the package's loader, and a
        # pipe's copy alone needs a temporary file (trace/spool.py).
        "importlib.resources",
        "tempfile",
        "shutil",
        "zipfile",
        # --explain's paragraphs, a rule's crash, an unknown rule id, a changed
        # offer: none is part of a check that meets none of them.
        "mcpsniff.core.explain",
        "mcpsniff.core.descriptions",
        "traceback",
        "textwrap",
        "difflib",
    ):
        assert heavy not in loaded, heavy


def test_check_imports_no_json_schema_library_while_the_calls_fit_their_schemas() -> None:
    # Every tools/call of this recording matches its tool's plain inputSchema
    # (core/schema_valid.py): neither validator is built.
    trace = str(RECORDINGS / "clean-2026-07-28.jsonl")
    loaded = _modules_loaded("check", "--format", "json", trace)
    assert "mcpsniff.core.schemas" in loaded
    assert "jsonschema" not in loaded and "fastjsonschema" not in loaded


def test_check_with_a_filter_or_guard_option_still_works() -> None:
    trace = str(RECORDINGS / "stdout-pollution.jsonl")
    result = run("check", "--format", "json", "--filter", "rule == JR-PARSE", trace)
    assert [orjson.loads(line)["rule"] for line in result.stdout.splitlines()] == ["JR-PARSE"]
    result = run("check", "--format", "json", "--expect-tool", "nope", trace)
    rules = [orjson.loads(line)["rule"] for line in result.stdout.splitlines()]
    assert rules[:2] == ["JR-PARSE", "STDIO-STDOUT-CLEAN"] and "GUARD-EXPECT-TOOL" in rules
    assert result.returncode == 1 and "Traceback" not in result.stderr


def test_every_command_loads_by_its_name() -> None:
    from mcpsniff.cli.main import COMMANDS

    context = click.Context(main)
    assert main.list_commands(context) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name
        assert main.commands[name] is command  # imported once
    export = main.commands["export"]
    assert isinstance(export, click.Group)
    assert export.list_commands(context) == ["har", "otlp", "parquet"]


def test_help_lists_every_command_with_its_short_help() -> None:
    from mcpsniff.cli.main import COMMANDS

    result = run("--help")
    assert result.returncode == 0
    listed = result.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == sorted(COMMANDS)
    for line in listed:
        command = main.commands[line.split()[0]]
        short = command.get_short_help_str(limit=45)
        assert line.split(None, 1)[1].startswith(short[:30]), line
    assert run("-h").stdout == result.stdout


def test_a_misspelt_command_is_still_told_its_near_names() -> None:
    result = run("chek")
    assert result.returncode == 2
    assert "No such command 'chek'" in result.stderr and "'check'" in result.stderr


def test_the_command_table_behaves_as_a_mapping() -> None:
    from mcpsniff.cli.main import LazyCommands

    table = LazyCommands({"rules": "rules:rules", "ls": "ls:ls"})
    assert list(table) == ["rules", "ls"] and len(table) == 2
    assert "ls" in table and "nope" not in table
    assert table.get("nope") is None
    with pytest.raises(KeyError):
        table["nope"]
    extra = click.Command("extra")
    table["extra"] = extra
    assert table["extra"] is extra and len(table) == 3
    table["ls"] = extra  # a command added under a listed name replaces it
    assert table["ls"] is extra and len(table) == 3
    del table["ls"]
    assert list(table) == ["rules", "extra"]
    with pytest.raises(KeyError):
        del table["ls"]
    assert table["rules"].name == "rules"
    wrong = LazyCommands({"ls": "rules:rules"})
    with pytest.raises(RuntimeError, match="is not command 'ls'"):
        wrong["ls"]
