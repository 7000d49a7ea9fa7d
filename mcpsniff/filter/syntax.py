"""The filter grammar: a recursive-descent parser from tokens to a small tree.

    expression := or
    or         := and ( ("or" | "||") and )*
    and        := unary ( ("and" | "&&")? unary )*      juxtaposition means "and"
    unary      := ("not" | "!") unary | primary
    primary    := "(" expression ")"
                | FIELD OPERATOR VALUE                  a comparison
                | FIELD                                 the field is present
                | WORD | "quoted text"                  free text

Which words are fields is decided here (``fields.FIELDS``) so that a
misspelt field followed by an operator is an error, not free text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from mcpsniff.filter.errors import FilterError
from mcpsniff.filter.fields import DURATION, FIELDS, resolve
from mcpsniff.filter.lexer import AND, END, LPAREN, NOT, OP, OR, RPAREN, STRING, WORD, Token

#: How deeply parentheses and ``not`` may nest (the parser recurses once per level).
MAX_DEPTH = 100
#: A word with one of these prefixes is meant as a field, never as free text.
_FIELD_PREFIXES = ("mcp.", "gen_ai.", "jsonrpc.", "error.")


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Node


@dataclass(frozen=True, slots=True)
class Compare:
    """``field op value``; positions point at the field, the operator and the value."""

    field: str
    op: str
    value: str
    quoted: bool
    field_pos: int
    op_pos: int
    value_pos: int


@dataclass(frozen=True, slots=True)
class Present:
    field: str
    pos: int


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    pos: int


Node = Or | And | Not | Compare | Present | Text


class Parser:
    """Parses one expression; ``parse()`` returns its tree or raises ``FilterError``."""

    def __init__(self, source: str, tokens: list[Token]) -> None:
        self.source = source
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    def parse(self) -> Node:
        if self.peek().kind == END:
            raise self.error("empty filter expression", self.peek())
        node = self.parse_or()
        token = self.peek()
        if token.kind != END:
            raise self.error(f"unexpected {_describe(token)}", token)
        return node

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        token = self.tokens[self.i]
        if token.kind != END:
            self.i += 1
        return token

    def error(self, message: str, token: Token) -> FilterError:
        return FilterError(message, self.source, token.pos)

    def parse_or(self) -> Node:
        items = [self.parse_and()]
        while self.peek().kind == OR:
            self.take()
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def parse_and(self) -> Node:
        items = [self.parse_unary()]
        while True:
            kind = self.peek().kind
            if kind == AND:
                self.take()
            elif kind not in (WORD, STRING, LPAREN, NOT):
                break
            items.append(self.parse_unary())
        return items[0] if len(items) == 1 else And(tuple(items))

    def parse_unary(self) -> Node:
        token = self.peek()
        if token.kind not in (NOT, LPAREN):
            return self.parse_primary()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} levels deep", token)
        if token.kind == NOT:
            self.take()
            node: Node = Not(self.parse_unary())
        else:
            node = self.parse_primary()
        self.depth -= 1
        return node

    def parse_primary(self) -> Node:
        token = self.take()
        if token.kind == LPAREN:
            node = self.parse_or()
            closing = self.peek()
            if closing.kind != RPAREN:
                raise self.error(
                    f"expected ')' to close the '(' at column {token.pos + 1}, "
                    f"got {_describe(closing)}",
                    closing,
                )
            self.take()
            return node
        if token.kind == OP:
            raise self.error(f"expected a field name before {token.text!r}", token)
        if token.kind == STRING:
            if self.peek().kind == OP:
                raise self.error("a field name is not quoted", token)
            return Text(token.text, token.pos)
        if token.kind != WORD:
            raise self.error(f"expected an expression, got {_describe(token)}", token)
        name = resolve(token.text)
        if self.peek().kind == OP:
            if name is None:
                raise self.error(_unknown_field(token.text), token)
            op = self.take()
            value = self.take()
            if value.kind not in (WORD, STRING):
                raise self.error(f"expected a value after {op.text!r}", value)
            unit = self.peek()
            if (
                value.kind == WORD
                and unit.kind == WORD
                and FIELDS[name].type == DURATION
                and _NUMBER.fullmatch(value.text)
                and unit.text.lower() in DURATION_UNITS
            ):
                # "latency > 5 ms": the unit after a space belongs to the number (it
                # was read as a second term, a text search for "ms" that matched nothing).
                self.take()
                value = Token(WORD, f"{value.text}{unit.text}", value.pos)
            return Compare(
                name, op.text, value.text, value.kind == STRING, token.pos, op.pos, value.pos
            )
        if name is not None:
            return Present(name, token.pos)
        if token.text.lower().startswith(_FIELD_PREFIXES):
            raise self.error(_unknown_field(token.text), token)
        return Text(token.text, token.pos)


#: A number, then a unit word after it: ``latency > 5 ms`` is ``latency > 5ms``.
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")
DURATION_UNITS = frozenset({"ns", "us", "µs", "ms", "s", "m", "h"})


def _unknown_field(name: str) -> str:
    close = difflib.get_close_matches(name, list(FIELDS), n=1)
    hint = f"; did you mean {close[0]}?" if close else "; `mcpsniff show --help` lists the fields"
    return f"unknown field {name!r}{hint}"


def _describe(token: Token) -> str:
    if token.kind == END:
        return "the end of the expression"
    return repr(token.text)
