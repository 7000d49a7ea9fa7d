"""The JSONC reader ``install`` edits client configurations with (``mcpsniff.install.jsonc``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpsniff.install.jsonc import JsoncError, parse

DEEPEST = 200  # the nesting parse allows; one more is "nested too deeply"


def _from_deep_stack(frames: int, call: Callable[[], Any]) -> Any:
    """``call()`` made ``frames`` Python frames below this one (a caller deep in its own work)."""
    if frames == 0:
        return call()
    return _from_deep_stack(frames - 1, call)


@pytest.mark.parametrize(
    "text",
    ["[" * DEEPEST + "]" * DEEPEST, '{"a":' * DEEPEST + "1" + "}" * DEEPEST],
    ids=["arrays", "objects"],
)
def test_the_deepest_document_allowed_parses_below_a_deep_caller(text: str) -> None:
    """Each level costs two stack frames: 200 levels fit under 500 frames of the caller's own."""
    root = _from_deep_stack(500, lambda: parse(text))
    depth, value = 0, root.value
    while isinstance(value, (list, dict)) and value:
        value = value[0] if isinstance(value, list) else value["a"]
        depth += 1
    assert depth == (DEEPEST - 1 if text.startswith("[") else DEEPEST)
    assert (root.start, root.end) == (0, len(text))


def test_one_level_more_is_a_one_line_error() -> None:
    text = "[" * (DEEPEST + 2) + "]" * (DEEPEST + 2)
    with pytest.raises(JsoncError, match=r"^nested too deeply at line 1, column \d+$"):
        parse(text)


def test_comments_trailing_commas_and_a_bom_keep_each_member_s_span() -> None:
    text = '\ufeff{ // c\n "a": [1, [2,], /* x */],\n "b": {"c": "d",},\n}\n'
    root = parse(text)
    assert root.value == {"a": [1, [2]], "b": {"c": "d"}}
    a, a_key_start = root.members["a"]
    assert text[a_key_start : a_key_start + 3] == '"a"'
    assert text[a.start : a.end] == "[1, [2,], /* x */]"
    assert [text[i.start : i.end] for i in a.items] == ["1", "[2,]"]
    b, _ = root.members["b"]
    assert text[b.start : b.end] == '{"c": "d",}'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"a": 1,, }', "expected a member name in double quotes at line 1, column 9"),
        ("[1 2]", "expected ',' or ']' at line 1, column 4"),
        ('{"a" 1}', "expected ':' at line 1, column 6"),
        ('{"a": 1 "b": 2}', "expected ',' or '}' at line 1, column 9"),
    ],
)
def test_a_broken_document_names_where(text: str, error: str) -> None:
    with pytest.raises(JsoncError) as caught:
        parse(text)
    assert str(caught.value) == error
