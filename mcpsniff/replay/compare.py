"""Comparing a live response with the recorded one, and the JSON paths that steer it.

Volatile values must not count as differences: ``_meta`` members anywhere,
session ids and timestamps are masked by default, and the user adds JSON
paths to ignore (``$.result.content[0].text``, ``result.serverInfo.version``,
``[*]`` for any array element).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

PathPart = str | int
#: ``[*]`` in a user path: any array element.
ANY = "*"

_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[(\d+|\*)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
#: Substrings that differ on every run: masked before strings are compared.
_VOLATILE = [
    # ISO 8601 date-times and dates
    re.compile(
        r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    ),
    # clock times (toLocaleTimeString): 1:06:42 AM, 22:33:44
    re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?"),
    # session ids are UUIDs in every SDK we know of
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
]
#: Members whose value is volatile by nature, wherever they are.
_VOLATILE_KEYS = frozenset({"_meta", "sessionId", "timestamp"})


def parse_path(text: str) -> tuple[PathPart, ...]:
    """``$.result.content[0].text`` -> ("result", "content", 0, "text")."""
    rest = text.strip()
    if rest.startswith("$"):
        rest = rest[1:]
    parts: list[PathPart] = []
    pos = 0
    while pos < len(rest):
        match = _TOKEN.match(rest, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"not a JSON path: {text!r}")
        name, index, quoted, dquoted = match.groups()
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(ANY if index == ANY else int(index))
        else:
            parts.append(quoted if quoted is not None else dquoted)
        pos = match.end()
    return tuple(parts)


def format_path(path: tuple[PathPart, ...]) -> str:
    """The inverse of ``parse_path``, always starting with ``$``."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def covered(path: tuple[PathPart, ...], ignores: list[tuple[PathPart, ...]]) -> bool:
    """Whether ``path`` is an ignored path or lies below one."""
    for ignore in ignores:
        if len(ignore) <= len(path) and all(
            want in (ANY, have) for want, have in zip(ignore, path, strict=False)
        ):
            return True
    return False


def mask(text: str) -> str:
    """``text`` with timestamps and session ids replaced by placeholders."""
    for pattern in _VOLATILE:
        text = pattern.sub("<volatile>", text)
    return text


@dataclass(slots=True, frozen=True)
class Difference:
    """One place where the live value is not the recorded one."""

    path: tuple[PathPart, ...]
    recorded: Any
    live: Any
    #: "changed", "missing" (not in the live value) or "added" (only in the live value).
    change: str = "changed"


_ABSENT = object()


def diff(
    recorded: Any, live: Any, ignores: list[tuple[PathPart, ...]] | None = None
) -> list[Difference]:
    """Every difference between two JSON values, volatile parts and ``ignores`` left out."""
    out: list[Difference] = []
    _walk((), recorded, live, ignores or [], out)
    return out


def _walk(
    path: tuple[PathPart, ...],
    old: Any,
    new: Any,
    ignores: list[tuple[PathPart, ...]],
    out: list[Difference],
) -> None:
    if path and (covered(path, ignores) or path[-1] in _VOLATILE_KEYS):
        return
    if old is _ABSENT or new is _ABSENT:
        change = "missing" if new is _ABSENT else "added"
        out.append(
            Difference(
                path, None if old is _ABSENT else old, None if new is _ABSENT else new, change
            )
        )
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            _walk((*path, key), old.get(key, _ABSENT), new.get(key, _ABSENT), ignores, out)
        return
    if isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            _walk(
                (*path, i),
                old[i] if i < len(old) else _ABSENT,
                new[i] if i < len(new) else _ABSENT,
                ignores,
                out,
            )
        return
    if isinstance(old, str) and isinstance(new, str):
        if old != new and mask(old) != mask(new):
            out.append(Difference(path, old, new))
        return
    # bool is an int in Python: compare types so that true never equals 1.
    if (type(old) is not type(new) and not (_number(old) and _number(new))) or old != new:
        out.append(Difference(path, old, new))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def match_key(message: dict[str, Any]) -> str:
    """What identifies a request for matching: method and params, without ``_meta``.

    The id and ``params._meta`` (progress tokens, protocol version, client
    info on 2026-07-28) change from run to run; the rest is what was asked.
    """
    params = message.get("params")
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "_meta"}
        if not params:
            params = None
    return json.dumps([message.get("method"), params], sort_keys=True)
