"""Review 3: ``mcpsniff stdio`` completing its trace after its analysis process died,
with the trace path swapped under it (real relay, real pipes, SIGKILL)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from tests.mitm.support import Mitmdump
from tests.mitm.test_addon import GONE, INITIALIZE, analysis_processes, post
from tests.mitm.upstreams import Upstream as AddonUpstream
from tests.relay.http_upstreams import Upstream
from tests.relay.stdio_support import peer, relay, wait_until
from tests.relay.test_http import (  # noqa: F401  (fixtures)
    ProxyFactory,
    analysis_process,
    run,
    start_proxy,
    upstream,
)
from tests.relay.test_stdio_relay import analysis_process_of
from tests.review.test_http_channel_faults import _post_all

LINES = [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(40)]


def _swap_and_kill(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    trace = tmp_path / "t.jsonl"
    user = tmp_path / "notes.txt"
    user.write_bytes(b"precious\n")
    with relay(peer("echo"), "--trace", str(trace)) as r:
        r.send(LINES[0])
        r.wait_stdout(LINES[0])
        wait_until(lambda: b'"dir":"s2c"' in trace.read_bytes(), "the first answer recorded")
        # The trace moved away and a symlink to a user's file put in its place.
        trace.rename(tmp_path / "moved.jsonl")
        trace.symlink_to(user)
        os.kill(analysis_process_of(r.proc.pid), signal.SIGKILL)
        for line in LINES[1:]:
            r.send(line)
        r.wait_stdout(b"".join(LINES))
        assert r.finish() == 0
    return user, tmp_path / "moved.jsonl", r.stderr_lines()


def test_a_trace_swapped_for_a_symlink_leaves_the_user_file_alone(tmp_path: Path) -> None:
    user, moved, stderr = _swap_and_kill(tmp_path)
    assert user.read_bytes() == b"precious\n"
    assert b"capture-gap" not in moved.read_bytes()
    assert any("is no longer the trace this run wrote" in line for line in stderr), stderr


def test_a_refused_salvage_is_warned_once(tmp_path: Path) -> None:
    _, _, stderr = _swap_and_kill(tmp_path)
    refusals = [line for line in stderr if "the trace stays incomplete" in line]
    assert len(refusals) == 1, refusals


# ----------------------------------------------------------------- mcpsniff http


def test_http_a_refused_salvage_is_warned_once(
    start_proxy: ProxyFactory,  # noqa: F811
    upstream: Upstream,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The salvage at the death and the one at the end meet the same refusal: said once."""
    proxy = start_proxy(upstream.url("/echo/mcp"))
    run(_post_all(proxy.url, 1, 0))
    wait_until(lambda: b'"http-response"' in proxy.trace_path.read_bytes(), "the first exchange")
    user = tmp_path / "notes.txt"
    user.write_bytes(b"precious\n")
    proxy.trace_path.rename(tmp_path / "moved.jsonl")
    proxy.trace_path.symlink_to(user)
    os.kill(analysis_process(proxy), signal.SIGKILL)
    run(_post_all(proxy.url, 20, 1))
    proxy.proc.send_signal(signal.SIGTERM)
    assert proxy.proc.wait(30) == 3, proxy.stderr
    assert user.read_bytes() == b"precious\n"
    refusals = [line for line in proxy.stderr.splitlines() if "the trace stays incomplete" in line]
    assert len(refusals) == 1, proxy.stderr
    assert "is no longer the trace this run wrote" in refusals[0]


# ----------------------------------------------------------------- the mitmproxy addon


def test_addon_a_refused_salvage_is_warned_once(tmp_path: Path) -> None:
    """The addon salvages at the death and when the trace closes: one refusal logged."""
    trace = tmp_path / "addon.jsonl"
    user = tmp_path / "notes.txt"
    user.write_bytes(b"precious\n")
    with AddonUpstream() as server:
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
