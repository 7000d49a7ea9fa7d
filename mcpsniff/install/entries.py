"""Server entries: which are stdio, which HTTP, which already run under mcpsniff; the edits.

Wrapping an entry ``{"command": C, "args": A}`` makes it
``{"command": PYTHON, "args": ["-m", "mcpsniff", "stdio", "--name", NAME,
"--trace", PATTERN, "--", C, *A]}``: the client then starts mcpsniff, which
starts the server. The absolute interpreter path is used because clients
such as Claude Desktop start servers with a minimal ``PATH``. Every other
member of the entry (``env``, ``cwd``, ``type``) stays as it is.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from mcpsniff.install.jsonc import Edit, Node, dumps

STDIO = "stdio"
HTTP = "http"
OTHER = "other"
MARK = ["-m", "mcpsniff", "stdio"]
_ARGS_INSERTED = re.compile(r'\s*,\s*"args"\s*:\s*')


@dataclass
class Entry:
    """One server entry of a configuration file."""

    table: str
    name: str
    node: Node
    kind: str
    wrapped: bool
    url: str | None = None
    #: Why an entry of kind OTHER is left alone, for the user.
    why: str = "neither command nor url"

    @property
    def key(self) -> str:
        """Identifies the entry within its file."""
        return f"{self.table}\0{self.name}"


def classify(table: str, name: str, node: Node) -> Entry:
    """What kind of entry ``node`` is."""
    value = node.value
    if not isinstance(value, dict):
        return Entry(table, name, node, OTHER, False)
    for key in ("url", "serverUrl"):
        if isinstance(value.get(key), str):
            return Entry(table, name, node, HTTP, False, value[key])
    if isinstance(value.get("command"), str):
        args = value.get("args")
        if args is not None and not (
            isinstance(args, list) and all(isinstance(a, str) for a in args)
        ):
            # Wrapping would drop or mangle them: the server would start without
            # its arguments. A client would reject the entry anyway; leave it be.
            return Entry(table, name, node, OTHER, False, why="args is not a list of strings")
        return Entry(table, name, node, STDIO, is_wrapped(value))
    return Entry(table, name, node, OTHER, False)


def is_wrapped(value: dict[str, Any]) -> bool:
    """Whether an entry already runs its server under ``mcpsniff stdio``."""
    args = value.get("args")
    if not isinstance(args, list) or "--" not in args:
        return False
    command = value.get("command")
    if args[:3] == MARK:
        return True
    return (
        isinstance(command, str)
        and os.path.basename(command) == "mcpsniff"
        and args[:1] == ["stdio"]
    )


def wrapped_args(entry: Entry, trace_pattern: str) -> list[str]:
    """The ``args`` of ``entry`` once wrapped."""
    value = entry.node.value
    args = value.get("args") if isinstance(value.get("args"), list) else []
    return [
        *MARK,
        "--name",
        entry.name,
        "--trace",
        trace_pattern,
        "--",
        value["command"],
        *args,
    ]


def wrap_edits(entry: Entry, trace_pattern: str, python: str | None = None) -> list[Edit]:
    """The text edits that make ``entry`` run under mcpsniff."""
    command = entry.node.get("command")
    assert command is not None
    args = entry.node.get("args")
    new_args = dumps(wrapped_args(entry, trace_pattern))
    edits = [Edit(command.start, command.end, dumps(python or sys.executable))]
    if args is not None:
        edits.append(Edit(args.start, args.end, new_args))
    else:
        edits.append(Edit(command.end, command.end, f', "args": {new_args}'))
    return edits


def unwrap_edits(text: str, entry: Entry, original: dict[str, Any] | None = None) -> list[Edit]:
    """The text edits that remove our wrapping from ``entry``.

    ``original`` is what the backup recorded when the entry was wrapped: the
    exact text of its ``command`` and ``args`` (``None`` when it had none), and
    the wrapped ``args`` written. When the entry still holds those wrapped
    args, its original text comes back exactly; otherwise the command and
    args after ``--`` are restored.
    """
    command = entry.node.get("command")
    args = entry.node.get("args")
    assert command is not None and args is not None
    if original is not None and original.get("wrapped_args") == args.value:
        if original.get("args_text") is None:
            between = text[command.end : args.start]
            if command.end <= args.start and _ARGS_INSERTED.fullmatch(between):
                return [Edit(command.start, args.end, original["command_text"])]
        else:
            return [
                Edit(command.start, command.end, original["command_text"]),
                Edit(args.start, args.end, original["args_text"]),
            ]
    value = args.value
    cut = _separator(value)
    inner = value[cut + 1 :]
    if not inner:
        return []
    return [
        Edit(command.start, command.end, dumps(inner[0])),
        Edit(args.start, args.end, dumps(inner[1:])),
    ]


def _separator(args: list[Any]) -> int:
    """Where our ``--`` is in wrapped ``args``.

    In the shape ``wrapped_args`` writes (``-m mcpsniff stdio --name N --trace P --``)
    it is at a known place, whatever the server's name is: a server named
    ``--`` must not be cut at its name, leaving ``--trace`` as the command.
    """
    if (
        len(args) >= 8
        and args[:3] == MARK
        and args[3] == "--name"
        and args[5] == "--trace"
        and args[7] == "--"
    ):
        return 7
    return args.index("--")


def original_texts(text: str, entry: Entry, trace_pattern: str) -> dict[str, Any]:
    """What a backup records about an entry before wrapping it."""
    command = entry.node.get("command")
    args = entry.node.get("args")
    assert command is not None
    return {
        "command_text": text[command.start : command.end],
        "args_text": text[args.start : args.end] if args is not None else None,
        "wrapped_args": wrapped_args(entry, trace_pattern),
    }
