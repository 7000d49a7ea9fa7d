"""Tests for mcpsniff.core.diagnosis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.core.diagnosis import CAUSES, EXCERPT_MAX, ParseDiagnosis, diagnose

# --------------------------------------------------------------------------- one test per cause


def test_empty_crlf_line() -> None:
    d = diagnose(b"\r\n")
    assert d.cause == "empty"
    assert d.excerpt == ""
    assert d.parser_error != ""


def test_empty_body() -> None:
    d = diagnose(b"", framing="body")
    assert d.cause == "empty"
    assert "body" in d.explanation


def test_utf8_bom_before_valid_json() -> None:
    d = diagnose(b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"ping","id":1}\n')
    assert d.cause == "bom"
    assert d.error_offset == 0
    assert "byte order mark" in d.explanation
    assert d.excerpt.startswith("\\ufeff{")


def test_utf16_bom() -> None:
    d = diagnose('{"jsonrpc":"2.0"}'.encode("utf-16"))
    assert d.cause == "bom"
    assert "UTF-16" in d.explanation


def test_bom_with_another_problem_reports_the_other_problem() -> None:
    d = diagnose(b'\xef\xbb\xbf{"a":1,}\n')
    assert d.cause == "trailing-comma"
    assert d.error_offset == 3 + 6
    assert "byte order mark" in d.explanation


def test_invalid_utf8_inside_a_string() -> None:
    d = diagnose(b'{"a":"\xff"}\n')
    assert d.cause == "invalid-utf8"
    assert d.error_offset == 6
    assert d.excerpt == '{"a":"\\xff"}'
    assert "UTF-8" in d.explanation


def test_latin1_log_line_is_invalid_utf8_and_says_it_is_text() -> None:
    d = diagnose("Café prêt\n".encode("latin-1"))
    assert d.cause == "invalid-utf8"
    assert d.error_offset == 3
    assert "log output" in d.explanation


def test_pretty_printed_opening_brace() -> None:
    d = diagnose(b"{\n")
    assert d.cause == "pretty-printed"
    assert "single line" in d.explanation
    assert d.excerpt == "{"


@pytest.mark.parametrize(
    "line",
    [
        b"[\n",
        b"}\n",
        b"]\n",
        b"},\n",
        b"  ]\n",
        b'  "jsonrpc": "2.0",\n',
        b'  "id": 1\n',
        b'  "params": {\n',
        b'    "tools": [\n',
        b'      "tools/list",\n',
        b'{"jsonrpc": "2.0",\n',
    ],
)
def test_pretty_printed_fragments(line: bytes) -> None:
    assert diagnose(line).cause == "pretty-printed"


def test_pretty_printed_message_line_by_line() -> None:
    message = b'{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "result": {\n    "tools": []\n  }\n}\n'
    causes = [diagnose(line + b"\n").cause for line in message.split(b"\n")[:-1]]
    # '    "tools": []' alone is not JSON either, and is a member line.
    assert causes == ["pretty-printed"] * 7


def test_pretty_printed_is_not_a_cause_in_body_framing() -> None:
    d = diagnose(b"{\n", framing="body")
    assert d.cause == "truncated"


def test_trailing_comma() -> None:
    d = diagnose(b'{"jsonrpc":"2.0","id":1,"result":{},}\n')
    assert d.cause == "trailing-comma"
    assert d.error_offset == 35
    assert d.parser_error == "trailing comma is not allowed"


def test_trailing_comma_in_array_and_comma_inside_string_kept() -> None:
    d = diagnose(b'{"a":[1,2,],"b":",]"}\n')
    assert d.cause == "trailing-comma"


def test_python_dict_repr() -> None:
    d = diagnose(b"{'jsonrpc': '2.0', 'id': 1}\n")
    assert d.cause == "single-quotes"
    assert "json.dumps" in d.explanation
    assert d.error_offset == 1


def test_python_repr_with_literals_and_mixed_quotes() -> None:
    d = diagnose(b"{'ok': True, 'msg': \"it's\", 'x': None}\n")
    assert d.cause == "single-quotes"


def test_concatenated_messages() -> None:
    d = diagnose(b'{"jsonrpc":"2.0","method":"a"}{"jsonrpc":"2.0","method":"b"}\n')
    assert d.cause == "concatenated"
    assert d.error_offset == 30
    assert "newline" in d.explanation


def test_concatenated_with_space_and_second_cut() -> None:
    assert diagnose(b'{"id":1} {"id":2}\n').cause == "concatenated"
    assert diagnose(b'{"id":1}{"id":\n').cause == "concatenated"


def test_concatenated_in_body_framing() -> None:
    d = diagnose(b'{"id":1}\n{"id":2}\n', framing="body")
    assert d.cause == "concatenated"
    assert d.error_offset == 9
    assert "body" in d.explanation


def test_truncated_at_eof() -> None:
    message = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}'
    half = message[: len(message) // 2]
    d = diagnose(half, at_eof=True)
    assert d.cause == "truncated"
    assert "stream ended" in d.explanation
    assert d.error_offset == len(half)


def test_truncated_mid_character_at_eof() -> None:
    d = diagnose('{"text":"caf\u00e9"}'.encode()[:13], at_eof=True)
    assert d.cause == "truncated"
    assert d.error_offset == 12


def test_line_ending_inside_a_string() -> None:
    # A newline ended the line inside a string: a raw newline split the message.
    d = diagnose(b'{"jsonrpc":"2.0","id":1,"result":{"text":"first line\n')
    assert d.cause == "split-string"
    assert "raw newline" in d.explanation


def test_long_line_cut_mid_string_at_eof_is_truncated() -> None:
    raw = b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + b"x" * 100_000
    d = diagnose(raw, at_eof=True)
    assert d.cause == "truncated"
    assert d.excerpt.startswith("…")
    assert len(d.excerpt) <= EXCERPT_MAX


def test_opening_line_at_eof_without_newline_is_truncated() -> None:
    assert diagnose(b'{"jsonrpc": "2.0",', at_eof=True).cause == "truncated"


@pytest.mark.parametrize(
    "line",
    [
        b"Loading model...\n",
        b"INFO:root:started\n",
        b"Server listening on port 3000\n",
        b"[2024-01-01 12:00:00] DEBUG connecting\n",
        b"[INFO] starting\n",
        b"null pointer\n",
        b"nothing to do\n",
        b"2024-01-01 12:00:00 INFO started\n",
        b"200 OK\n",
        b"- step one\n",
        b"hello world\n",
    ],
)
def test_log_lines(line: bytes) -> None:
    d = diagnose(line)
    assert d.cause == "log-line"
    assert "stdout" in d.explanation


def test_loading_model_log_line_details() -> None:
    d = diagnose(b"Loading model...\n")
    assert d.cause == "log-line"
    assert d.explanation.startswith("the line is plain text, not JSON")
    assert d.excerpt == "Loading model..."
    assert d.error_offset == 0
    assert d.parser_error == "unexpected character, expected a JSON value"


def test_traceback_line() -> None:
    d = diagnose(b"Traceback (most recent call last):\n")
    assert d.cause == "log-line"
    assert "traceback" in d.explanation


def test_html_error_page_body() -> None:
    d = diagnose(b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", framing="body")
    assert d.cause == "log-line"
    assert "HTML" in d.explanation


def test_ansi_colored_log_line() -> None:
    d = diagnose(b"\x1b[32mINFO\x1b[0m ready\n")
    assert d.cause == "log-line"
    assert d.excerpt == "\\x1b[32mINFO\\x1b[0m ready"


def test_jsonrpc_spec_invalid_json_example() -> None:
    # JSON-RPC 2.0 spec, "rpc call with invalid JSON".
    d = diagnose(b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]\n')
    assert d.cause != "log-line"
    assert d.cause == "unknown"
    assert d.error_offset == 39


def test_jsonrpc_spec_invalid_batch_example() -> None:
    # JSON-RPC 2.0 spec, "rpc call Batch, invalid JSON", sent as an HTTP body.
    raw = (
        b'[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n'
        b'  {"jsonrpc": "2.0", "method"\n]'
    )
    d = diagnose(raw, framing="body")
    assert d.cause not in ("log-line", "empty")
    assert d.error_offset is not None
    # The parser expected ':' after "method" and found the closing bracket.
    assert raw[d.error_offset : d.error_offset + 1] == b"]"


def test_python_literals_with_double_quotes_are_explained() -> None:
    d = diagnose(b'{"ok": True}\n')
    assert d.cause == "unknown"
    assert "True/False/None" in d.explanation


def test_second_half_of_a_split_string() -> None:
    d = diagnose(b'second line"}}\n')
    assert d.cause == "unknown"
    assert "split across lines" in d.explanation


def test_binary_garbage_is_not_a_log_line() -> None:
    d = diagnose(b"\x00\x01\x02\x03\n")
    assert d.cause == "unknown"
    assert "NUL" in d.explanation


def test_valid_json_is_reported_as_nothing_to_diagnose() -> None:
    d = diagnose(b'{"jsonrpc":"2.0","method":"ping"}\n')
    assert d == ParseDiagnosis(
        cause="unknown",
        explanation="the line is valid JSON: nothing to diagnose",
        excerpt='{"jsonrpc":"2.0","method":"ping"}',
        error_offset=None,
        parser_error="",
    )


def test_unknown_framing_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="framing"):
        diagnose(b"x", framing="stdio")


# --------------------------------------------------------------------------- excerpt and offsets


def test_error_offset_is_in_bytes_not_characters() -> None:
    raw = '{"é": "ü", x}\n'.encode()
    d = diagnose(raw)
    assert d.error_offset == raw.index(b"x")


def test_excerpt_is_short_and_windowed_around_the_error() -> None:
    raw = b'{"a":"' + b"z" * 500 + b'",,}\n'
    d = diagnose(raw)
    assert d.error_offset == raw.index(b",,") + 1
    assert len(d.excerpt) <= EXCERPT_MAX
    assert d.excerpt.startswith("…")
    assert '",,}' in d.excerpt


def test_excerpt_of_long_log_line_is_cut_with_ellipsis() -> None:
    d = diagnose(b"Loading " + "é".encode() * 200 + b"\n")
    assert d.cause == "log-line"
    assert len(d.excerpt) == EXCERPT_MAX
    assert d.excerpt.endswith("…")
    assert d.excerpt.startswith("Loading éé")


# --------------------------------------------------------------------------- never raises

# Bytes that steer the heuristics, so generated frames reach every branch.
_PIECES = [b"{", b"}", b"[", b"]", b'"', b"'", b",", b":", b"\\", b" ", b"\n", b"\r", b"1"]
_PIECES += [b"true", b"None", b"x", b"\xef\xbb\xbf", b"\xff\xfe", b"\xc3", b"\x00", b"\x1b["]


@settings(max_examples=200)
@given(
    raw=st.one_of(
        st.binary(max_size=200),
        st.lists(
            st.sampled_from(_PIECES),
            max_size=40,
        ).map(b"".join),
    ),
    at_eof=st.booleans(),
    framing=st.sampled_from(["line", "body"]),
)
def test_diagnose_never_raises(raw: bytes, at_eof: bool, framing: str) -> None:
    d = diagnose(raw, at_eof=at_eof, framing=framing)
    assert d.cause in CAUSES
    assert not d.explanation.startswith("diagnosis failed")
    assert len(d.excerpt) <= EXCERPT_MAX
    assert d.excerpt.isprintable()
    assert d.error_offset is None or 0 <= d.error_offset <= len(raw)
