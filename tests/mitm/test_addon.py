"""The mitmproxy addon's behaviour at its edges, with a real ``mitmdump`` each time.

The upstream is a small aiohttp server (``upstreams.py``) on 127.0.0.1: bad
bodies and cut-off event streams must be recorded with the right findings while
mitmdump goes on serving; findings must be on the flows mitmproxy saves; bad
option values and a Python without the mcpsniff package must give one clear
error line, never a traceback; a legacy server that answers on its stream before
acknowledging the POST must still have its answers paired; an unreachable
upstream must be recorded as ``mcpsniff http`` records it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mitmproxy import io as mitmio
from mitmproxy.http import HTTPFlow

from tests.mitm.support import (
    ACCEPT,
    CLIENT_TIMEOUT,
    HERE_PEERS,
    INITIALIZE,
    LATE_OPTIONS,
    RUN_TIMEOUT,
    Mitmdump,
    Relay,
    Trace,
    assert_check_agrees,
    free_port,
    legacy_session,
    post,
    read_trace,
)
from tests.mitm.upstreams import CUT_EVENT, WHOLE_EVENT, Upstream, whole_event
from tests.relay.stdio_support import wait_until


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


async def post_until_broken(url: str, body: dict[str, Any]) -> bytes:
    """POST and read until the connection breaks; what arrived before that."""
    received = bytearray()
    async with aiohttp.ClientSession(timeout=CLIENT_TIMEOUT) as http:
        try:
            async with http.post(url, json=body, headers={"Accept": ACCEPT}) as response:
                async for chunk in response.content.iter_any():
                    received += chunk
        except aiohttp.ClientError:
            return bytes(received)
    pytest.fail(f"the stream ended cleanly: {bytes(received)!r}")


def frames_of(trace: Trace, session: str, direction: str) -> list[Any]:
    return [f for f in trace.frames if f.session == session and f.direction == direction]


def parse_errors(trace: Trace) -> dict[int, dict[str, Any]]:
    """JR-PARSE findings by the one frame each names."""
    out = {}
    for finding in trace.findings:
        if finding.rule == "JR-PARSE":
            (seq,) = finding.seq
            out[seq] = finding.data
    return out


# --------------------------------------------------------------------------- bad input


def test_bad_input_is_recorded_and_mitmdump_keeps_serving(
    upstream: Upstream, tmp_path: Path
) -> None:
    mitm = Mitmdump(
        tmp_path, mode=f"reverse:{upstream.origin}/", trace=tmp_path / "addon.jsonl"
    ).started()
    host = f"127.0.0.1:{upstream.port}"
    garbage = b"this is not json {"
    broken = b'{"jsonrpc": "2.0", "id": 7, "method": "ping"'
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    try:
        # a body that is no JSON at all, on a session (MCP by its header)
        status, _, body = asyncio.run(post(mitm.url("/mcp"), garbage, session="garbage"))
        assert status == 400 and json.loads(body)["error"]["code"] == -32700
        # a JSON-RPC message cut short (MCP by its "jsonrpc" member)
        status, _, _ = asyncio.run(post(mitm.url("/mcp"), broken))
        assert status == 400
        # an event stream whose last event is cut off, then ended cleanly
        status, headers, body = asyncio.run(post(mitm.url("/truncated"), ping, session="cut"))
        assert status == 200 and headers["Content-Type"] == "text/event-stream"
        assert body == WHOLE_EVENT + CUT_EVENT  # passed on, byte for byte
        # an event stream broken off with its connection
        received = asyncio.run(post_until_broken(mitm.url("/abort"), ping))
        assert received == WHOLE_EVENT + CUT_EVENT
        # mitmdump and the addon go on: a later session works and is recorded
        assert mitm.proc.poll() is None
        status, headers, body = asyncio.run(post(mitm.url("/mcp"), INITIALIZE))
        assert status == 200 and json.loads(body)["result"]["serverInfo"]["version"] == "0"
        later = headers["Mcp-Session-Id"]
    finally:
        trace = mitm.finish()
    addon_lines = [line for line in mitm.output.splitlines() if "mcpsniff: " in line]
    assert len(addon_lines) == 1 and "mcpsniff: recording MCP traffic to" in addon_lines[0]

    errors = parse_errors(trace)
    (garbage_frame,) = frames_of(trace, f"{host} garbage", "c2s")
    assert garbage_frame.raw == garbage
    assert errors[garbage_frame.seq]["sender"] == "client"
    (broken_frame,) = [f for f in trace.frames if f.raw == broken]
    assert broken_frame.session == f"{host} http"
    assert errors[broken_frame.seq]["sender"] == "client"

    cut_events = [e for e in trace.events("sse-event") if e.session == f"{host} cut"]
    assert [(e.data.get("id"), e.data.get("incomplete")) for e in cut_events] == [
        ("t-1", None),
        ("t-2", True),
    ]
    cut_last = frames_of(trace, f"{host} cut", "s2c")[-1]
    assert cut_last.raw == CUT_EVENT.split(b"data: ", 1)[1]
    assert errors[cut_last.seq]["cause"] == "truncated"

    # the broken-off stream: its last event is there, incomplete, and so is the error
    (abort_request,) = [e for e in trace.events("http-request") if e.data["path"] == "/abort"]
    number = abort_request.data["exchange"]
    abort_events = [e for e in trace.events("sse-event") if e.data["exchange"] == number]
    assert [e.data.get("incomplete") for e in abort_events] == [None, True]
    abort_last = [f for f in trace.frames if (f.meta or {}).get("exchange") == number][-1]
    assert abort_last.raw == cut_last.raw
    assert errors[abort_last.seq]["cause"] == "truncated"
    (end,) = [e for e in trace.events("http-end") if e.data["exchange"] == number]
    assert end.data["outcome"].startswith("error: ")

    assert sorted(errors) == sorted(
        [garbage_frame.seq, broken_frame.seq, cut_last.seq, abort_last.seq]
    )
    later_messages = [m for m in trace.messages if m.session == f"{host} {later}"]
    assert [(m.kind, m.method, m.answers is not None) for m in later_messages] == [
        ("request", "initialize", False),
        ("response", None, True),
    ]
    assert_check_agrees(trace)


# --------------------------------------------------------------------------- flows


def test_findings_are_attached_to_saved_flows(upstream: Upstream, tmp_path: Path) -> None:
    flows_path = tmp_path / "flows.mitm"
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=tmp_path / "addon.jsonl",
        options={"save_stream_file": str(flows_path)},
    ).started()
    try:
        status, headers, _ = asyncio.run(post(mitm.url("/mcp"), INITIALIZE))
        assert status == 200
        session = headers["Mcp-Session-Id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert asyncio.run(post(mitm.url("/mcp"), initialized, session))[0] == 202
        # answered with id "2", a string, for the number 2
        tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        status, _, body = asyncio.run(post(mitm.url("/idtype/mcp"), tools_list, session))
        assert status == 200 and json.loads(body)["id"] == "2"
        # an event stream that answers, then cuts its last event off
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
        status, _, body = asyncio.run(post(mitm.url("/truncated"), ping, session))
        assert status == 200 and body == whole_event(3) + CUT_EVENT
    finally:
        trace = mitm.finish()
    with flows_path.open("rb") as handle:
        flows = [f for f in mitmio.FlowReader(handle).stream() if isinstance(f, HTTPFlow)]
    assert [f.request.path for f in flows] == ["/mcp", "/mcp", "/idtype/mcp", "/truncated"]
    clean, notified, mismatched, cut = flows
    for flow in (clean, notified):
        assert (flow.comment, flow.marked) == ("", "")
        assert "mcpsniff_findings" not in flow.metadata

    assert mismatched.marked == ":red_circle:"
    assert mismatched.comment.count("JR-RESP-ID") == 1  # once, though it names two frames
    assert mismatched.comment.startswith("error JR-RESP-ID: ")
    assert [f["rule"] for f in mismatched.metadata["mcpsniff_findings"]] == ["JR-RESP-ID"]
    assert mismatched.metadata["mcpsniff_severity"] == "error"

    # an event stream's findings reach its flow before mitmproxy saves it
    assert "error JR-PARSE: " in cut.comment and cut.marked == ":red_circle:"
    # the flows carry exactly the trace's findings
    on_flows = sorted(
        f["rule"] for flow in flows for f in flow.metadata.get("mcpsniff_findings", [])
    )
    assert on_flows == trace.rules() == ["JR-PARSE", "JR-RESP-ID"]


@pytest.mark.parametrize("hold", ["on", "off"])
def test_findings_reach_the_addons_after_it(upstream: Upstream, tmp_path: Path, hold: str) -> None:
    """Held, a flow has its findings when the next addon sees its response; else an update."""
    watch = tmp_path / "watch.jsonl"
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=tmp_path / "addon.jsonl",
        options={"mcpsniff_hold": hold},
        extra=["-s", str(HERE_PEERS / "flow_watch.py")],
        env={**os.environ, "MCPSNIFF_TEST_FLOW_WATCH": str(watch)},
    ).started()
    try:
        status, headers, _ = asyncio.run(post(mitm.url("/mcp"), INITIALIZE))
        session = headers["Mcp-Session-Id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert asyncio.run(post(mitm.url("/mcp"), initialized, session))[0] == 202
        tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        status, _, body = asyncio.run(post(mitm.url("/idtype/mcp"), tools_list, session))
        assert status == 200 and json.loads(body)["id"] == "2"
        deadline = time.monotonic() + 10
        while hold == "off" and time.monotonic() < deadline:
            if watch.exists() and "JR-RESP-ID" in watch.read_text():
                break
            time.sleep(0.05)
    finally:
        trace = mitm.finish()
    seen = [json.loads(line) for line in watch.read_text().splitlines()]
    # (mitmproxy itself sends an update after every hook of a flow)
    responses = [s for s in seen if s["hook"] == "response" and s["path"] == "/idtype/mcp"]
    updates = [s for s in seen if s["hook"] == "update" and s["path"] == "/idtype/mcp"]
    assert len(responses) == 1
    if hold == "on":
        assert responses[0]["comment"].startswith("error JR-RESP-ID: ")
    else:
        # the response went on at once; its findings followed, announced by an update
        assert responses[0]["comment"] == ""
        assert updates[-1]["comment"].startswith("error JR-RESP-ID: ")
    assert trace.rules() == ["JR-RESP-ID"]


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("case", ["existing-trace", "missing-folder", "bad-filter"])
def test_option_errors_are_one_clear_line(case: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    options: dict[str, str] = {}
    if case == "existing-trace":
        trace.write_bytes(b"precious\n")
        expected = f"mcpsniff_trace: {trace} already exists; choose a new file"
    elif case == "missing-folder":
        trace = tmp_path / "no-such-folder" / "trace.jsonl"
        expected = f"mcpsniff_trace: cannot write {trace}: No such file or directory"
    else:
        options["mcpsniff_filter"] = "~q ~~ ("
        expected = "mcpsniff_filter: Invalid filter expression: '~q ~~ ('"
    mitm = Mitmdump(tmp_path, trace=trace, options=options)
    try:
        code = mitm.proc.wait(30)
    except Exception:
        mitm.stop(signal.SIGKILL)
        raise
    # mitmdump refuses to start, saying why in one line
    assert code == 1, mitm.output
    lines = [line for line in mitm.output.splitlines() if expected in line]
    assert len(lines) == 1, mitm.output
    assert "Traceback" not in mitm.output
    assert "Error logged during startup, exiting..." in mitm.output
    if case == "existing-trace":
        assert trace.read_bytes() == b"precious\n"
    elif case == "bad-filter":
        assert not trace.exists()


def test_rejected_change_at_run_time_keeps_recording(upstream: Upstream, tmp_path: Path) -> None:
    existing = tmp_path / "existing.jsonl"
    existing.write_bytes(b"precious\n")
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=tmp_path / "addon.jsonl",
        extra=["-s", str(LATE_OPTIONS)],
        env={"MCPSNIFF_TEST_LATE_OPTIONS": json.dumps({"mcpsniff_trace": str(existing)})},
    ).started()
    try:
        mitm.wait_for(r"late options: (applied|rejected.*)$")
        status, _, _ = asyncio.run(post(mitm.url("/mcp"), INITIALIZE))
        assert status == 200
    finally:
        trace = mitm.finish()
    message = (
        f"late options: rejected: mcpsniff_trace: {existing} already exists; choose a new file"
    )
    assert message in mitm.output
    assert existing.read_bytes() == b"precious\n"
    # the trace in use before the rejected change goes on
    assert [m.method for m in trace.messages] == ["initialize", None]


# --------------------------------------------------------------------------- legacy ordering

EXPECTED_LEGACY = [
    ("c2s", "request", "initialize", 1, False),
    ("s2c", "response", None, 1, True),
    ("c2s", "notification", "notifications/initialized", None, False),
    ("c2s", "request", "ping", 2, False),
    ("s2c", "response", None, 2, True),
]


def _legacy_through_mitmdump(upstream: Upstream, folder: Path) -> Trace:
    mitm = Mitmdump(folder, mode=f"reverse:{upstream.origin}/", trace=folder / "addon.jsonl")
    mitm.started()
    try:
        answers = asyncio.run(legacy_session(mitm.url(""), "/legacy/sse"))
    finally:
        trace = mitm.finish()
    assert [a["data"]["id"] for a in answers] == [1, 2]
    return trace


def test_legacy_answer_before_its_202_is_paired(upstream: Upstream, tmp_path: Path) -> None:
    """The upstream answers each POST on its stream 0.2 s before it acknowledges the POST."""
    trace = _legacy_through_mitmdump(upstream, tmp_path)
    assert trace.summary() == EXPECTED_LEGACY
    assert trace.findings == []
    # each POST's request is in the trace before the stream event answering it
    posts = [e for e in trace.events("http-request") if e.data["method"] == "POST"]
    assert {e.data["transport"] for e in posts} == {"legacy-sse"}
    assert len({e.session for e in trace.events()}) == 1


def test_legacy_answer_before_its_202_mcpsniff_http_agrees(
    upstream: Upstream, tmp_path: Path
) -> None:
    relay = Relay(upstream.url("/legacy/sse"), tmp_path / "relay.jsonl")
    try:
        base = relay.url.removesuffix("/legacy/sse")
        asyncio.run(legacy_session(base, "/legacy/sse"))
    finally:
        relayed = relay.finish()
    assert relayed.summary() == EXPECTED_LEGACY
    assert relayed.findings == []


# --------------------------------------------------------------------------- unreachable


def test_unreachable_upstream_is_recorded_like_mcpsniff_http(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    # Regular mode: mitmproxy connects when the request names its server, and answers
    # 502 when it cannot. (A reverse proxy connects as the client does, and closes
    # the client's connection, before any request, when it cannot.)
    mitm = Mitmdump(tmp_path, trace=tmp_path / "addon.jsonl")
    relay = Relay(closed + "/mcp", tmp_path / "relay.jsonl")
    try:
        mitm.started()
        through_mitm = asyncio.run(post(closed + "/mcp", INITIALIZE, proxy=mitm.proxy_url))
        through_relay = asyncio.run(post(relay.url, INITIALIZE))
    finally:
        addon = mitm.finish()
        relayed = relay.finish()
    assert through_mitm[0] == through_relay[0] == 502
    for trace in (addon, relayed):
        assert [e.event for e in trace.events() if e.event != "session-end"] == [
            "http-request",
            "upstream-unreachable",
            "http-end",
        ]
        (frame,) = trace.frames
        assert json.loads(frame.raw) == INITIALIZE
        assert trace.events("http-end")[0].data["outcome"] == "upstream-unreachable"
    assert addon.summary() == relayed.summary() == [("c2s", "request", "initialize", 1, False)]
    assert addon.rules() == relayed.rules()


# --------------------------------------------------------------------------- the analysis process

GONE = "mcpsniff: the analysis process is gone"


def analysis_processes(mitm: Mitmdump) -> list[int]:
    """mitmdump's children (Linux /proc): the addon's analysis process."""
    found: list[int] = []
    for task in Path(f"/proc/{mitm.proc.pid}/task").iterdir():
        found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def test_show_lines_reach_the_event_log(upstream: Upstream, tmp_path: Path) -> None:
    """The timeline is made in the analysis process and logged by mitmdump."""
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=tmp_path / "addon.jsonl",
        options={"mcpsniff_show": "true"},
    ).started()
    try:
        status, _, _ = asyncio.run(post(mitm.url("/mcp"), INITIALIZE))
        assert status == 200
        mitm.wait_for(r"mcpsniff: .*S→C result +id=1 initialize")
    finally:
        trace = mitm.finish()
    lines = [line for line in mitm.output.splitlines() if "mcpsniff: " in line]
    assert any("C→S request  id=1 initialize" in line for line in lines), lines
    assert any("http-request #1 POST /mcp" in line for line in lines), lines
    assert [m.method for m in trace.messages] == ["initialize", None]


def test_new_trace_at_run_time_completes_both(upstream: Upstream, tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=first,
        extra=["-s", str(LATE_OPTIONS)],
        env={"MCPSNIFF_TEST_LATE_OPTIONS": json.dumps({"mcpsniff_trace": str(second)})},
    ).started()
    try:
        mitm.wait_for(r"late options: applied$")
        mitm.wait_for(f"recording MCP traffic to {second}")
        assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
    finally:
        before = mitm.finish()
    after = read_trace(second)
    assert before.records == []  # no traffic before the change: a header only
    assert [m.method for m in after.messages] == ["initialize", None]
    # the second trace is complete when mitmdump has exited: its session ended
    assert [e.event for e in after.events()][-1] == "session-end"


def test_analysis_process_dying_keeps_mitmdump_proxying(upstream: Upstream, tmp_path: Path) -> None:
    flows_path = tmp_path / "flows.mitm"
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=tmp_path / "addon.jsonl",
        options={"save_stream_file": str(flows_path)},
    ).started()
    try:
        status, headers, _ = asyncio.run(post(mitm.url("/mcp"), INITIALIZE))
        assert status == 200
        (analysis,) = analysis_processes(mitm)
        os.kill(analysis, signal.SIGKILL)
        mitm.wait_for(GONE)
        # JSON and event-stream answers, a bad body: every flow passes, none waits
        session = headers["Mcp-Session-Id"]
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
        for _ in range(3):
            assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
            status, _, body = asyncio.run(post(mitm.url("/truncated"), ping, session))
            assert status == 200 and body == whole_event(3) + CUT_EVENT
            assert asyncio.run(post(mitm.url("/mcp"), b"not json", session))[0] == 400
        assert mitm.proc.poll() is None
    finally:
        trace = mitm.finish()
    # one clear line, no traceback (finish checks), and mitmdump exits cleanly
    gone = [line for line in mitm.output.splitlines() if GONE in line]
    assert len(gone) == 1, mitm.output
    assert "killed by signal 9" in gone[0] and "proxying continues" in gone[0]
    # the trace holds what was recorded before
    assert [m.method for m in trace.messages][:1] == ["initialize"]
    with flows_path.open("rb") as handle:
        flows = [f for f in mitmio.FlowReader(handle).stream() if isinstance(f, HTTPFlow)]
    assert len(flows) == 10
    # The trace says what it lacks: each MCP exchange is recorded to its end or
    # named in a capture-gap (issue 12), and the sessions are ended.
    named = {
        n
        for gap in trace.events("capture-gap")
        for first, last in gap.data["exchanges"]
        for n in range(first, last + 1)
    }
    ended = {e.data["exchange"] for e in trace.events("http-end")}
    assert named and not named & ended
    assert named | ended == set(range(1, len(named | ended) + 1))
    assert len(named | ended) >= 7  # the first initialize, at least 6 exchanges after the kill
    assert trace.events()[-1].event == "session-end"
    assert "the trace was completed without the analysis process" in mitm.output
    check = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", str(trace.path)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert check.returncode in (0, 1) and "Traceback" not in check.stderr, check.stderr


@pytest.mark.parametrize("hold", ["on", "off"])
def test_a_stalled_analysis_process_delays_flows_at_most_sync_timeout(
    upstream: Upstream, tmp_path: Path, hold: str
) -> None:
    from mcpsniff.mitm.link import SYNC_TIMEOUT

    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        trace=tmp_path / "addon.jsonl",
        options={"mcpsniff_hold": hold},
    ).started()
    try:
        assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
        (analysis,) = analysis_processes(mitm)
        os.kill(analysis, signal.SIGSTOP)
        try:
            started = time.monotonic()
            assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
            waited = time.monotonic() - started
        finally:
            os.kill(analysis, signal.SIGCONT)
        if hold == "on":
            assert SYNC_TIMEOUT * 0.9 <= waited < SYNC_TIMEOUT * 2 + 2
            mitm.wait_for("mcpsniff: the analysis process is more than")
        else:
            # nothing waits for the analysis process: no delay, nothing to warn about
            assert waited < SYNC_TIMEOUT * 0.5
        assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
    finally:
        trace = mitm.finish()
    assert mitm.output.count("the analysis process is more than") == (hold == "on")
    assert GONE not in mitm.output
    # it caught up: nothing is missing from the trace
    assert [m.method for m in trace.messages] == ["initialize", None] * 3


def test_addon_a_refused_salvage_is_warned_once(tmp_path: Path) -> None:
    """The addon salvages at the death and when the trace closes: one refusal logged."""
    trace = tmp_path / "addon.jsonl"
    user = tmp_path / "notes.txt"
    user.write_bytes(b"precious\n")
    with Upstream() as server:
        mitm = Mitmdump(tmp_path, mode=f"reverse:{server.origin}/", trace=trace).started()
        try:
            assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
            wait_until(lambda: b'"http-response"' in trace.read_bytes(), "the first exchange")
            trace.rename(tmp_path / "moved.jsonl")
            trace.symlink_to(user)
            (analysis,) = analysis_processes(mitm)
            os.kill(analysis, signal.SIGKILL)
            mitm.wait_for(GONE)
            for _ in range(3):
                assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
            mitm.wait_for("the trace stays incomplete")
        finally:
            code = mitm.stop(signal.SIGINT)
    assert code == 0, mitm.output
    assert user.read_bytes() == b"precious\n"
    refusals = [line for line in mitm.output.splitlines() if "the trace stays incomplete" in line]
    assert len(refusals) == 1, mitm.output
    assert "is no longer the trace this run wrote" in refusals[0]
