"""Differential test: today's redaction against the one of commit 49ad5f7.

The Aho-Corasick prefilter (``core/hint_scan.py``), the skipped steps and the
``"progressToken"`` fast path must be pure speed-ups: on any input, every
secret the reference redaction (``redact_49ad5f7.py``, a verbatim copy) removes
must still be removed. We ask for more, the same bytes and the same count, and
say which secret leaks when they differ.
"""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpsniff.core import redact as current
from mcpsniff.core.hint_scan import WINDOW
from tests.e2e import secrets_corpus as corpus
from tests.review import redact_49ad5f7 as reference

_NAMES = [*corpus.MEMBER_NAMES, "password", "token", "progressToken", "nextCursor", "id"]
_NAMES += [*corpus.LOOKALIKE_ARGUMENTS, "access_token", "sig", "code", "Authorization"]
_SECRET_VALUES = list(corpus.SECRETS.values()) + list(corpus.VALUE_SECRETS.values())
_SNIPPETS = [
    *corpus.NESTED_TEXTS,
    *corpus.STDERR_LINES,
    *corpus.LOOKALIKES,
    corpus.ERROR_MESSAGE,
    corpus.ERROR_BODY,
    '"progressToken"',
    '"progressToken": "tok-1"',
    "progresstoken",
    "token=abc123",
    "?key=abc&sig=def&code=ghi",
    "https://user:hunter2pass@example.com/x",
    "Bearer abc.def-123",
    "-----BEGIN PRIVATE KEY-----\nMIIBVQ\n-----END PRIVATE KEY-----",
    '{\\"api_key\\": \\"nested-secret-1\\"}',
    "[REDACTED]",
    "\\",
    '"',
    ":",
    "=",
    " ",
    "\n",
]


def _mixed_case(text: str, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


@st.composite
def _values(draw: st.DrawFn, depth: int = 0) -> object:
    kind = draw(st.integers(0, 5 if depth < 3 else 2))
    if kind == 0:
        return draw(st.sampled_from(_SECRET_VALUES))
    if kind == 1:
        return draw(st.sampled_from(_SNIPPETS))
    if kind == 2:
        parts = draw(st.lists(st.sampled_from(_SNIPPETS + _SECRET_VALUES), max_size=5))
        text = "".join(parts)
        if draw(st.booleans()):
            text = _mixed_case(text, draw(st.integers(0, 1000)))
        return text
    if kind == 3:
        members = draw(st.lists(st.tuples(st.sampled_from(_NAMES), _values(depth + 1)), max_size=4))
        return dict(members)
    if kind == 4:
        # JSON inside a JSON string, as tool results carry it.
        return json.dumps(draw(_values(depth + 1)))
    return draw(st.lists(_values(depth + 1), max_size=3))


@st.composite
def _frames(draw: st.DrawFn) -> bytes:
    """A frame: JSON (maybe with JSON in its strings), text, or JSON with text around it."""
    value = draw(_values())
    body = json.dumps(value) if not isinstance(value, str) or draw(st.booleans()) else value
    if draw(st.booleans()):
        body = _mixed_case(body, draw(st.integers(0, 1000)))
    prefix = draw(st.sampled_from(["", "x" * 40, "progressToken ", "debug: "]))
    return (prefix + body).encode("utf-8", "surrogatepass")


def _assert_same(frame: bytes) -> None:
    expected = reference.redact_frame(frame)
    got = current.redact_frame(frame)
    if got == expected:
        return
    leaks = [secret for secret in _SECRET_VALUES if secret.encode() in got[0]]
    leaks = [s for s in leaks if s.encode() not in expected[0]]
    raise AssertionError(
        f"redaction differs from 49ad5f7 on {frame[:300]!r}\n"
        f"reference: {expected[0][:300]!r} ({expected[1]})\n"
        f"current:   {got[0][:300]!r} ({got[1]})\nleaked now: {leaks}"
    )


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_frames())
@example(b'"progressToken"=abc123xyz')
@example(b'{"progressToken": "x", "note": "token=abc123xyz"}')
@example(b'"progressToken" "progressToken": token: abc123xyz')
@example(b"AUTHORIZATION: BEARER abc.def-123")
def test_generated_frames_redact_as_before(frame: bytes) -> None:
    _assert_same(frame)


@pytest.mark.parametrize("builder", ["call", "result", "error"])
def test_corpus_messages_redact_as_before(builder: str) -> None:
    message = {
        "call": corpus.tool_call(1),
        "result": corpus.tool_result(1),
        "error": corpus.tool_error(1),
    }[builder]
    for indent in (None, 2):
        _assert_same(json.dumps(message, indent=indent).encode())
    for line in corpus.STDERR_LINES:
        _assert_same(line.encode())


def _secret_pieces() -> list[bytes]:
    pieces = [f'"{name}": "v4lue-{i}x9"'.encode() for i, name in enumerate(_NAMES)]
    pieces += [f"{name}=v4lue-{i}x9".encode() for i, name in enumerate(_NAMES)]
    pieces += [value.encode() for value in _SECRET_VALUES]
    return pieces


@pytest.mark.parametrize("shift", [-20, -9, -5, -3, -1, 0, 1, 3])
def test_hints_across_the_scanner_window_redact_as_before(shift: int) -> None:
    """Each secret placed so that its hint straddles the 64 KiB window boundary."""
    for piece in _secret_pieces():
        pad = max(0, WINDOW + shift - 2)
        for filler in (b" ", b"a", b"k"):
            frame = b'{"x": "' + filler * pad + b'", ' + piece[: len(piece)] + b"}"
            _assert_same(frame)
            text = filler * (WINDOW + shift) + piece
            _assert_same(text)


def test_secrets_at_every_position_of_a_short_frame() -> None:
    base = json.dumps(corpus.tool_call(7)).encode()
    for piece in (b"token=abc123xyz", b"sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4", b'"pw": "zz9"'):
        for at in range(0, len(base), 7):
            _assert_same(base[:at] + piece + base[at:])


def test_huge_frames_redact_as_before() -> None:
    secret = corpus.VALUE_SECRETS["openai"].encode()
    frame = b'{"a": "' + b"x" * (3 * WINDOW + 17) + b'", "api_key": "s3cr3t", "b": "' + secret
    frame += b" " + b"y" * (2 * WINDOW) + b' token=abc123"}'
    _assert_same(frame)
    assert b"s3cr3t" not in current.redact_frame(frame)[0]
    assert secret not in current.redact_frame(frame)[0]


class _CountingTail:
    """Stands in for redact._PAIR_TAIL and adds up how many bytes its matches cover."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def match(self, data: bytes, pos: int) -> re.Match[bytes] | None:
        found = self.pattern.match(data, pos)
        if found is not None:
            self.scanned += found.end() - pos
        return found


def test_text_pairs_read_each_byte_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``monkey=monkey=...`` (any non-secret name with a ``key`` hint, repeated): for each
    hint the value pattern runs to the end of the frame, so a 800 KB stderr line costs
    minutes of analysis CPU (153 s measured at 20ff1a0; 266 s in 49ad5f7; fixed on main
    by bed7d13). Counted in bytes, not seconds: each byte read a few times, not n/7."""
    tail = _CountingTail(current._PAIR_TAIL)
    monkeypatch.setattr(current, "_PAIR_TAIL", tail)
    frame = b"monkey=" * 2000
    current.redact_frame(frame)
    assert tail.scanned <= 8 * len(frame), f"{tail.scanned} bytes read for {len(frame)}"


_URL_PARTS = [
    "https://",
    "http://u:",
    "p4ss",
    "@",
    "host",
    "/p",
    "?",
    "key=",
    "abc",
    "&",
    "sig=",
    "x",
    "code=",
    "token=",
    "%20",
]
_URL_PARTS += ["Bearer ", "sk-proj-A1b2C3d4E5f6G7h8I9j0"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_URL_PARTS), max_size=12), st.integers(0, 1000))
def test_urls_headers_and_argv_redact_as_before(parts: list[str], seed: int) -> None:
    text = _mixed_case("".join(parts), seed) if seed % 2 else "".join(parts)
    assert current.redact_url(text) == reference.redact_url(text)
    pairs = [("X-Thing", text), ("Authorization", text), ("Mcp-Session-Id", text)]
    assert current.redact_header_pairs(pairs) == reference.redact_header_pairs(pairs)
    argv = ["--token", text, f"--api-key={text}", text]
    assert current.redact_argv(argv) == reference.redact_argv(argv)
    assert current.redact_json_value({"a": text, "password": text}) == reference.redact_json_value(
        {"a": text, "password": text}
    )
