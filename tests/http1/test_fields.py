"""http1/fields.py: list-based field tokens and whether a connection persists."""

from __future__ import annotations

from mcpsniff.http1.fields import field_tokens, wants_close


def test_field_tokens_split_every_field_of_the_name_on_commas() -> None:
    headers = [("Transfer-Encoding", "gzip , Chunked"), ("X", "y"), ("transfer-encoding", " ,br")]
    assert field_tokens(headers, "transfer-encoding") == ["gzip", "chunked", "br"]


def test_field_tokens_trim_only_ows_so_a_vertical_tab_stays_part_of_the_token() -> None:
    # RFC 9110 §5.6.1: OWS is SP or HTAB; "chunked\v" is no "chunked".
    assert field_tokens([("Transfer-Encoding", "chunked\v")], "transfer-encoding") == ["chunked\v"]
    assert field_tokens([("Transfer-Encoding", "\tchunked ")], "transfer-encoding") == ["chunked"]


def test_wants_close() -> None:
    assert wants_close("HTTP/1.1", [("Connection", "keep-alive, Close")])
    assert not wants_close("HTTP/1.1", [])
    assert wants_close("HTTP/1.0", [])
    assert not wants_close("HTTP/1.0", [("connection", "keep-alive")])


def test_wants_close_with_names_known_skips_the_scan() -> None:
    assert wants_close("HTTP/1.0", [("Connection", "keep-alive")], ["connection"]) is False
    assert wants_close("HTTP/1.1", [("X", "close")], ["x"]) is False
