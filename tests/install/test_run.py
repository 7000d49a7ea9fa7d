"""install / uninstall on sample configurations of each client, in a temporary HOME."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpsniff.cli import main
from mcpsniff.install import jsonc
from mcpsniff.install.clients import CLIENTS, config_files

FS = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
REMOTE_URL = "https://example.com/mcp"

#: client -> (path under HOME on Linux, the file's text)
SAMPLES = {
    "claude-desktop": (
        ".config/Claude/claude_desktop_config.json",
        json.dumps(
            {"mcpServers": {"fs": FS, "git": {"command": "uvx", "args": ["mcp-server-git"]}}},
            indent=2,
        ),
    ),
    "claude-code": (
        ".claude.json",
        json.dumps(
            {
                "numStartups": 12,
                "mcpServers": {"fs": FS},
                "projects": {
                    "/home/u/app": {"mcpServers": {"db": {"command": "db-mcp", "env": {"K": "v"}}}}
                },
                "remote": {"ignored": True},
            },
            indent=2,
        ),
    ),
    "cursor": (
        ".cursor/mcp.json",
        json.dumps({"mcpServers": {"fs": FS, "remote": {"url": REMOTE_URL}}}, indent=4),
    ),
    "windsurf": (
        ".codeium/windsurf/mcp_config.json",
        json.dumps({"mcpServers": {"fs": FS, "remote": {"serverUrl": REMOTE_URL}}}),
    ),
    "vscode": (
        ".config/Code/User/mcp.json",
        """{
  // Servers for this machine
  "servers": {
    /* the filesystem one */
    "fs": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem", // the path follows
        "/tmp"
      ],
    },
    "remote": { "type": "http", "url": "https://example.com/mcp" },
    "bare": {"command": "my-server"}
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


def stdio_entries(path: Path) -> dict[str, dict]:
    root = jsonc.parse(path.read_text()).value
    tables = [root.get("mcpServers") or {}, root.get("servers") or {}]
    tables += [p.get("mcpServers", {}) for p in (root.get("projects") or {}).values()]
    return {n: e for t in tables for n, e in t.items() if "command" in e}


def assert_wrapped(entry: dict, name: str, command: str, args: list[str], home: Path) -> None:
    assert entry["command"] == sys.executable
    pattern = str(home / ".local/state/mcpsniff/traces/{name}-{time}-{pid}.jsonl")
    assert entry["args"] == [
        "-m",
        "mcpsniff",
        "stdio",
        "--name",
        name,
        "--trace",
        pattern,
        "--",
        command,
        *args,
    ]


@pytest.mark.parametrize("client", sorted(SAMPLES))
def test_install_wraps_every_stdio_server_and_uninstall_restores_the_bytes(
    home: Path, client: str
) -> None:
    path, original = place(home, client)
    before = stdio_entries(path)
    result = run("install", "--client", client, "--all")
    assert result.exit_code == 0, result.output
    after = stdio_entries(path)
    assert sorted(after) == sorted(before)
    for name, entry in after.items():
        old = before[name]
        assert_wrapped(entry, name, old["command"], old.get("args", []), home)
        assert {k: v for k, v in entry.items() if k not in ("command", "args")} == {
            k: v for k, v in old.items() if k not in ("command", "args")
        }
    folder = home / ".local/state/mcpsniff/install-backups"
    (copy,) = folder.glob("*.orig")
    (meta,) = folder.glob("*.json")
    assert len(list(folder.iterdir())) == 2 and copy.stem == meta.stem
    # The backup is the file as it was, byte for byte: cp puts it back.
    assert copy.read_bytes() == original and copy.stat().st_mode & 0o777 == 0o600
    assert f"backup: {copy} (to put the file back: cp {copy} {path})" in result.output
    # Idempotent: a second install changes nothing and writes no backup.
    wrapped = path.read_bytes()
    again = run("install", "--client", client, "--all")
    assert again.exit_code == 0 and "already runs under mcpsniff" in again.output
    assert path.read_bytes() == wrapped
    assert len(list(folder.iterdir())) == 2
    result = run("uninstall", "--client", client)
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == original


def test_jsonc_comments_and_key_order_survive(home: Path) -> None:
    path, _ = place(home, "vscode")
    run("install", "--client", "vscode", "--all")
    text = path.read_text()
    for comment in ("// Servers for this machine", "/* the filesystem one */"):
        assert comment in text
    assert text.index('"type"') < text.index('"command"') < text.index('"remote"')
    assert text.rstrip().endswith('"inputs": [],\n}'.rstrip())


def test_http_entries_are_listed_with_the_proxy_command_and_not_changed(home: Path) -> None:
    path, _ = place(home, "cursor")
    result = run("install", "--client", "cursor", "--all")
    root = json.loads(path.read_text())
    assert root["mcpServers"]["remote"] == {"url": REMOTE_URL}
    assert f"mcpsniff http --upstream {REMOTE_URL} --trace" in result.output
    assert "point the client at http://127.0.0.1:6280/mcp" in result.output


def test_dry_run_prints_a_diff_and_changes_nothing(home: Path) -> None:
    path, original = place(home, "claude-desktop")
    result = run("install", "--client", "claude-desktop", "--server", "git", "--dry-run")
    assert result.exit_code == 0
    assert path.read_bytes() == original
    assert not (home / ".local/state/mcpsniff/install-backups").exists()
    minus = [
        line
        for line in result.output.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    plus = [
        line
        for line in result.output.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert any('"uvx"' in line for line in minus)
    assert any("mcp-server-git" in line and '"--name", "git"' in line for line in plus)
    assert not any("server-filesystem" in line for line in plus)  # only --server git


def test_uninstall_after_other_changes_removes_only_the_wrapping(home: Path) -> None:
    path, _ = place(home, "vscode")
    run("install", "--client", "vscode", "--all")
    # The user edits the file afterwards: a new server and a comment.
    edited = path.read_text().replace(
        '"inputs": [],', '"inputs": [], // added later\n  "extra": 1,'
    )
    path.write_text(edited)
    result = run("uninstall", "--client", "vscode")
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert "// added later" in text and '"extra": 1' in text
    # Each entry's original text is back, comments inside it included.
    assert '"@modelcontextprotocol/server-filesystem", // the path follows' in text
    assert '"bare": {"command": "my-server"}' in text
    assert text == SAMPLES["vscode"][1].replace(
        '"inputs": [],', '"inputs": [], // added later\n  "extra": 1,'
    )


def test_uninstall_of_a_wrapping_it_has_no_backup_for(home: Path) -> None:
    path = home / "custom.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "s": {
                        "command": "mcpsniff",
                        "args": ["stdio", "--name", "s", "--", "srv", "-x"],
                    }
                }
            }
        )
    )
    result = run("uninstall", "--config", str(path))
    assert result.exit_code == 0, result.output
    assert json.loads(path.read_text()) == {"mcpServers": {"s": {"command": "srv", "args": ["-x"]}}}


def test_two_installs_unwind_in_turn(home: Path) -> None:
    path, original = place(home, "claude-desktop")
    run("install", "--client", "claude-desktop", "--server", "fs")
    run("install", "--client", "claude-desktop", "--server", "git")
    assert len(stdio_entries(path)) == 2
    result = run("uninstall", "--client", "claude-desktop")
    assert result.output.count("restored the bytes") == 2
    assert path.read_bytes() == original


def test_config_option_symlink_and_mode_are_kept(home: Path) -> None:
    real = home / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"mcpServers": {"a": {"command": "a"}}}))
    real.chmod(0o640)
    link = home / "link.json"
    link.symlink_to(real)
    assert run("install", "--config", str(link), "--all").exit_code == 0
    assert link.is_symlink()
    assert os.stat(real).st_mode & 0o777 == 0o640
    assert stdio_entries(real)["a"]["args"][-2:] == ["--", "a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [("{ nope", "not JSON"), ("\xff\xfe", "not UTF-8")],
)
def test_bad_config_is_one_line_and_untouched(home: Path, text: str, message: str) -> None:
    path = home / "bad.json"
    path.write_bytes(text.encode("latin-1"))
    result = run("install", "--config", str(path), "--all")
    assert result.exit_code == 2
    assert len(result.output.splitlines()) == 1 and message in result.output
    assert path.read_bytes() == text.encode("latin-1")


def test_no_server_choice_lists_servers_and_exits_2(home: Path) -> None:
    place(home, "cursor")
    result = run("install", "--client", "cursor")
    assert result.exit_code == 2
    assert "fs (stdio)" in result.output and "remote (http)" in result.output
    unknown = run("install", "--client", "cursor", "--server", "nope")
    assert unknown.exit_code == 2 and "no server named 'nope'" in unknown.output


def test_client_paths_on_macos(home: Path) -> None:
    support = home / "Library" / "Application Support"
    assert config_files(CLIENTS["claude-desktop"], home, "darwin") == [
        support / "Claude" / "claude_desktop_config.json"
    ]
    assert (
        config_files(CLIENTS["vscode"], home, "darwin")[0] == support / "Code" / "User" / "mcp.json"
    )
    assert config_files(CLIENTS["cursor"], home, "darwin") == [home / ".cursor" / "mcp.json"]


def test_uninstall_dry_run_shows_the_restoring_diff(home: Path) -> None:
    path, original = place(home, "cursor")
    run("install", "--client", "cursor", "--all")
    wrapped = path.read_bytes()
    result = run("uninstall", "--client", "cursor", "--dry-run")
    assert result.exit_code == 0
    assert path.read_bytes() == wrapped
    assert any(line.startswith("+") and '"npx"' in line for line in result.output.splitlines())
    assert run("uninstall", "--client", "cursor").exit_code == 0
    assert path.read_bytes() == original


# A command that did nothing said nothing: ``install --config F --all`` on a file without
# servers (empty, ``{}``, an empty ``mcpServers``, a typo'd table) printed only ``config: F``
# and exited 0.


@pytest.mark.parametrize("text", ["", "{}", '{"mcpServers": {}}', '{"mcpServer": {"a": {}}}'])
def test_install_says_when_a_config_holds_no_server(tmp_path: Path, text: str) -> None:
    config = tmp_path / "c.json"
    config.write_text(text)
    result = CliRunner().invoke(
        main, ["install", "--config", str(config), "--all"], env={"HOME": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert "no MCP servers in it" in result.output
    assert config.read_text() == text
    assert not (tmp_path / ".local").exists()  # no backup of a file left alone


def test_install_of_a_real_server_does_not_say_so(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text('{"mcpServers": {"fs": {"command": "npx", "args": ["x"]}}}')
    result = CliRunner().invoke(
        main,
        ["install", "--config", str(config), "--all", "--dry-run"],
        env={"HOME": str(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    assert "+ fs: runs under mcpsniff stdio" in result.output
    assert "no MCP servers" not in result.output


def test_a_dry_run_without_a_choice_shows_each_choice_and_changes_nothing(home: Path) -> None:
    path, original = place(home, "cursor")
    result = run("install", "--client", "cursor", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  + --server fs: would run it under mcpsniff stdio" in lines
    # The HTTP server's proxy, and --all's diff: every stdio server wrapped.
    assert any("mcpsniff http --upstream https://example.com/mcp" in line for line in lines)
    assert "  --all: every server marked + above, this diff:" in lines
    assert any(line.startswith("+") and "mcpsniff" in line for line in lines)
    assert lines[-1] == (
        "nothing changed (--dry-run); choose with --server NAME (repeatable) or --all"
    )
    assert path.read_bytes() == original
    assert not (home / ".local/state/mcpsniff").exists()
    # Without --dry-run, a missing choice is still refused.
    refused = run("install", "--client", "cursor")
    assert refused.exit_code == 2 and path.read_bytes() == original


def test_each_suggested_proxy_listens_on_its_own_port(home: Path) -> None:
    config = home / "mcp.json"
    servers = {
        "one": {"url": "https://one.example/mcp"},
        "two": {"url": "https://two.example/api/mcp"},
        "three": {"serverUrl": "http://three.example:8080/"},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    result = run("install", "--config", str(config), "--all")
    assert result.exit_code == 0, result.output
    listens = [line.rsplit(" ", 1)[1] for line in result.output.splitlines() if "--listen" in line]
    assert listens == ["127.0.0.1:6280", "127.0.0.1:6281", "127.0.0.1:6282"]
    points = [line.split("at ", 1)[1] for line in result.output.splitlines() if "point" in line]
    assert points == [
        "http://127.0.0.1:6280/mcp",
        "http://127.0.0.1:6281/api/mcp",
        "http://127.0.0.1:6282/",
    ]


def test_uninstall_keeps_a_plain_copy_of_what_it_changed_too(home: Path) -> None:
    path, original = place(home, "claude-desktop")
    assert run("install", "--client", "claude-desktop", "--server", "git").exit_code == 0
    wrapped = path.read_bytes()
    # Someone edits the file after install: uninstall unwraps instead of restoring bytes.
    path.write_bytes(wrapped.replace(b'"git"', b'"git" ', 1))
    edited = path.read_bytes()
    result = run("uninstall", "--client", "claude-desktop")
    assert result.exit_code == 0, result.output
    folder = home / ".local/state/mcpsniff/install-backups"
    (copy,) = folder.glob("uninstall-*.orig")
    assert copy.read_bytes() == edited
    assert f"cp {copy} {path}" in result.output
    assert path.read_bytes() != edited and b"mcpsniff" not in path.read_bytes()
    assert json.loads(path.read_bytes()) == json.loads(original)
