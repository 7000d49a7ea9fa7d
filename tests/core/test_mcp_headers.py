"""core/mcp_headers.py: the 2026-07-28 header value codec and x-mcp-header annotations."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpsniff.core import mcp_headers
from mcpsniff.core.mcp_headers import (
    Annotation,
    read,
    rendered,
    same_value,
    tool_headers,
    why_encode,
)


def encode(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


# The table of streamable-http.mdx § Value Encoding.
@pytest.mark.parametrize(
    ("original", "header"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_the_spec_examples_decode_to_their_value(original: str, header: str) -> None:
    value = read(header)
    assert value.text == original and value.problem is None
    assert (why_encode(original) is None) == (header == original)


@given(st.text(max_size=40))
def test_every_encoded_value_reads_back(text: str) -> None:
    assert read(encode(text)).text == text


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("=?base64?%%%?=", "not valid Base64"),
        ("=?base64?" + base64.b64encode(b"\xff\xfe").decode() + "?=", "not UTF-8"),
        ("grüße", "outside visible ASCII"),
        ("a\x00b", "outside visible ASCII"),
    ],
)
def test_unusable_values(raw: str, problem: str) -> None:
    assert problem in (read(raw).problem or "")


def test_uppercase_markers_are_a_plain_value() -> None:
    value = read("=?BASE64?eA==?=")
    assert not value.encoded and value.text == "=?BASE64?eA==?="


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("plain value", None),
        ("", None),
        ("ü", "non-ASCII"),
        ("tab\tinside", "control"),
        (" x", "whitespace"),
        ("=?base64?x?=", "pattern"),
    ],
)
def test_why_encode(text: str, reason: str | None) -> None:
    found = why_encode(text)
    assert (found is None) if reason is None else (reason in (found or ""))


@pytest.mark.parametrize(
    ("value", "text"),
    [("s", "s"), (42, "42"), (-7, "-7"), (True, "true"), (False, "false"), (42.0, "42")],
)
def test_type_conversion(value: Any, text: str) -> None:
    assert rendered(value) == text and same_value(text, value)


def test_integers_compare_numerically() -> None:
    assert same_value("42.0", 42) and same_value("42", 42.0)
    assert not same_value("43", 42) and not same_value("x", 42)
    assert rendered([1]) is None and rendered(None) is None and rendered(0.5) is None


def test_annotations_are_found_by_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {
                "type": "object",
                "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}},
            },
        },
    }
    found = tool_headers(schema)
    assert found.problem is None
    assert found.annotations == (
        Annotation("Flag", ("nested", "flag")),
        Annotation("Region", ("region",)),
    )
    assert mcp_headers.value_at({"nested": {"flag": False}}, ("nested", "flag")) is False
    assert mcp_headers.value_at({"nested": 3}, ("nested", "flag")) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "x-mcp-header": "Root"},
        {"properties": {"a": {"type": "integer", "x-mcp-header": 5}}},
        {"$defs": {"a": {"type": "string", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": ["string", "null"], "x-mcp-header": "A"}}},
        {"properties": {"a": {"x-mcp-header": "A"}}},
        {"if": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
    ],
)
def test_invalid_annotations(schema: dict[str, Any]) -> None:
    found = tool_headers(schema)
    assert found.problem is not None and found.annotations == ()


def test_no_schema_no_annotations() -> None:
    assert tool_headers(None) == mcp_headers.NO_HEADERS
    assert tool_headers({"type": "object"}).annotations == ()


def test_a_huge_schema_is_walked_within_bounds() -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(mcp_headers.WALK_LIMIT + 10):
        node = {"type": "object", "properties": {"a": node}}
    assert tool_headers(node).problem is None
