"""install / uninstall on hostile configurations: never a broken server, never a clobbered file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpsniff.cli import main
from mcpsniff.install import jsonc
from mcpsniff.install import run as install_run
from mcpsniff.trace.paths import resolve_trace_path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def config(home: Path, servers: dict) -> tuple[Path, bytes]:
    path = home / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path, path.read_bytes()


def test_a_state_folder_with_braces_still_gives_a_trace_pattern_that_works(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = home / "st{ate}" / "x}{y"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    path, _ = config(home, {"fs": {"command": "fs-server"}})
    assert run("install", "--config", str(path), "--all").exit_code == 0
    args = jsonc.parse(path.read_text()).value["mcpServers"]["fs"]["args"]
    pattern = args[args.index("--trace") + 1]
    # What `mcpsniff stdio --trace PATTERN` will make of it at each launch.
    resolved = resolve_trace_path(pattern, "fs", now=1767225600.0, pid=42)
    assert resolved.parent == state / "mcpsniff" / "traces"
    assert resolved.name.startswith("fs-") and resolved.name.endswith("-42.jsonl")


@pytest.mark.parametrize("args", ["--flag", {"a": 1}, ["--port", 8080]])
def test_an_entry_whose_args_are_not_a_string_list_is_left_alone(home: Path, args: object) -> None:
    path, original = config(home, {"odd": {"command": "srv", "args": args}})
    result = run("install", "--config", str(path), "--all")
    assert result.exit_code == 0, result.output
    assert "? odd: args is not a list of strings; left alone" in result.output
    assert path.read_bytes() == original


def test_a_read_only_configuration_is_refused_and_untouched(home: Path) -> None:
    path, original = config(home, {"fs": {"command": "fs-server"}})
    other, other_original = home / "other.json", original
    other.write_bytes(original)
    path.chmod(0o444)
    result = run("install", "--config", str(other), "--config", str(path), "--all")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"mcpsniff install: {path}: the file is read-only; left untouched (chmod u+w it first)"
    )
    assert path.read_bytes() == original and os.stat(path).st_mode & 0o777 == 0o444
    # Refused before anything was written: the other file is untouched too.
    assert other.read_bytes() == other_original
    assert not (home / ".local/state/mcpsniff/install-backups").exists() or not any(
        (home / ".local/state/mcpsniff/install-backups").iterdir()
    )


def test_uninstall_refuses_a_read_only_configuration(home: Path) -> None:
    path, _ = config(home, {"fs": {"command": "fs-server"}})
    assert run("install", "--config", str(path), "--all").exit_code == 0
    wrapped = path.read_bytes()
    path.chmod(0o444)
    result = run("uninstall", "--config", str(path))
    assert result.exit_code == 2 and "read-only" in result.output
    assert path.read_bytes() == wrapped


def test_a_change_saved_by_the_client_meanwhile_is_not_clobbered(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = config(home, {"fs": {"command": "fs-server"}})
    saved_by_client = json.dumps({"mcpServers": {"fs": {"command": "fs-server"}, "new": {}}})
    real_backup = install_run.write_backup

    def backup_then_client_saves(*args: object, **kwargs: object) -> Path:
        backup = real_backup(*args, **kwargs)  # type: ignore[arg-type]
        path.write_text(saved_by_client)  # the client writes its config right now
        return backup

    monkeypatch.setattr(install_run, "write_backup", backup_then_client_saves)
    result = run("install", "--config", str(path), "--all")
    assert result.exit_code == 2
    assert "changed while mcpsniff was editing it; run again" in result.output
    assert path.read_text() == saved_by_client
    backups = home / ".local/state/mcpsniff/install-backups"
    assert list(backups.iterdir()) == []


@pytest.mark.parametrize(
    "damage",
    [
        {"original_b64": "!!!not base64"},
        {"original_b64": 5},
        {"entries": {"mcpServers\u0000fs": 5}},
        {"entries": [1]},
        {"time": "late"},
        {"written_sha256": None},
    ],
    ids=["bad base64", "b64 a number", "entry a number", "entries a list", "time", "sha"],
)
def test_a_damaged_backup_is_ignored_and_the_wrapping_still_removed(
    home: Path, damage: dict
) -> None:
    path, _ = config(home, {"fs": {"command": "fs-server", "args": ["--root", "/srv"]}})
    assert run("install", "--config", str(path), "--all").exit_code == 0
    [backup] = (home / ".local/state/mcpsniff/install-backups").glob("*.json")
    document = json.loads(backup.read_text())
    backup.write_text(json.dumps({**document, **damage}))
    result = run("uninstall", "--config", str(path))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    entry = jsonc.parse(path.read_text()).value["mcpServers"]["fs"]
    assert entry == {"command": "fs-server", "args": ["--root", "/srv"]}


def test_lone_surrogate_escapes_in_a_config_survive_install_and_uninstall(home: Path) -> None:
    path = home / "mcp.json"
    path.write_text(r'{"mcpServers":{"a\ud800":{"command":"x\udc00","args":["\ud801"]}}}')
    original = path.read_bytes()
    result = run("install", "--config", str(path), "--all")
    assert result.exit_code == 0, result.output
    assert "+ a\\ud800: runs under mcpsniff stdio" in result.output
    entry = json.loads(path.read_text())["mcpServers"]["a\ud800"]
    assert entry["args"][-3:] == ["--", "x\udc00", "\ud801"]
    assert run("uninstall", "--config", str(path)).exit_code == 0
    assert path.read_bytes() == original


@pytest.mark.parametrize("name", ["--", "--trace"])
def test_a_server_named_like_an_option_unwraps_without_its_backup(home: Path, name: str) -> None:
    path, _ = config(home, {name: {"command": "srv", "args": ["a"]}})
    assert run("install", "--config", str(path), "--all").exit_code == 0
    # No backup to restore from (another machine, a cleaned state folder): unwrap by shape.
    for backup in (home / ".local/state/mcpsniff/install-backups").iterdir():
        backup.unlink()
    assert run("uninstall", "--config", str(path)).exit_code == 0
    assert jsonc.parse(path.read_text()).value["mcpServers"][name] == {
        "command": "srv",
        "args": ["a"],
    }
