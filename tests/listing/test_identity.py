"""A session's identity: the name, peers, times, counts and ending every view shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from mcpsniff.listing.identity import Origin, SessionIdentity, duration_text
from mcpsniff.listing.summary import session_titles, summarize

REPO = Path(__file__).resolve().parents[2]
GALLERY = REPO / "recordings"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
#: A server that answers initialize and exits at end of input, as a real one does.
ECHO_SERVER = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {},
                  "serverInfo": {"name": "echo-srv", "title": "Echo Server", "version": "2.1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"0.3"}}}\n'
)


def relay(trace: Path, *args: str, stdin: bytes = INITIALIZE) -> subprocess.CompletedProcess[bytes]:
    """A real ``mcpsniff stdio`` run of ``args`` recording to ``trace``."""
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), *args],
        input=stdin,
        capture_output=True,
        env=ENV,
        timeout=60,
    )


def test_a_named_session_keeps_its_name_and_the_server_names_itself(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    server = [sys.executable, "-c", ECHO_SERVER]
    done = relay(trace, "--name", "everything", "--", *server)
    assert done.returncode == 0, done.stderr
    # Not "recording /usr/bin/python3": the label the person gave, then the program.
    assert b"mcpsniff: recording everything (" in done.stderr
    summary = summarize(trace)
    assert summary is not None
    (identity,) = summary.identities.values()
    assert identity.name == "everything"
    assert identity.server_label == "Echo Server (echo-srv) 2.1"
    assert identity.client_label == "probe 0.3"
    assert identity.messages == 2
    assert identity.ending == "exit 0"
    assert not identity.failed
    title = identity.title(clock=False)
    assert title.startswith("everything · server Echo Server (echo-srv) 2.1 · client probe 0.3 · ")
    # The client never sent notifications/initialized: one error, counted.
    assert title.endswith(" · 2 messages · 1 error · exit 0")


def test_an_unnamed_session_is_named_by_its_server(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    done = relay(trace, "--", sys.executable, "-c", ECHO_SERVER)
    assert done.returncode == 0, done.stderr
    summary = summarize(trace)
    assert summary is not None
    (identity,) = summary.identities.values()
    # The program's file name ("python3") is only the fallback: the server's title wins.
    assert identity.origin.name is None
    assert identity.name == "Echo Server"
    assert summary.server == "Echo Server"
    assert identity.title(clock=False).startswith("Echo Server (echo-srv) 2.1 · client probe 0.3")


def test_a_launch_that_failed_is_marked_not_counted_as_a_session(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    done = relay(trace, "--name", "ghost", "--", str(tmp_path / "no-such-server"))
    assert done.returncode != 0
    summary = summarize(trace)
    assert summary is not None
    assert summary.failed_launches == 1
    assert summary.started_sessions == 0
    (identity,) = summary.identities.values()
    assert identity.failed
    assert identity.title(clock=False).startswith("ghost · ")
    assert identity.title(clock=False).endswith("failed to start: No such file or directory")
    listed = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "ls", str(tmp_path)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    (row,) = listed.stdout.splitlines()[1:]
    assert row.startswith("ghost ")
    assert row.endswith("t.jsonl  (1 launch failed to start)")
    assert row.split()[4] == "0"  # SESSIONS
    as_json = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "ls", "--format", "json", str(tmp_path)],
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    entry = orjson.loads(as_json.stdout)
    assert (entry["server"], entry["sessions"], entry["failed_launches"]) == ("ghost", 0, 1)


def test_show_check_and_stats_print_each_sessions_title(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    assert (
        relay(trace, "--name", "everything", "--", sys.executable, "-c", ECHO_SERVER).returncode
        == 0
    )
    # A finding for check to report: a request the server never answers.
    outputs = {}
    for command in ("show", "stats"):
        outputs[command] = subprocess.run(
            [sys.executable, "-m", "mcpsniff", command, str(trace)],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=60,
        ).stdout
    assert outputs["show"].splitlines()[0].startswith("session stdio: everything · server Echo")
    assert "  session stdio: everything · server Echo Server (echo-srv) 2.1" in outputs["stats"]
    checked = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", str(GALLERY / "unanswered-request.jsonl")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    ).stdout.splitlines()
    assert checked[0] == "session unanswered-request: 1 error"
    assert checked[1].startswith("  gallery-server 1.0 · client gallery-client 1.0 · ")
    assert checked[1].endswith(" · 8 messages · 1 error · ended")


def test_titles_of_a_gallery_trace_and_hostile_names() -> None:
    titles = session_titles(GALLERY / "clean-2026-07-28.jsonl")
    (title,) = titles.values()
    # 2026-07-28: server/discover names the server in the result's _meta.
    assert title.startswith("gallery-server")
    hostile = SessionIdentity("k", Origin.of({"meta": {"name": "\x1b[31mred" + "x" * 500}}))
    # Bounded here; each view escapes it for its medium (terminal_safe, textContent).
    assert len(hostile.name) == 120
    assert hostile.name.endswith("…")


def test_origin_tells_a_given_label_from_the_programs_name() -> None:
    given = Origin.of({"meta": {"label": "everything", "command": ["/usr/bin/node", "x.js"]}})
    default = Origin.of({"meta": {"label": "node", "command": ["/usr/bin/node", "x.js"]}})
    explicit = Origin.of({"meta": {"name": "node", "label": "node", "command": ["node"]}})
    http = Origin.of({"meta": {"source": "mcpsniff http", "upstream": "http://srv:9/mcp?k=v"}})
    assert (given.name, default.name, explicit.name) == ("everything", None, "node")
    assert (default.fallback, http.name, http.fallback) == ("node", None, "srv:9")
    assert Origin.of({"meta": "not an object"}) == Origin()


def test_endings_in_words() -> None:
    cases = [
        ("exit", {"returncode": -9, "status": 137, "signal": "SIGKILL"}, "killed by SIGKILL"),
        (
            "exit",
            {"returncode": 0, "status": 0, "forwarded_signals": ["SIGINT"]},
            "exit 0 after SIGINT",
        ),
        ("exit", {"returncode": 3, "status": 3}, "exit 3"),
        ("http-end", {"outcome": "proxy-stopped"}, "proxy stopped"),
        ("session-end", {}, "ended"),
    ]
    for name, data, words in cases:
        identity = SessionIdentity("k")
        identity.saw_event(name, data)
        assert identity.state() == words
    assert SessionIdentity("k").state(live=True) == "live"
    assert SessionIdentity("k").state() == "no end recorded"
    assert [duration_text(x) for x in (0.25, 3.04, 125, 3725)] == [
        "250 ms",
        "3.0 s",
        "2m05s",
        "1h02m",
    ]


def test_a_compact_duration_fits_the_ls_column() -> None:
    """``compact`` drops the milliseconds form and the space before the unit."""
    assert [duration_text(x, compact=True) for x in (0.25, 3.04, 59.96, 125, 3725)] == [
        "0.2s",
        "3.0s",
        "60.0s",
        "2m05s",
        "1h02m",
    ]
