"""The ``mcpsniff install`` and ``mcpsniff uninstall`` commands."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from mcpsniff.cli.shared import fail
from mcpsniff.core.escape import terminal_safe
from mcpsniff.install.clients import CLIENTS, config_files
from mcpsniff.install.entries import Entry
from mcpsniff.install.files import (
    ChangedMeanwhile,
    backups_for,
    digest,
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
from mcpsniff.terminal.safe_output import tolerate_surrogates
from mcpsniff.trace.paths import safe_name, traces_dir

UNINSTALL = "uninstall"
F = TypeVar("F", bound=Callable[..., Any])


def _target_options(verb: str, all_help: str) -> Callable[[F], F]:
    """The options install and uninstall share: which files, which servers, dry run."""

    def decorate(command: F) -> F:
        for option in reversed(
            (
                click.option(
                    "--client", "client_names", multiple=True, type=click.Choice(sorted(CLIENTS))
                ),
                click.option(
                    "--config",
                    "config_paths",
                    multiple=True,
                    type=click.Path(dir_okay=False, path_type=Path),
                    help="Any JSON/JSONC file with the usual mcpServers (or servers) object.",
                ),
                click.option(
                    "--server", "servers", multiple=True, help=f"A server to {verb} (repeatable)."
                ),
                click.option("--all", "all_servers", is_flag=True, help=all_help),
                click.option(
                    "--dry-run",
                    is_flag=True,
                    help="Print a diff of what would change; change nothing.",
                ),
            )
        ):
            command = option(command)
        return command

    return decorate


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
            fail(command, f"{path}: no such file")
    wanted = client_names or (() if config_paths else tuple(CLIENTS))
    for name in wanted:
        client = CLIENTS[name]
        found = [p for p in config_files(client) if p.is_file()]
        if not found and client_names:
            looked = ", ".join(str(p) for p in config_files(client))
            fail(command, f"no {client.title} configuration found (looked for {looked})")
        targets.extend((client.title, path) for path in found)
    if not targets:
        fail(command, "no MCP client configuration found; name one with --config PATH")
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


def _proxy_hint(entry: Entry) -> list[str]:
    url = entry.url or ""
    path = urlsplit(url).path or "/"
    pattern = _literal(traces_dir()) + os.sep + f"{safe_name(entry.name)}-{{time}}-{{pid}}.jsonl"
    return [
        f"  ~ {terminal_safe(entry.name)}: HTTP server {terminal_safe(url)}, not changed; "
        "to record it, run",
        f"      mcpsniff http --upstream {terminal_safe(url)} --trace '{terminal_safe(pattern)}'",
        f"    and point the client at http://127.0.0.1:6280{terminal_safe(path)}",
    ]


def _one_selection(command: str, servers: tuple[str, ...], all_servers: bool) -> None:
    """Refuse ``--all`` with ``--server``: which one was meant is anybody's guess, and
    taking ``--all`` would change servers the user did not name."""
    if all_servers and servers:
        named = ", ".join(f"--server {terminal_safe(name)}" for name in servers)
        fail(command, f"--all and {named}: choose one (--all means every server)")


def _check_names(command: str, plans: list[FilePlan], names: set[str] | None) -> None:
    if names is None:
        return
    seen = {e.name for p in plans for e in (*p.changed, *p.unchanged, *p.http, *p.other)}
    missing = sorted(names - seen)
    if missing:
        fail(command, f"no server named {', '.join(map(repr, missing))} in the configuration")


@click.command()
@_target_options("wrap", "Wrap every stdio server.")
def install(
    client_names: tuple[str, ...],
    config_paths: tuple[Path, ...],
    servers: tuple[str, ...],
    all_servers: bool,
    dry_run: bool,
) -> None:
    """Make a client run its stdio MCP servers under mcpsniff, recording each launch.

    Each chosen stdio server entry becomes `mcpsniff stdio --name NAME --trace
    <state folder>/NAME-{time}-{pid}.jsonl -- COMMAND ARGS...`. HTTP entries are
    listed with the `mcpsniff http` command to run, and not changed. Without
    --client or --config, every client whose configuration exists is done.
    A backup is written before every change; `mcpsniff uninstall` undoes it.
    Running it again changes nothing.
    """
    tolerate_surrogates()
    _one_selection("install", servers, all_servers)
    if not servers and not all_servers:
        _list_servers(_targets("install", client_names, config_paths))
        fail("install", "say which servers to wrap: --server NAME (repeatable) or --all")
    names = None if all_servers else set(servers)
    targets = _targets("install", client_names, config_paths)
    try:
        plans = [(title, plan_install(path, names, trace_pattern())) for title, path in targets]
    except ConfigError as exc:
        fail("install", str(exc))
    _check_names("install", [p for _, p in plans], names)
    if not dry_run:
        # Before anything is written: one refused file must not leave the others half done.
        for _, plan in plans:
            if plan.differs:
                _check_writable("install", plan.path)
    for title, plan in plans:
        click.echo(f"{title}: {terminal_safe(str(plan.path))}")
        for entry in plan.changed:
            click.echo(f"  + {terminal_safe(entry.name)}: runs under mcpsniff stdio")
        for entry in plan.unchanged:
            click.echo(f"  = {terminal_safe(entry.name)}: already runs under mcpsniff")
        for entry in plan.http:
            for line in _proxy_hint(entry):
                click.echo(line)
        for entry in plan.other:
            click.echo(f"  ? {terminal_safe(entry.name)}: {entry.why}; left alone")
        if not (plan.changed or plan.unchanged or plan.http or plan.other):
            # Said, so that an empty file or a typo'd table is not taken for success.
            click.echo("  no MCP servers in it (no mcpServers or servers entries); nothing to do")
        if not plan.differs:
            continue
        if dry_run:
            for line in _diff(plan):
                click.echo(line)
            continue
        try:
            backup = write_backup(
                _client_id(title), plan.path, plan.original, plan.new_bytes, plan.records
            )
        except OSError as exc:
            fail("install", f"{plan.path}: cannot write a backup: {exc.strerror or exc}")
        try:
            write_atomically(plan.path, plan.new_bytes, expected=plan.original)
        except OSError as exc:
            backup.unlink()  # nothing was changed: a backup of it would only mislead uninstall
            if isinstance(exc, ChangedMeanwhile):
                fail("install", f"{plan.path}: changed while mcpsniff was editing it; run again")
            fail("install", f"{plan.path}: cannot write: {exc.strerror or exc}")
        click.echo(f"  backup: {terminal_safe(str(backup))}")
    if not dry_run and any(p.changed for _, p in plans):
        click.echo(f"traces will go to {traces_dir()}; restart the client to apply")


def _check_writable(command: str, path: Path) -> None:
    """Refuse a file its owner made read-only: replacing it would go around that."""
    try:
        mode = path.resolve().stat().st_mode
    except OSError:
        return  # gone meanwhile: the write says so, in one line
    if not mode & stat.S_IWUSR:
        fail(command, f"{path}: the file is read-only; left untouched (chmod u+w it first)")


def _client_id(title: str) -> str:
    return next((c.name for c in CLIENTS.values() if c.title == title), "config")


def _list_servers(targets: list[tuple[str, Path]]) -> None:
    for title, path in targets:
        try:
            _, _, root = read_config(path)
        except ConfigError as exc:
            click.echo(f"{title}: {terminal_safe(str(exc))}", err=True)
            continue
        click.echo(f"{title}: {terminal_safe(str(path))}", err=True)
        for entry in entries(root):
            state = "wrapped" if entry.wrapped else entry.kind
            click.echo(f"  {terminal_safe(entry.name)} ({state})", err=True)


@click.command()
@_target_options("unwrap", "Every wrapped server (the default).")
def uninstall(
    client_names: tuple[str, ...],
    config_paths: tuple[Path, ...],
    servers: tuple[str, ...],
    all_servers: bool,
    dry_run: bool,
) -> None:
    """Undo `mcpsniff install`: servers run directly again.

    When a file is still exactly what install wrote, its original bytes come
    back; otherwise only the mcpsniff wrapping is removed from each entry.
    """
    tolerate_surrogates()
    _one_selection("uninstall", servers, all_servers)
    names = set(servers) if servers else None
    for title, path in _targets("uninstall", client_names, config_paths):
        try:
            _uninstall_file(title, path, names, dry_run)
        except ConfigError as exc:
            fail("uninstall", str(exc))
        except ChangedMeanwhile:
            fail("uninstall", f"{path}: changed while mcpsniff was editing it; run again")
        except OSError as exc:
            fail("uninstall", f"{path}: cannot write: {exc.strerror or exc}")


def _uninstall_file(title: str, path: Path, names: set[str] | None, dry_run: bool) -> None:
    click.echo(f"{title}: {terminal_safe(str(path))}")
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
            click.echo(f"  restored the bytes from before install ({terminal_safe(backup.name)})")
            restored = True
    if dry_run and restored:
        before = path.read_bytes().decode("utf-8", "replace")
        for line in _text_diff(path, before, current.decode("utf-8", "replace")):
            click.echo(line)
        return
    records: dict[str, Any] = {}
    for _, document in reversed(backups):
        records.update(document.get("entries") or {})
    plan = plan_unwrap(path, records, names)
    for entry in plan.changed:
        click.echo(f"  - {terminal_safe(entry.name)}: runs directly again")
    if not plan.differs:
        if not restored:
            click.echo("  nothing to undo")
        return
    if dry_run:
        for line in _diff(plan):
            click.echo(line)
        return
    backup = write_backup(UNINSTALL, path, plan.original, plan.new_bytes, {})
    write_atomically(path, plan.new_bytes, expected=plan.original)
    if names is None:
        for used, _ in backups:
            if used.exists():
                mark_restored(used)
    click.echo(f"  backup: {terminal_safe(str(backup))}")
