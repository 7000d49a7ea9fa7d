"""``mcpsniff http`` as a new user types it: malformed addresses are usage errors.

Each case runs the real command with a bounded wait: a relay that starts
listening on an address it should have refused is killed and counts as a
failure, never as a hang.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.relay.stdio_support import relay_env

MCPSNIFF = [sys.executable, "-m", "mcpsniff"]


def _http(tmp_path: Path, *args: str) -> tuple[int | None, str, Path]:
    """Run ``mcpsniff http ARGS --trace T``; (exit status or None if still running, stderr, T)."""
    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [*MCPSNIFF, "http", *args, "--trace", str(trace)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=relay_env(),
    )
    try:
        _, err = proc.communicate(timeout=15)
        return proc.returncode, err, trace
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return None, err, trace


def test_listen_with_an_unclosed_bracket_is_a_usage_error(tmp_path: Path) -> None:
    status, err, _ = _http(tmp_path, "--listen", "[::1", "--upstream", "http://127.0.0.1:9/")
    assert status == 2
    assert "an IPv6 address goes inside [ ]" in err, err


def test_listen_with_an_unbracketed_ipv6_address_is_refused(tmp_path: Path) -> None:
    status, err, _ = _http(tmp_path, "--listen", "::1:0", "--upstream", "http://127.0.0.1:9/")
    assert status == 2, err
    assert "inside [ ]" in err, err


def test_upstream_with_a_broken_ipv6_literal_is_one_line_and_no_trace(tmp_path: Path) -> None:
    status, err, trace = _http(tmp_path, "--listen", "127.0.0.1:0", "--upstream", "http://[::1")
    assert status == 2, err
    assert "Traceback" not in err, err
    assert "--upstream" in err, err
    assert not trace.exists(), "a refused start must not leave a trace behind"


def test_listen_port_out_of_range_is_refused(tmp_path: Path) -> None:
    """The fixed case of issue 12 (99999 used to wrap to 34463), kept as a near-miss."""
    status, err, trace = _http(
        tmp_path, "--listen", "127.0.0.1:99999", "--upstream", "http://127.0.0.1:9/"
    )
    assert status == 2
    assert "99999 is no TCP port" in err
    assert not trace.exists()
