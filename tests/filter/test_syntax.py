"""The filter parser table: valid expressions and their trees, invalid ones and positions."""

from __future__ import annotations

import pytest

from mcpsniff.filter import FilterError, compile_filter
from mcpsniff.filter.syntax import And, Compare, Not, Or, Present, Text


def cmp(field: str, op: str, value: str, quoted: bool = False) -> tuple[str, str, str, bool]:
    return (field, op, value, quoted)


def shape(node: object) -> object:
    """A tree without positions, to compare against the table."""
    if isinstance(node, Compare):
        return cmp(node.field, node.op, node.value, node.quoted)
    if isinstance(node, Or):
        return ("or", *[shape(i) for i in node.items])
    if isinstance(node, And):
        return ("and", *[shape(i) for i in node.items])
    if isinstance(node, Not):
        return ("not", shape(node.item))
    if isinstance(node, Present):
        return ("present", node.field)
    if isinstance(node, Text):
        return ("text", node.text)
    raise AssertionError(node)


VALID = [
    ("mcp.method.name == tools/call", cmp("mcp.method.name", "==", "tools/call")),
    ("method = initialize", cmp("mcp.method.name", "==", "initialize")),
    ('gen_ai.tool.name ~ "^fs_"', cmp("gen_ai.tool.name", "~", "^fs_", True)),
    ("tool !~ echo", cmp("gen_ai.tool.name", "!~", "echo")),
    ("error.code == -32602", cmp("error.code", "==", "-32602")),
    ("latency>100ms", cmp("latency", ">", "100ms")),
    ("latency <= 1.5s", cmp("latency", "<=", "1.5s")),
    ("severity >= warning", cmp("severity", ">=", "warning")),
    ('jsonrpc.request.id == "3"', cmp("jsonrpc.request.id", "==", "3", True)),
    ("error.code", ("present", "error.code")),
    ("timeout", ("text", "timeout")),
    ("'permission denied'", ("text", "permission denied")),
    (r'"say \"hi\""', ("text", 'say "hi"')),
    (
        "kind == request and direction == c2s",
        ("and", cmp("kind", "==", "request"), cmp("direction", "==", "c2s")),
    ),
    (
        "kind == request direction == c2s",
        ("and", cmp("kind", "==", "request"), cmp("direction", "==", "c2s")),
    ),
    ("a or b and c", ("or", ("text", "a"), ("and", ("text", "b"), ("text", "c")))),
    ("(a or b) and c", ("and", ("or", ("text", "a"), ("text", "b")), ("text", "c"))),
    ("a || b && !c", ("or", ("text", "a"), ("and", ("text", "b"), ("not", ("text", "c"))))),
    ("not not rule", ("not", ("not", ("present", "rule")))),
    ("NOT kind == error", ("not", cmp("kind", "==", "error"))),
    ('rule ~ "JR-\\d+"', cmp("rule", "~", "JR-\\d+", True)),
]


@pytest.mark.parametrize(("expression", "tree"), VALID, ids=[e for e, _ in VALID])
def test_valid_expressions_parse_to_their_tree(expression: str, tree: object) -> None:
    assert shape(compile_filter(expression).tree) == tree


# expression -> (0-based position of the caret, a word of the message)
INVALID = [
    ("", 0, "empty"),
    ("   ", 3, "empty"),
    ("(", 1, "expected an expression"),
    ("(a or b", 7, "expected ')'"),
    ("a)", 1, "unexpected ')'"),
    ("== x", 0, "field name before"),
    ("latency >", 9, "expected a value"),
    ("latency > and", 10, "expected a value"),
    ("latency > 10xs", 10, "bad duration"),
    ("latency > fast", 10, "bad duration"),
    ("kind == reqest", 8, "unknown kind"),
    ("direction == up", 13, "unknown direction"),
    ("severity > fatal", 11, "unknown severity"),
    ("error.code == abc", 14, "takes a number"),
    ("mcp.metod.name == x", 0, "did you mean mcp.method.name"),
    ("mcp.metod.name", 0, "unknown field"),
    ("kind == error and bogus == 1", 18, "unknown field 'bogus'"),
    ('method ~ "("', 10, "bad regular expression"),
    ("method ~ a(b", 12, "expected ')'"),  # a bare word ends at "(": quote such regexes
    ("rule < X", 5, "compares numbers"),
    ("jsonrpc.request.id > 3", 19, "compares numbers"),
    ("'abc", 0, "unterminated string"),
    ('x and "abc', 6, "unterminated string"),
    ('"method" == x', 0, "not quoted"),
    ("a and", 5, "expected an expression"),
    ("a & b", 2, "use 'and'"),
    ("kind == request ==", 16, "unexpected '=='"),
    ("not", 3, "expected an expression"),
    ("(" * 101 + "a" + ")" * 101, 100, "nested more than 100"),
    ("not " * 101 + "a", 400, "nested more than 100"),
]


@pytest.mark.parametrize(("expression", "position", "words"), INVALID, ids=[e for e, *_ in INVALID])
def test_invalid_expressions_point_at_the_offending_position(
    expression: str, position: int, words: str
) -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter(expression)
    error = caught.value
    assert error.position == position
    assert words in error.message
    assert str(error) == f"{error.message} (at column {position + 1})"
    shown, caret = error.caret().split("\n")
    assert shown == expression
    assert caret == " " * position + "^"


def test_caret_stays_under_the_character_when_earlier_text_is_escaped() -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter("\x1b[31m kind == nope")
    shown, caret = caught.value.caret().split("\n")
    assert "\x1b" not in shown
    assert shown[len(caret) - 1 :].startswith("nope")


@pytest.mark.parametrize(
    ("source", "tree"),
    [
        ("latency > 5 ms", cmp("latency", ">", "5ms")),
        ("latency >= 1.5 s", cmp("latency", ">=", "1.5s")),
        (
            "latency < 2 MS and method == ping",
            ("and", cmp("latency", "<", "2MS"), cmp("mcp.method.name", "==", "ping")),
        ),
        # Near misses: a unit word only joins a bare number of a duration field.
        ("seq > 5 ms", ("and", cmp("seq", ">", "5"), ("text", "ms"))),
        ("latency > 5ms ms", ("and", cmp("latency", ">", "5ms"), ("text", "ms"))),
        ('latency > "5" ms', ("and", cmp("latency", ">", "5", True), ("text", "ms"))),
        ("latency > 5 hours", ("and", cmp("latency", ">", "5"), ("text", "hours"))),
    ],
)
def test_a_duration_unit_after_a_space_belongs_to_its_number(source: str, tree: object) -> None:
    assert shape(compile_filter(source).tree) == tree
