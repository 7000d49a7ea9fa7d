"""A message's body as pretty, syntax-coloured JSON, and a frame's raw bytes, made safe.

Every token from the trace is passed through ``terminal_safe`` before any
colour code is put around it, so a hostile string can neither start an escape
sequence of its own nor hide inside ours.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from mcpsniff.core.escape import terminal_safe

_RESET = "\x1b[0m"
_COLOURS = {
    "key": "\x1b[36m",
    "string": "\x1b[32m",
    "number": "\x1b[33m",
    "literal": "\x1b[35m",
}
#: One JSON token of pretty-printed text (strings first: they may hold anything).
_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")(?P<colon>\s*:)?'
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<literal>true|false|null)"
)


def pretty_json(value: Any) -> str:
    """``value`` as JSON indented by two spaces (exact for integers beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return json.dumps(value, indent=2, ensure_ascii=False)


def body_lines(value: Any, colour: bool) -> list[str]:
    """Pretty JSON lines of ``value``, terminal-safe, coloured when ``colour``."""
    return [_colour_line(line, colour) for line in pretty_json(value).split("\n")]


def _colour_line(line: str, colour: bool) -> str:
    out: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(line):
        out.append(terminal_safe(line[pos : match.start()]))
        if match.group("string") is not None:
            text = terminal_safe(match.group("string"))
            kind = "key" if match.group("colon") else "string"
            out.append(_paint(kind, text, colour))
            if match.group("colon"):
                out.append(match.group("colon"))
        elif match.group("number") is not None:
            out.append(_paint("number", match.group("number"), colour))
        else:
            out.append(_paint("literal", match.group("literal"), colour))
        pos = match.end()
    out.append(terminal_safe(line[pos:]))
    return "".join(out)


def _paint(kind: str, text: str, colour: bool) -> str:
    return f"{_COLOURS[kind]}{text}{_RESET}" if colour else text


def raw_line(raw: bytes) -> str:
    """A frame's bytes on one line: UTF-8 as text, every other byte and control as an escape."""
    return terminal_safe(raw.decode("utf-8", errors="backslashreplace"))
