"""``install`` and ``uninstall``: wrap a client's stdio servers in ``mcpsniff stdio``, and back.

The commands (``cli/install.py``) parse options only; what is planned, shown,
backed up and written is here. ``say`` takes each line of the report (stdout),
``note`` a line for stderr; a refusal is an :class:`InstallError`.
"""

from __future__ import annotations

import difflib
import os
import shlex
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcpsniff.core.escape import terminal_safe
from mcpsniff.install.clients import CLIENTS, config_files
from mcpsniff.install.entries import Entry
from mcpsniff.install.files import (
    ChangedMeanwhile,
    backups_for,
    copy_of,
    digest,
    drop_backup,
    mark_restored,
    original_bytes,
    write_atomically,
    write_backup,
)
from mcpsniff.install.plan import (
    ConfigError,
    FilePlan,
    entries,
    plan_install,
    plan_unwrap,
    read_config,
)
from mcpsniff.install.self_entry import SELF_NAME, plan_self
from mcpsniff.trace.paths import safe_name, traces_dir

UNINSTALL = "uninstall"


class InstallError(Exception):
    """A refusal of ``command`` (install or uninstall): one line, exit status 2."""

    def __init__(self, command: str, reason: str) -> None:
        super().__init__(reason)
        self.command = command
        self.reason = reason


def _literal(path: Path) -> str:
    """``path`` as the literal part of a ``--trace`` pattern: its braces doubled.

    A state folder such as ``/home/a{b}`` would otherwise read as a placeholder,
    and every wrapped server would fail to start (exit 2, unknown placeholder).
    """
    return str(path).replace("{", "{{").replace("}", "}}")


def trace_pattern() -> str:
    """The ``--trace`` of wrapped servers: one file per launch in the state folder."""
    return _literal(traces_dir()) + os.sep + "{name}-{time}-{pid}.jsonl"


def _targets(
    command: str, client_names: tuple[str, ...], config_paths: tuple[Path, ...]
) -> list[tuple[str, Path]]:
    """(title, path) of each configuration file to work on."""
    targets = [("config", path) for path in config_paths]
    for path in config_paths:
        if not path.is_file():
            raise InstallError(command, f"{path}: no such file")
    wanted = client_names or (() if config_paths else tuple(CLIENTS))
    for name in wanted:
        client = CLIENTS[name]
        found = [p for p in config_files(client) if p.is_file()]
        if not found and client_names:
            looked = ", ".join(str(p) for p in config_files(client))
            raise InstallError(
                command, f"no {client.title} configuration found (looked for {looked})"
            )
        targets.extend((client.title, path) for path in found)
    if not targets:
        raise InstallError(
            command, "no MCP client configuration found; name one with --config PATH"
        )
    return targets


def _diff(plan: FilePlan) -> Iterator[str]:
    return _text_diff(plan.path, plan.text, plan.new_text)


def _text_diff(path: Path, old: str, new: str) -> Iterator[str]:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=str(path),
        tofile=f"{path} (after)",
    )
    for line in lines:
        yield terminal_safe(line.rstrip("\n"))


def _backup_line(backup: Path, path: Path) -> str:
    copy = copy_of(backup)
    return terminal_safe(
        f"  backup: {copy} (to put the file back: cp {shlex.quote(str(copy))} "
        f"{shlex.quote(str(path))})"
    )


#: The port of the first suggested ``mcpsniff http`` (its default); the next ones count up.
PROXY_PORT = 6280


def _proxy_hint(entry: Entry, port: int) -> list[str]:
    """How to record an HTTP server: a proxy on ``port``, one port per server suggested."""
    url = entry.url or ""
    path = urlsplit(url).path or "/"
    pattern = _literal(traces_dir()) + os.sep + f"{safe_name(entry.name)}-{{time}}-{{pid}}.jsonl"
    return [
        f"  ~ {terminal_safe(entry.name)}: HTTP server {terminal_safe(url)}, not changed; "
        "to record it, run",
        f"      mcpsniff http --upstream {terminal_safe(url)} --trace '{terminal_safe(pattern)}'"
        f" --listen 127.0.0.1:{port}",
        f"    and point the client at http://127.0.0.1:{port}{terminal_safe(path)}",
    ]


@dataclass(frozen=True)
class Selection:
    """What install and uninstall act on (their shared options), and whether only as a diff."""

    #: Clients by name (``install.clients.CLIENTS``); none: every client whose file exists.
    client_names: tuple[str, ...] = ()
    #: Configuration files named directly.
    config_paths: tuple[Path, ...] = ()
    #: Servers by name; none with ``all_servers``: every server.
    servers: tuple[str, ...] = ()
    all_servers: bool = False
    #: Print the diff; change nothing.
    dry_run: bool = False


def _check_all_writable(plans: list[tuple[str, Any]]) -> None:
    """Before anything is written: one refused file must not leave the others half done."""
    for _, plan in plans:
        if plan.differs:
            _check_writable("install", plan.path)


def _one_selection(command: str, servers: tuple[str, ...], all_servers: bool) -> None:
    """Refuse ``--all`` with ``--server``: which one was meant is anybody's guess, and
    taking ``--all`` would change servers the user did not name."""
    if all_servers and servers:
        named = ", ".join(f"--server {terminal_safe(name)}" for name in servers)
        raise InstallError(command, f"--all and {named}: choose one (--all means every server)")


def _check_names(command: str, plans: list[FilePlan], names: set[str] | None) -> None:
    if names is None:
        return
    seen = {e.name for p in plans for e in (*p.changed, *p.unchanged, *p.http, *p.other)}
    missing = sorted(names - seen)
    if missing:
        raise InstallError(
            command, f"no server named {', '.join(map(repr, missing))} in the configuration"
        )


def run_install(
    selection: Selection, say: Callable[[str], None], note: Callable[[str], None]
) -> None:
    """Wrap the chosen servers of every chosen configuration file (a diff with ``dry_run``)."""
    servers, all_servers, dry_run = selection.servers, selection.all_servers, selection.dry_run
    _one_selection("install", servers, all_servers)
    choosing = not servers and not all_servers
    targets = _targets("install", selection.client_names, selection.config_paths)
    if choosing and not dry_run:
        _list_servers(targets, note)
        raise InstallError(
            "install", "say which servers to wrap: --server NAME (repeatable) or --all"
        )
    # A dry run that names no server shows every choice: each --server, and --all's diff.
    names = None if all_servers or choosing else set(servers)
    try:
        plans = [(title, plan_install(path, names, trace_pattern())) for title, path in targets]
    except ConfigError as exc:
        raise InstallError("install", str(exc)) from None
    _check_names("install", [p for _, p in plans], names)
    if not dry_run:
        _check_all_writable(plans)
    port = PROXY_PORT
    for title, plan in plans:
        say(f"{title}: {terminal_safe(str(plan.path))}")
        for entry in plan.changed:
            if choosing:
                say(f"  + --server {_quoted(entry.name)}: would run it under mcpsniff stdio")
            else:
                say(f"  + {terminal_safe(entry.name)}: runs under mcpsniff stdio")
        for entry in plan.unchanged:
            say(f"  = {terminal_safe(entry.name)}: already runs under mcpsniff")
        for entry in plan.http:
            for line in _proxy_hint(entry, port):
                say(line)
            port += 1
        for entry in plan.other:
            say(f"  ? {terminal_safe(entry.name)}: {entry.why}; left alone")
        if not (plan.changed or plan.unchanged or plan.http or plan.other):
            # Said, so that an empty file or a typo'd table is not taken for success.
            say("  no MCP servers in it (no mcpServers or servers entries); nothing to do")
        if not plan.differs:
            continue
        if dry_run:
            if choosing:
                say("  --all: every server marked + above, this diff:")
            for line in _diff(plan):
                say(line)
            continue
        try:
            backup = write_backup(
                _client_id(title), plan.path, plan.original, plan.new_bytes, plan.records
            )
        except OSError as exc:
            raise InstallError(
                "install", f"{plan.path}: cannot write a backup: {exc.strerror or exc}"
            ) from None
        try:
            write_atomically(plan.path, plan.new_bytes, expected=plan.original)
        except OSError as exc:
            drop_backup(backup)  # nothing was changed: a backup would only mislead uninstall
            if isinstance(exc, ChangedMeanwhile):
                raise InstallError(
                    "install", f"{plan.path}: changed while mcpsniff was editing it; run again"
                ) from None
            raise InstallError(
                "install", f"{plan.path}: cannot write: {exc.strerror or exc}"
            ) from None
        say(_backup_line(backup, plan.path))
    if not dry_run and any(p.changed for _, p in plans):
        say(f"traces will go to {traces_dir()}; restart the client to apply")
    if choosing:
        say("nothing changed (--dry-run); choose with --server NAME (repeatable) or --all")


def _quoted(name: str) -> str:
    """A server's name as a shell word (the line shows the option to type)."""
    return terminal_safe(shlex.quote(name))


def run_install_self(selection: Selection, say: Callable[[str], None]) -> None:
    """Add ``mcpsniff mcp`` as a server to every chosen configuration file."""
    dry_run = selection.dry_run
    targets = _targets("install", selection.client_names, selection.config_paths)
    try:
        plans = [
            (title, plan_self(path, "servers" if path.name == "mcp.json" and title == "VS Code"
                              else "mcpServers"))
            for title, path in targets
        ]  # fmt: skip
    except ConfigError as exc:
        raise InstallError("install", str(exc)) from None
    if not dry_run:
        _check_all_writable(plans)
    for title, plan in plans:
        say(f"{title}: {terminal_safe(str(plan.path))}")
        if not plan.differs:
            say(f"  = {SELF_NAME}: already configured; left alone")
            continue
        say(f"  + {SELF_NAME}: mcpsniff mcp, the recorded traces for the agent (read-only)")
        if dry_run:
            for line in _diff(plan):
                say(line)
            continue
        try:
            backup = write_backup(_client_id(title), plan.path, plan.original, plan.new_bytes, {})
            write_atomically(plan.path, plan.new_bytes, expected=plan.original)
        except ChangedMeanwhile:
            raise InstallError(
                "install", f"{plan.path}: changed while mcpsniff was editing it; run again"
            ) from None
        except OSError as exc:
            raise InstallError(
                "install", f"{plan.path}: cannot write: {exc.strerror or exc}"
            ) from None
        say(_backup_line(backup, plan.path))


def _check_writable(command: str, path: Path) -> None:
    """Refuse a file its owner made read-only: replacing it would go around that."""
    try:
        mode = path.resolve().stat().st_mode
    except OSError:
        return  # gone meanwhile: the write says so, in one line
    if not mode & stat.S_IWUSR:
        raise InstallError(
            command, f"{path}: the file is read-only; left untouched (chmod u+w it first)"
        )


def _client_id(title: str) -> str:
    return next((c.name for c in CLIENTS.values() if c.title == title), "config")


def _list_servers(targets: list[tuple[str, Path]], note: Callable[[str], None]) -> None:
    for title, path in targets:
        try:
            _, _, root = read_config(path)
        except ConfigError as exc:
            note(f"{title}: {terminal_safe(str(exc))}")
            continue
        note(f"{title}: {terminal_safe(str(path))}")
        for entry in entries(root):
            state = "wrapped" if entry.wrapped else entry.kind
            note(f"  {terminal_safe(entry.name)} ({state})")


def run_uninstall(selection: Selection, say: Callable[[str], None]) -> None:
    """Unwrap the named servers (all when none is named) of every chosen configuration file."""
    servers = selection.servers
    _one_selection("uninstall", servers, selection.all_servers)
    names = set(servers) if servers else None
    for title, path in _targets("uninstall", selection.client_names, selection.config_paths):
        try:
            _uninstall_file(title, path, names, selection.dry_run, say)
        except ConfigError as exc:
            raise InstallError("uninstall", str(exc)) from None
        except ChangedMeanwhile:
            raise InstallError(
                "uninstall", f"{path}: changed while mcpsniff was editing it; run again"
            ) from None
        except OSError as exc:
            raise InstallError(
                "uninstall", f"{path}: cannot write: {exc.strerror or exc}"
            ) from None


def _uninstall_file(
    title: str, path: Path, names: set[str] | None, dry_run: bool, say: Callable[[str], None]
) -> None:
    say(f"{title}: {terminal_safe(str(path))}")
    backups = [(b, d) for b, d in backups_for(path) if d.get("client") != UNINSTALL]
    current = path.read_bytes()
    if not dry_run:
        _check_writable("uninstall", path)
    restored = False
    if names is None:
        # Unwind whole installs while the file is exactly what each one wrote.
        for backup, document in backups:
            if document.get("written_sha256") != digest(current):
                break
            written, current = current, original_bytes(document)
            if not dry_run:
                write_atomically(path, current, expected=written)
                mark_restored(backup)
            say(f"  restored the bytes from before install ({terminal_safe(backup.name)})")
            restored = True
    if dry_run and restored:
        before = path.read_bytes().decode("utf-8", "replace")
        for line in _text_diff(path, before, current.decode("utf-8", "replace")):
            say(line)
        return
    records: dict[str, Any] = {}
    for _, document in reversed(backups):
        records.update(document.get("entries") or {})
    plan = plan_unwrap(path, records, names)
    for entry in plan.changed:
        say(f"  - {terminal_safe(entry.name)}: runs directly again")
    if not plan.differs:
        if not restored:
            say("  nothing to undo")
        return
    if dry_run:
        for line in _diff(plan):
            say(line)
        return
    backup = write_backup(UNINSTALL, path, plan.original, plan.new_bytes, {})
    write_atomically(path, plan.new_bytes, expected=plan.original)
    if names is None:
        for used, _ in backups:
            if used.exists():
                mark_restored(used)
    say(_backup_line(backup, path))
