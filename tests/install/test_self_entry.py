"""``mcpsniff install --self``: the ``mcpsniff mcp`` server added to each client's configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpsniff.cli import main
from mcpsniff.install import jsonc
from mcpsniff.install.plan import ConfigError
from mcpsniff.install.self_entry import plan_self, self_entry

#: client -> (its configuration file under HOME on Linux, the file's text)
SAMPLES = {
    "claude-desktop": (
        ".config/Claude/claude_desktop_config.json",
        '{\n  "mcpServers": {\n    "fs": {"command": "npx", "args": ["-y", "fs-server"]}\n  }\n}\n',
    ),
    "claude-code": (
        ".claude.json",
        '{"numStartups": 3, "mcpServers": {"git": {"command": "uvx"}},\n'
        ' "projects": {"/p": {"mcpServers": {"db": {"command": "db"}}}}}',
    ),
    "cursor": (
        ".cursor/mcp.json",
        '{\n    "mcpServers": {\n        "r": {"url": "https://x"}\n    }\n}',
    ),
    "windsurf": (".codeium/windsurf/mcp_config.json", "{}"),
    "vscode": (
        ".config/Code/User/mcp.json",
        """{
  // Servers for this machine
  "servers": {
    /* the filesystem one */
    "fs": {"type": "stdio", "command": "npx", "args": ["fs"],},
  },
  "inputs": [],
}
""",
    ),
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def place(home: Path, client: str) -> tuple[Path, bytes]:
    relative, text = SAMPLES[client]
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, path.read_bytes()


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


ENTRY = {"command": sys.executable, "args": ["-m", "mcpsniff", "mcp"]}


def _servers(path: Path) -> dict:
    root = jsonc.parse(path.read_text()).value
    return root.get("mcpServers", root.get("servers"))


@pytest.mark.parametrize("client", sorted(SAMPLES))
def test_install_self_adds_the_server_and_uninstall_restores_the_bytes(
    home: Path,
    client: str,
) -> None:
    path, before = place(home, client)
    old = dict(_servers(path) or {})
    result = run("install", "--self", "--client", client)
    assert result.exit_code == 0, result.output
    assert "+ mcpsniff: mcpsniff mcp" in result.output
    servers = _servers(path)
    assert servers["mcpsniff"] == ENTRY
    assert {k: v for k, v in servers.items() if k != "mcpsniff"} == old  # the rest unchanged
    after = path.read_bytes()
    again = run("install", "--self", "--client", client)
    assert again.exit_code == 0 and "already configured" in again.output
    assert path.read_bytes() == after  # idempotent
    undone = run("uninstall", "--client", client)
    assert undone.exit_code == 0, undone.output
    assert path.read_bytes() == before


def test_comments_survive_in_vscode_jsonc(home: Path) -> None:
    path, _ = place(home, "vscode")
    assert run("install", "--self", "--client", "vscode").exit_code == 0
    text = path.read_text()
    assert "// Servers for this machine" in text and "/* the filesystem one */" in text
    assert '\n    "mcpsniff": {' in text  # at the indentation of its neighbours


def test_dry_run_shows_the_diff_and_changes_nothing(home: Path) -> None:
    path, before = place(home, "cursor")
    result = run("install", "--self", "--client", "cursor", "--dry-run")
    assert result.exit_code == 0
    added = [line for line in result.output.splitlines() if line.startswith("+ ")]
    assert len(added) == 1 and added[0].strip("+ ").startswith('"mcpsniff": {"command":')
    assert path.read_bytes() == before


def test_self_takes_no_server_choice(home: Path) -> None:
    place(home, "cursor")
    result = run("install", "--self", "--all", "--client", "cursor")
    assert result.exit_code == 2 and "--self" in result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"mcpServers": {"mcpsniff": ENTRY}}),
        ("{}", {"mcpServers": {"mcpsniff": ENTRY}}),
        ('{"theme": "dark"}', {"mcpServers": {"mcpsniff": ENTRY}, "theme": "dark"}),
        ('{"mcpServers": {}}', {"mcpServers": {"mcpsniff": ENTRY}}),
    ],
)
def test_files_without_servers(tmp_path: Path, text: str, expected: dict) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    plan = plan_self(path, python=sys.executable)
    assert jsonc.parse(plan.new_text).value == expected


def test_an_existing_mcpsniff_entry_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"mcpServers": {"mcpsniff": {"command": "mine"}}}')
    assert not plan_self(path).differs


def test_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a JSON object"):
        plan_self(path)


def test_self_entry_runs_this_interpreter() -> None:
    assert self_entry() == ENTRY
