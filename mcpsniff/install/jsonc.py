"""JSON with comments (JSONC, as VS Code writes it), parsed with the position of every value.

Configuration files are edited in place, a value's text at a time, so that
comments, key order, indentation and everything not edited stay byte for byte
as they were. The parser accepts ``//`` and ``/* */`` comments and trailing
commas (what VS Code's settings files allow) and records, for every value,
the span of text it occupies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.terminal.safe_output import escape_surrogates


class JsoncError(ValueError):
    """The text is not JSON with comments; the message names the line and column."""


@dataclass
class Node:
    """A parsed value and the span ``[start, end)`` of its text."""

    value: Any
    start: int
    end: int
    #: For objects: member name -> (node of the value, start of the member's key).
    members: dict[str, tuple[Node, int]] = field(default_factory=dict)
    #: For arrays: the element nodes.
    items: list[Node] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        """The node of member ``key`` of an object, or ``None``."""
        member = self.members.get(key)
        return member[0] if member is not None else None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def error(self, message: str, at: int | None = None) -> JsoncError:
        pos = self.i if at is None else at
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return JsoncError(f"{message} at line {line}, column {column}")

    def skip(self) -> None:
        """Whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.i < n:
            ch = text[self.i]
            if ch in " \t\r\n\ufeff":
                self.i += 1
            elif text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end + 1
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise self.error("unterminated /* comment")
                self.i = end + 2
            else:
                return

    def value(self, depth: int = 0) -> Node:
        if depth > 200:
            raise self.error("nested too deeply")
        self.skip()
        if self.i >= len(self.text):
            raise self.error("unexpected end of file")
        ch = self.text[self.i]
        if ch in "{[":
            return self.elements(depth)
        if ch == '"':
            start = self.i
            return Node(self.string(), start, self.i)
        return self.scalar()

    def string(self) -> str:
        start = self.i
        i = start + 1
        text = self.text
        while i < len(text):
            ch = text[i]
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                self.i = i + 1
                try:
                    return json.loads(text[start : i + 1])
                except ValueError:
                    raise self.error("bad string", start) from None
            if ch == "\n":
                break
            i += 1
        raise self.error("unterminated string", start)

    def scalar(self) -> Node:
        start = self.i
        text = self.text
        while self.i < len(text) and text[self.i] not in ",]}/ \t\r\n":
            self.i += 1
        word = text[start : self.i]
        try:
            return Node(json.loads(word), start, self.i)
        except ValueError:
            raise self.error(f"unexpected {word[:20] or text[start]!r}", start) from None

    def at(self, ch: str) -> bool:
        """Whether the next character is ``ch``."""
        return self.i < len(self.text) and self.text[self.i] == ch

    def take(self, ch: str) -> bool:
        """Step over the next character if it is ``ch``; whether it was."""
        if not self.at(ch):
            return False
        self.i += 1
        return True

    def elements(self, depth: int) -> Node:
        """An object or an array, from its opening bracket to its closing one.

        A comma may follow the last element: JSONC allows trailing commas. One
        loop for both, called by ``value`` and calling it back: two stack frames
        a level, so that the deepest document allowed parses however deep the
        caller's own stack already is.
        """
        is_object = self.text[self.i] == "{"
        close = "}" if is_object else "]"
        node = Node({} if is_object else [], self.i, self.i)
        self.i += 1
        while True:
            self.skip()
            if self.take(close):
                node.end = self.i
                return node
            if is_object:
                if not self.at('"'):
                    raise self.error("expected a member name in double quotes")
                key_start = self.i
                key = self.string()
                self.skip()
                if not self.take(":"):
                    raise self.error("expected ':'")
                child = self.value(depth + 1)
                node.value[key] = child.value
                node.members[key] = (child, key_start)
            else:
                child = self.value(depth + 1)
                node.value.append(child.value)
                node.items.append(child)
            self.skip()
            if not self.take(",") and not self.at(close):
                raise self.error(f"expected ',' or '{close}'")


def parse(text: str) -> Node:
    """The root node of ``text``. Raises ``JsoncError`` with a line and column."""
    parser = _Parser(text)
    root = parser.value()
    parser.skip()
    if parser.i != len(text):
        raise parser.error("unexpected text after the end")
    return root


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``replacement``."""

    start: int
    end: int
    replacement: str


def apply(text: str, edits: list[Edit]) -> str:
    """``text`` with non-overlapping ``edits`` applied."""
    out: list[str] = []
    pos = 0
    for edit in sorted(edits, key=lambda e: e.start):
        if edit.start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos : edit.start])
        out.append(edit.replacement)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)


def dumps(value: Any) -> str:
    """A value as JSON text for a configuration file: one line, non-ASCII kept.

    A lone surrogate (the file's own ``"\\ud800"``) stays an escape: raw, the
    new text could not be written as UTF-8.
    """
    return escape_surrogates(json.dumps(value, ensure_ascii=False))
