"""What ``install`` and ``uninstall`` do to one configuration file, as text edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.install import jsonc
from mcpsniff.install.clients import server_tables
from mcpsniff.install.entries import (
    HTTP,
    STDIO,
    Entry,
    classify,
    original_texts,
    unwrap_edits,
    wrap_edits,
)


class ConfigError(Exception):
    """A configuration file that cannot be read or parsed; one line for the user."""


@dataclass
class FilePlan:
    """One file: its text before and after, and what happened to each entry."""

    path: Path
    original: bytes
    text: str
    new_text: str = ""
    changed: list[Entry] = field(default_factory=list)
    unchanged: list[Entry] = field(default_factory=list)
    http: list[Entry] = field(default_factory=list)
    other: list[Entry] = field(default_factory=list)
    #: What a backup must record about each wrapped entry, by ``Entry.key``.
    records: dict[str, Any] = field(default_factory=dict)

    @property
    def new_bytes(self) -> bytes:
        return self.new_text.encode("utf-8")

    @property
    def differs(self) -> bool:
        return self.new_text != self.text


def read_config(path: Path) -> tuple[bytes, str, jsonc.Node]:
    """The bytes, text and parsed tree of a configuration file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    if not text.strip():
        return data, text, jsonc.Node({}, 0, 0)
    try:
        return data, text, jsonc.parse(text)
    except jsonc.JsoncError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None


def entries(root: jsonc.Node, names: set[str] | None = None) -> list[Entry]:
    """The server entries in the file (those named in ``names``, or all), in file order."""
    found = []
    for table, node in server_tables(root):
        for name, (child, _) in node.members.items():
            if names is None or name in names:
                found.append(classify(table, name, child))
    return found


def plan_install(path: Path, names: set[str] | None, trace_pattern: str) -> FilePlan:
    """Wrap the selected stdio entries (all when ``names`` is None)."""
    data, text, root = read_config(path)
    plan = FilePlan(path, data, text)
    edits: list[jsonc.Edit] = []
    for entry in entries(root, names):
        if entry.kind == HTTP:
            plan.http.append(entry)
        elif entry.kind != STDIO:
            plan.other.append(entry)
        elif entry.wrapped:
            plan.unchanged.append(entry)
        else:
            pattern = trace_pattern
            edits.extend(wrap_edits(entry, pattern))
            plan.records[entry.key] = original_texts(text, entry, pattern)
            plan.changed.append(entry)
    plan.new_text = jsonc.apply(text, edits)
    return plan


def plan_unwrap(path: Path, records: dict[str, Any], names: set[str] | None) -> FilePlan:
    """Remove the wrapping of the selected wrapped entries, using backup ``records``."""
    data, text, root = read_config(path)
    plan = FilePlan(path, data, text)
    edits: list[jsonc.Edit] = []
    for entry in entries(root, names):
        if entry.kind == STDIO and entry.wrapped:
            found = unwrap_edits(text, entry, records.get(entry.key))
            if found:
                edits.extend(found)
                plan.changed.append(entry)
        elif entry.kind == HTTP:
            plan.http.append(entry)
        else:
            plan.unchanged.append(entry)
    plan.new_text = jsonc.apply(text, edits)
    return plan
