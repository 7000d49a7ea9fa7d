"""core/http/headers.py: look-ups by lower-cased name, and the end-to-end fields."""

from __future__ import annotations

from mcpsniff.core.http.headers import (
    client_address,
    end_to_end,
    end_to_end_named,
    header,
    lowered,
    names_of,
    text_headers,
)


def test_look_ups_ignore_case_and_the_first_of_repeated_names_wins() -> None:
    pairs = [("Content-Type", "a/b"), ("X", "1"), ("content-type", "c/d")]
    assert header(pairs, "content-type") == "a/b"
    assert header(pairs, "accept") is None
    assert lowered(pairs) == {"content-type": "a/b", "x": "1"}


def test_hop_by_hop_fields_and_those_connection_names_are_not_forwarded() -> None:
    pairs = [
        ("Host", "h"),
        ("Connection", "keep-alive, X-Private"),
        ("Keep-Alive", "5"),
        ("X-Private", "s"),
        ("Transfer-Encoding", "chunked"),
        ("Mcp-Session-Id", "abc"),
    ]
    assert end_to_end(pairs) == [("Host", "h"), ("Mcp-Session-Id", "abc")]
    kept, names = end_to_end_named(pairs, names_of(pairs))
    assert names == ["host", "mcp-session-id"] and len(kept) == 2


def test_end_to_end_headers_pass_whole_and_in_order() -> None:
    """The near miss: nothing hop-by-hop, so nothing is dropped (a copy, not the list)."""
    pairs = [("B", "2"), ("A", "1"), ("b", "3")]
    forwarded = end_to_end(pairs)
    assert forwarded == pairs and forwarded is not pairs


def test_bytes_pairs_are_decoded_losslessly_and_text_pairs_pass() -> None:
    assert text_headers(((b"X-Raw", b"\xff\x00"),)) == [("X-Raw", "\udcff\x00")]
    assert text_headers((("A", "b"),)) == [("A", "b")]
    assert text_headers(()) == []


def test_a_client_address_is_host_port_with_ipv6_in_brackets() -> None:
    assert client_address(("127.0.0.1", 5000)) == "127.0.0.1:5000"
    assert client_address(("::1", 5000, 0, 0)) == "[::1]:5000"
    assert client_address(None) is None and client_address("/unix.sock") is None
