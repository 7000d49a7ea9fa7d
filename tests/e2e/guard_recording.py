"""Recording real servers under ``mcpsniff stdio`` for the guard's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LIST_CLIENT = REPO / "tests" / "e2e" / "peers" / "list_client.py"
DRIFTING = REPO / "tests" / "e2e" / "peers" / "drifting_server.py"
EVERYTHING = REPO / ".peers/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SDK2_PYTHON = REPO / ".peers" / "sdk2" / "bin" / "python"
SDK2_SERVER = REPO / "tests" / "e2e" / "peers" / "sdk2_server.py"


def env(state: Path) -> dict[str, str]:
    """The environment of a recording: this worktree's code, a private state folder."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "XDG_STATE_HOME": str(state),
    }


def mcpsniff(
    *args: str | Path, state: Path, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """``mcpsniff ARGS`` as a subprocess (the console script of this interpreter)."""
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(state),
        check=check,
    )


def record(
    trace: Path,
    name: str,
    server: list[str | Path],
    state: Path,
    *client_args: str,
    relay_options: bool = False,
) -> dict[str, Any]:
    """Run the list client against ``server`` under ``mcpsniff stdio``; the client's output.

    ``relay_options``: ``server`` starts with options of ``mcpsniff stdio`` and its own ``--``.
    """
    relay = [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), "--name", name]
    tail = [str(part) for part in server] if relay_options else ["--", *map(str, server)]
    done = subprocess.run(
        [sys.executable, str(LIST_CLIENT), *client_args, "--", *relay, *tail],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(state),
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result
