"""install / uninstall refuse ``--all`` with ``--server``: it changed servers nobody named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = {"mcpServers": {"a": {"command": "echo", "args": ["a"]}, "b": {"command": "echo"}}}


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mcpsniff ARGS`` with ``home`` as HOME and state folder (backups go there)."""
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_all_with_a_server_is_refused_and_nothing_changes(tmp_path: Path, verb: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(CONFIG))
    if verb == "uninstall":  # something to undo: both servers wrapped
        assert _run(tmp_path, "install", "--all", "--config", str(config)).returncode == 0
    before, files = config.read_bytes(), _files(tmp_path)
    result = _run(tmp_path, verb, "--all", "--server", "a", "--config", str(config))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"mcpsniff {verb}: --all and --server a: choose one (--all means every server)"
    ]
    assert config.read_bytes() == before
    assert _files(tmp_path) == files  # no backup written either


def test_uninstall_of_one_server_leaves_the_other_wrapped(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(CONFIG))
    assert _run(tmp_path, "install", "--all", "--config", str(config)).returncode == 0
    result = _run(tmp_path, "uninstall", "--server", "a", "--config", str(config))
    assert result.returncode == 0, result.stderr
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["a"] == CONFIG["mcpServers"]["a"]
    assert "mcpsniff" in " ".join(servers["b"]["args"])
