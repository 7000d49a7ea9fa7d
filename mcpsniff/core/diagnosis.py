"""Explain why a frame is not JSON (the story behind a JSON-RPC -32700).

JSON-RPC 2.0 only says "Parse error: Invalid JSON was received by the
server." A developer needs to know *which* mistake produced it: a ``print()``
on stdout, a pretty-printer, a Python ``repr``, a message cut in half.
:func:`diagnose` looks at one frame that failed to parse and names the most
likely cause, in plain words.

Causes are tried in a fixed priority order (see :data:`CAUSES`):

1. ``empty`` -- nothing to parse; every other check would be noise.
2. ``bom`` -- before the UTF-8 check, because a UTF-16 BOM is itself invalid
   UTF-8 and the real story is the encoding; a UTF-8 BOM is only blamed when
   the rest parses (otherwise the rest is diagnosed and the BOM mentioned).
3. ``invalid-utf8`` -- every later check reads text; with undecodable bytes
   they would reason about replacement characters.
4. ``pretty-printed`` (line framing only) -- before the repair-based checks
   because its fragments (``{``, ``},``, ``"id": 1,``) would otherwise look
   truncated, concatenated or like a trailing comma.
5. ``trailing-comma``, 6. ``single-quotes``, 7. ``concatenated`` -- each is
   confirmed by a repair that makes the text parse (or an unmistakable
   shape), so they are high-confidence and must beat the structural guess
   below. Trailing commas come first: they are the smallest repair.
8. ``truncated`` -- starts like JSON and the parser ran out of input; only a
   structural inference, so it comes after the confirmed repairs.
9. ``log-line`` -- the text does not start like JSON at all (or reads as
   prose that merely starts with ``[`` or a digit).
10. ``unknown`` -- nothing fits; the parser's own message is reported.

The functions here are pure and never raise on any input bytes.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

import orjson

from mcpsniff.core.lazy_pattern import lazy

__all__ = ["CAUSES", "ParseDiagnosis", "diagnose"]

CAUSES: tuple[str, ...] = (
    "empty",
    "bom",
    "utf16-no-bom",
    "invalid-utf8",
    "lone-surrogate",
    "control-character",
    "comment",
    "nan-infinity",
    "pretty-printed",
    "trailing-comma",
    "single-quotes",
    "concatenated",
    "split-string",
    "truncated",
    "log-line",
    "unknown",
)
"""Every cause :func:`diagnose` can return, in the order they are checked."""

EXCERPT_MAX = 80
"""Longest excerpt, in characters, ellipsis included."""

_BOM_UTF8 = b"\xef\xbb\xbf"
_BOM_UTF16 = (b"\xff\xfe", b"\xfe\xff")
# RFC 8259 section 2: ws = *( %x20 / %x09 / %x0A / %x0D ). bytes.strip()
# would also drop \x0b and \x0c, which a JSON parser rejects.
_WS = " \t\r\n"
_WS_B = b" \t\r\n"

# A complete double-quoted JSON string, for anchored matches.
_DQ = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
# The same for scanning: the closing quote is optional, so an unterminated
# string swallows the rest of the text in one match. Were it required, the
# scan would retry at every escaped quote inside it and go quadratic; the
# possessive quantifiers (3.11+) likewise rule out backtracking.
_DQ_TOKEN = r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?P<dq_end>")?'
_SQ_TOKEN = r"'[^'\\]*+(?:\\.[^'\\]*+)*+(?P<sq_end>')?"
_STRUCTURE = lazy(rf"{_DQ_TOKEN}|[][{{}}]", re.S)
_TRAILING_COMMA = lazy(rf"(?P<dq>{_DQ_TOKEN})|,(?P<closer>[{_WS}]*+[]}}])", re.S)
_SINGLE_QUOTES = lazy(
    rf"(?P<dq>{_DQ_TOKEN})|(?P<sq>{_SQ_TOKEN})|\b(?P<lit>True|False|None)\b", re.S
)
_PY_LITERAL = {"True": "true", "False": "false", "None": "null"}
_SQ_BODY = lazy(r'\\(.)|"', re.S)
_OPENS_SINGLE_QUOTED = lazy(r"[\[{]\s*'")
_QUOTE_OR_ESCAPE = lazy(r'\\.|"', re.S)

# Pretty-printer fragments, matched against a stripped line.
# JSON.stringify(v, null, 2) and json.dumps(v, indent=2) put every opening
# bracket at the end of a line and every closing one at the start.
_OPENERS_ONLY = lazy(r"[\[{](?:\s*+[\[{])*+")
_CLOSERS_ONLY = lazy(r"[]}](?:\s*+[]}])*+\s*+,?")
_MEMBER_KEY = lazy(rf"{_DQ}\s*+:", re.S)

# Prose that happens to start with a JSON-ish character.
_BRACKET_WORD = lazy(r"\[\s*+(?!(?:true|false|null)\b)[^\W\d]")
_BRACKET_TIME = lazy(r"\[\s*+\d{1,4}[-:/.]\d")
_LITERAL_THEN_SYNTAX = lazy(r"(?:true|false|null)\s*+[,\]}]")
_DATE_TIME = lazy(r"\d{1,4}[-/:.]\d{1,2}[-/:.]\d")
_WORD = lazy(r"[A-Za-z]{2,}")
_HTML = lazy(r"<(?:!doctype|html|head|body|\?xml|[a-z][a-z0-9]*+[\s/>])", re.I)
_TRACEBACK = lazy(r'Traceback \(most recent call last\)|File "[^"\n]*+", line \d')

_INTERNAL = "diagnosis failed internally"


@dataclass(slots=True)
class ParseDiagnosis:
    """Why one frame is not JSON.

    ``cause`` is one of :data:`CAUSES`. ``error_offset`` is a byte offset into
    the frame (where the parser stopped, or the first bad byte), None when
    not meaningful. ``parser_error`` is orjson's message ("" if the frame
    actually parses).
    """

    cause: str
    explanation: str
    excerpt: str
    error_offset: int | None
    parser_error: str


@dataclass(slots=True)
class _Scan:
    """Result of walking the brackets of the first value of a text."""

    end: int | None  # index just past the first value, None if it never closed
    in_string: bool  # the text ran out inside a string


def diagnose(raw: bytes, *, at_eof: bool = False, framing: str = "line") -> ParseDiagnosis:
    """Explain why ``raw`` (one frame that failed to parse as JSON) is not JSON.

    ``raw`` may include its line terminator. ``at_eof`` says the frame was cut
    by the end of the stream (no final newline). ``framing`` is ``"line"`` for
    a stdio NDJSON line, or ``"body"`` for an HTTP body or SSE ``data`` where
    newlines are legal. Never raises on any ``raw``; an unknown ``framing``
    is a programming error and raises ValueError.
    """
    if framing not in ("line", "body"):
        raise ValueError(f"framing must be 'line' or 'body', not {framing!r}")
    raw = bytes(raw)
    try:
        return _diagnose(raw, at_eof=at_eof, line=framing == "line")
    except Exception as exc:  # a safety net for the proxy, not a code path
        return ParseDiagnosis(
            cause="unknown",
            explanation=f"{_INTERNAL} ({type(exc).__name__}: {exc})",
            excerpt=_safe_excerpt(raw),
            error_offset=None,
            parser_error="",
        )


def _diagnose(raw: bytes, *, at_eof: bool, line: bool) -> ParseDiagnosis:
    unit = "line" if line else "body"
    parser_error, char_pos = _parse_error(raw)
    if parser_error is None:
        return _make(raw, "unknown", f"the {unit} is valid JSON: nothing to diagnose", None, "")

    if not raw.strip(_WS_B):
        explanation = (
            "the line is blank: an extra newline (or an empty print()) was written between messages"
            if line
            else "the body is empty, but a JSON-RPC message was expected"
        )
        return _make(raw, "empty", explanation, 0, parser_error)

    bom = _check_bom(raw, at_eof=at_eof, line=line, parser_error=parser_error)
    if bom is not None:
        return bom

    if _looks_like_utf16(raw):
        return _make(
            raw,
            "utf16-no-bom",
            "every other byte is NUL: the writer encodes text as UTF-16 (without a byte order "
            "mark), but MCP messages must be UTF-8",
            raw.find(b"\x00"),
            parser_error,
        )

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _invalid_utf8(raw, exc, at_eof=at_eof, line=line, parser_error=parser_error)

    offset = len(text[:char_pos].encode("utf-8"))
    lead = len(text) - len(text.lstrip(_WS))
    s = text.strip(_WS)

    def make(cause: str, explanation: str, at: int | None = offset) -> ParseDiagnosis:
        return _make(raw, cause, explanation, at, parser_error)

    scan = _scan_first_value(s) if s[0] in "{[" else None

    lexical = _lexical_cause(text, char_pos, parser_error, unit)
    if lexical is not None:
        return make(*lexical)

    # MCP stdio: "Messages are delimited by newlines, and MUST NOT contain
    # embedded newlines." A pretty-printed message arrives as many lines.
    indented = text.rstrip(_WS)  # keeps the indentation a pretty-printer adds
    if line and _is_pretty_fragment(s, indented, scan, terminated=not at_eof):
        return make(
            "pretty-printed",
            "the line is a fragment of a pretty-printed (indented, multi-line) JSON message: "
            "on stdio each message must be serialized on a single line, without indentation",
        )

    if _parses(_remove_trailing_commas(s)):
        return make(
            "trailing-comma",
            "the JSON has a comma right before a closing '}' or ']', which JSON forbids: "
            "the message was written by hand or by a lenient (JavaScript/JSON5-style) serializer",
        )

    swapped, single_quoted, python_literals = _swap_single_quotes(s)
    if single_quoted and (
        _parses(swapped)
        or _parses(_remove_trailing_commas(swapped))
        or _OPENS_SINGLE_QUOTED.match(s)
    ):
        hint = (
            "it looks like a Python dict printed with print()/str() instead of json.dumps()"
            if python_literals or s.startswith("{'")
            else "the writer did not use a JSON serializer"
        )
        return make(
            "single-quotes",
            f"strings or keys are in single quotes, which JSON does not allow: {hint}",
        )

    if scan is not None and scan.end is not None and _parses(s[: scan.end]):
        rest = s[scan.end :].lstrip(_WS)
        if rest and (rest[0] in "{[" or _parses(rest)):
            second = lead + len(s) - len(rest)
            explanation = (
                "two or more JSON values are on one line: the newline after a message "
                "is missing (or two writers interleaved their output)"
                if line
                else "the body holds two or more JSON values one after another, but a single "
                "JSON-RPC message (or one batch array) was expected"
            )
            return make("concatenated", explanation, len(text[:second].encode("utf-8")))

    if (
        scan is not None
        and scan.end is None
        and (scan.in_string or char_pos >= len(text.rstrip(_WS)))
    ):
        if line and scan.in_string and not at_eof:
            # The line ended inside a string, and a newline ended it: a raw
            # newline in a string value split the message (the next line holds
            # the rest); stdio framing joins them (rules/stdio.py).
            return make(
                "split-string",
                "the line ends inside a JSON string: a string value holds a raw newline, so "
                "the newline-delimited reader cut the message in two (stdio messages must not "
                "contain embedded newlines; JSON strings spell a newline as \\n)",
            )
        return make("truncated", _truncated_explanation(scan, at_eof=at_eof, line=line))

    # MCP stdio: "The server MUST NOT write anything to its stdout that is
    # not a valid MCP message." The classic breach is a stray print().
    if _looks_like_text(s) and not _is_string_tail(s):
        return make("log-line", _log_line_explanation(s, line=line))

    explanation = f"the {unit} is not valid JSON ({parser_error} at byte {offset})"
    if python_literals and _parses(swapped):
        explanation += (
            ": it uses Python's True/False/None, which JSON spells true/false/null "
            "(a Python object was printed instead of serialized with json.dumps())"
        )
    else:
        explanation += _unknown_hint(s, parser_error)
    return make("unknown", explanation)


#: JSON number literals JSON does not have (RFC 8259 §6: "Numeric values that cannot
#: be represented ... (such as Infinity and NaN) are not permitted").
_NON_FINITE = lazy(r"-?(?:NaN|Infinity)\b")


def _lexical_cause(
    text: str, char_pos: int, parser_error: str, unit: str
) -> tuple[str, str] | None:
    """A token JSON does not have, at the parser's error position: (cause, explanation)."""
    at = text[char_pos : char_pos + 2]
    if "control character" in parser_error and char_pos < len(text.rstrip("\r\n")):
        code = ord(text[char_pos]) if char_pos < len(text) else 0
        return (
            "control-character",
            f"a string holds a raw control character (U+{code:04X}) at byte "
            f"{len(text[:char_pos].encode('utf-8'))}; JSON strings must escape it "
            "(\\t, \\n, \\u0000 ...): the writer built the JSON by hand",
        )
    if "surrogate" in parser_error:
        return (
            "lone-surrogate",
            "a \\u escape is half of a UTF-16 surrogate pair, which stands for no character "
            "and cannot be UTF-8 encoded: the writer escaped a broken string",
        )
    if at in ("//", "/*"):
        return (
            "comment",
            f"the {unit} holds a {'//' if at == '//' else '/* */'} comment, which JSON does not "
            "allow: the message was written by hand or by a JSON5/JSONC serializer",
        )
    start = char_pos - 1 if char_pos and text[char_pos - 1] == "-" else char_pos
    match = _NON_FINITE.match(text, start)
    if match is not None:
        return (
            "nan-infinity",
            f"the {unit} holds the number {match.group()}, which JSON cannot express: the "
            "writer serialized a non-finite float (Python's json.dumps does by default; use "
            "allow_nan=False, or send null or a string)",
        )
    return None


def _looks_like_utf16(raw: bytes) -> bool:
    """UTF-16 text of ASCII characters: a NUL byte beside every character."""
    body = raw.strip(b"\r\n")
    if len(body) < 4:
        return False
    # A line cut at "\n" of UTF-16LE text starts with the NUL of that newline.
    if body[:1] == b"\x00" and body[1:2] != b"\x00":
        body = body[1:]
    evens, odds = body[0::2], body[1::2]
    for zeros, chars in ((odds, evens), (evens, odds)):
        if zeros.count(0) >= 0.9 * len(zeros) and chars and chars.count(0) == 0:
            return True
    return False


def _check_bom(raw: bytes, *, at_eof: bool, line: bool, parser_error: str) -> ParseDiagnosis | None:
    """Blame a byte order mark, or diagnose what follows a harmless one."""
    if raw.startswith(_BOM_UTF16):
        return _make(
            raw,
            "bom",
            "the data starts with a UTF-16 byte order mark: the writer encodes text as "
            "UTF-16, but MCP messages must be UTF-8",
            0,
            parser_error,
        )
    if not raw.startswith(_BOM_UTF8):
        return None
    rest = raw[len(_BOM_UTF8) :]
    if not rest.strip(_WS_B) or _parse_error(rest)[0] is None:
        return _make(
            raw,
            "bom",
            "the message starts with a UTF-8 byte order mark (EF BB BF), which JSON parsers "
            "reject: the writer uses a BOM-adding encoding such as Python's 'utf-8-sig' or a "
            "Windows/.NET default",
            0,
            parser_error,
        )
    # The BOM is not the only problem: report the bigger one, mention the BOM.
    inner = _diagnose(rest, at_eof=at_eof, line=line)
    offset = None if inner.error_offset is None else inner.error_offset + len(_BOM_UTF8)
    return _make(
        raw,
        inner.cause,
        f"{inner.explanation} (it also starts with a UTF-8 byte order mark)",
        offset,
        parser_error,
    )


def _invalid_utf8(
    raw: bytes, exc: UnicodeDecodeError, *, at_eof: bool, line: bool, parser_error: str
) -> ParseDiagnosis:
    """Diagnose undecodable bytes, telling a cut-off character from bad encoding."""
    # Decode again without the terminator: a character cut at the end of the
    # frame then reads as "unexpected end of data" rather than as a bad byte
    # followed by "\n". (The terminator is ASCII, so the error is still there.)
    body = raw.rstrip(b"\r\n")
    cut_char, start = False, exc.start
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as inner:
        cut_char = inner.reason == "unexpected end of data"
        start = inner.start
    text = raw.decode("utf-8", "replace").strip(_WS)
    if cut_char and body.lstrip(_WS_B)[:1] in (b"{", b"["):
        # The only bad bytes are an unfinished multi-byte character at the very
        # end: the frame was cut, and the cut happened to split a character.
        where = "the stream ended" if at_eof or not line else "the line ends"
        return _make(
            raw,
            "truncated",
            f"{where} in the middle of a JSON message, even in the middle of a multi-byte "
            "UTF-8 character: the message was cut off",
            start,
            parser_error,
        )
    if raw[start : start + 1] == b"\xed" and b"\xa0" <= raw[start + 1 : start + 2] <= b"\xbf":
        # ED A0..BF starts an encoded UTF-16 surrogate: CESU-8 or WTF-8 output of a
        # string holding half a surrogate pair (e.g. a JavaScript string cut in two).
        return _make(
            raw,
            "lone-surrogate",
            f"bytes {start}-{start + 2} encode a UTF-16 surrogate (CESU-8/WTF-8), which is not "
            "UTF-8: the writer encoded a string holding half a surrogate pair",
            start,
            parser_error,
        )
    # MCP transports: "JSON-RPC messages MUST be UTF-8 encoded."
    explanation = (
        f"byte {exc.start} is not valid UTF-8, but MCP messages must be UTF-8 encoded: "
        "the writer probably used a legacy encoding such as Latin-1 or cp1252"
    )
    if _looks_like_text(text):
        explanation += "; it does not start like JSON either, so it is probably log output"
    return _make(raw, "invalid-utf8", explanation, exc.start, parser_error)


def _is_pretty_fragment(s: str, indented: str, scan: _Scan | None, *, terminated: bool) -> bool:
    """Whether a line reads as one line of an indented, multi-line JSON value.

    ``s`` is the stripped line, ``indented`` the line with only its end
    stripped.
    """
    if _OPENERS_ONLY.fullmatch(s) or _CLOSERS_ONLY.fullmatch(s):
        return True
    member = _MEMBER_KEY.match(s)
    if member is not None:
        # '"jsonrpc": "2.0",' or '"params": {': one member of an object.
        value = _drop_final_comma(s[member.end() :])
        return value in ("{", "[") or _parses(value)
    # '  "tools/list",' or '  42,': an array element on its own line. The
    # indentation is required; without it this could be any stray value.
    if indented[:1] in (" ", "\t") and s.endswith(","):
        return _parses(_drop_final_comma(s))
    if scan is not None:
        # '{"jsonrpc": "2.0",' then a newline: a serializer broke the line
        # after an opening bracket or a comma. The same text without a newline
        # (end of stream) is more likely a message cut off.
        return terminated and scan.end is None and not scan.in_string and s[-1] in "{[,"
    return False


def _truncated_explanation(scan: _Scan, *, at_eof: bool, line: bool) -> str:
    if at_eof:
        return (
            "the stream ended in the middle of a JSON message (no final newline): the writer "
            "exited, crashed or did not flush before closing"
        )
    if not line:
        return (
            "the body ends before the JSON value is complete: the message was cut off "
            "(connection closed early, or a wrong Content-Length)"
        )
    if scan.in_string:
        return (
            "the line ends inside a JSON string: the message was cut off, or a string holds a "
            "raw newline (on stdio it must be escaped as \\n)"
        )
    return (
        "the line ends before the JSON message is complete: the message was cut off "
        "or split across lines"
    )


def _log_line_explanation(s: str, *, line: bool) -> str:
    where = "written to stdout" if line else "sent instead of a JSON-RPC message"
    if _TRACEBACK.match(s):
        return f"the line is part of a Python traceback {where}: the server hit an exception"
    if "\x1b[" in s:
        return f"the text is colored log output (ANSI escape codes) {where}"
    if _HTML.match(s):
        return (
            "the data is HTML, not JSON: probably an error page from a proxy, gateway or "
            "web framework"
        )
    if line:
        return (
            "the line is plain text, not JSON: probably a print() or log line written to "
            "stdout (on stdio, logs belong on stderr)"
        )
    return (
        "the body is plain text, not JSON: probably an error message from the server, "
        "a proxy or a framework"
    )


def _unknown_hint(s: str, parser_error: str) -> str:
    """The end of an ``unknown`` explanation: whatever partial clue there is."""
    if "\0" in s:
        return ": it contains NUL bytes, so it is probably UTF-16 or binary data"
    if _is_string_tail(s):
        return (
            ": it looks like the second half of a message whose string held a raw newline, "
            "so the message was split across lines"
        )
    if "control character" in parser_error:
        return ": a string holds a raw control character (newline, tab...) that must be escaped"
    return ", and it matches no common mistake"


def _is_string_tail(s: str) -> bool:
    """'world"}': text that closes a string and then brackets it never opened."""
    if s[0] in "{[" or s[-1] not in "}]":
        return False
    quotes = sum(1 for m in _QUOTE_OR_ESCAPE.finditer(s) if m[0] == '"')
    return quotes % 2 == 1


def _drop_final_comma(s: str) -> str:
    s = s.strip(_WS)
    return s[:-1].rstrip(_WS) if s.endswith(",") else s


def _looks_like_text(s: str) -> bool:
    """Whether a stripped, non-JSON text reads as prose/log output."""
    if not s:
        return False
    first = s[0]
    if first in '{"':
        return False
    if first == "[":
        return bool(_BRACKET_WORD.match(s) or _BRACKET_TIME.match(s))
    if first == "-":
        # A JSON number needs a digit after its minus sign; "- item",
        # "--> start" and "---" are prose.
        return not s[1:2].isdigit() or _is_numeric_prose(s)
    if first.isdigit():
        return _is_numeric_prose(s)
    if first in "tfn" and _LITERAL_THEN_SYNTAX.match(s):
        return False  # "null," and the like: JSON debris, not prose
    # Letters, punctuation, markup, ANSI escapes: anything JSON cannot start
    # with. Other control characters point at binary data, not a log line.
    return first.isprintable() or first == "\x1b"


def _is_numeric_prose(s: str) -> bool:
    """'2024-01-01 12:00:00 INFO started', '200 OK', '3 files' but not '1,2'."""
    return bool(_DATE_TIME.match(s.lstrip("-")) or _WORD.search(s))


def _scan_first_value(s: str) -> _Scan:
    """Find where the object/array at ``s[0]`` ends, skipping string contents."""
    depth = 0
    for match in _STRUCTURE.finditer(s):
        token = match.group()
        if token[0] == '"':
            if match["dq_end"] is None:
                return _Scan(end=None, in_string=True)
            continue
        if token in "[{":
            depth += 1
            continue
        depth -= 1
        if depth <= 0:
            return _Scan(end=match.end(), in_string=False)
    return _Scan(end=None, in_string=False)


def _remove_trailing_commas(s: str) -> str:
    """Drop commas that directly precede '}' or ']', leaving strings alone."""
    return _TRAILING_COMMA.sub(lambda m: m["dq"] if m["dq"] is not None else m["closer"], s)


def _swap_single_quotes(s: str) -> tuple[str, bool, bool]:
    """Rewrite single-quoted strings and Python's True/False/None as JSON.

    Returns the rewritten text, whether a single-quoted string was seen and
    whether a Python literal was seen.
    """
    found_single = False
    found_literal = False

    def replace(m: re.Match[str]) -> str:
        nonlocal found_single, found_literal
        if m["dq"] is not None:
            return m["dq"]
        if m["sq"] is not None:
            if m["sq_end"] is None:
                return m["sq"]  # never closed: nothing to convert
            found_single = True
            return '"' + _SQ_BODY.sub(_requote_escape, m["sq"][1:-1]) + '"'
        found_literal = True
        return _PY_LITERAL[m["lit"]]

    swapped = _SINGLE_QUOTES.sub(replace, s)
    return swapped, found_single, found_literal


def _requote_escape(m: re.Match[str]) -> str:
    # Inside a string moving from '...' to "...": \' no longer needs its
    # backslash, a bare " now does, and other escapes are left for the parser.
    if m[1] is None:
        return '\\"'
    return "'" if m[1] == "'" else m[0]


def _parse_error(data: bytes | str) -> tuple[str | None, int]:
    """orjson's message and character position, or (None, 0) if ``data`` parses."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return exc.msg, exc.pos
    return None, 0


def _parses(text: str) -> bool:
    return _parse_error(text)[0] is None


def _make(
    raw: bytes, cause: str, explanation: str, offset: int | None, parser_error: str
) -> ParseDiagnosis:
    return ParseDiagnosis(
        cause=cause,
        explanation=explanation,
        excerpt=_excerpt(raw, offset),
        error_offset=offset,
        parser_error=parser_error,
    )


def _safe_excerpt(raw: bytes) -> str:
    try:
        return _excerpt(raw, None)
    except Exception:  # the safety net must not throw either
        return ""


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    """repr()-style escape for one character that is not printable."""
    if ch.isprintable():
        return ch
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _excerpt(raw: bytes, offset: int | None) -> str:
    """A short, printable view of ``raw``, around ``offset`` when it is far in.

    Control characters and non-printable code points are escaped, and bytes
    that are not UTF-8 show as ``\\xNN``, the way repr() shows them. Backslashes
    are left alone, since JSON is full of them. The line terminator that
    ends a stdio frame is not part of what the user needs to see.
    """
    if raw.endswith(b"\n"):
        raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
    start = 0
    if offset is not None and offset > EXCERPT_MAX * 5 // 8:
        start = offset - EXCERPT_MAX * 3 // 8
        # Do not open the window in the middle of a multi-byte character.
        for _ in range(3):
            if start < len(raw) and 0x80 <= raw[start] <= 0xBF:
                start += 1
    window = raw[start : start + EXCERPT_MAX * 4]
    # An incremental decoder holds back a character cut by the window's end
    # instead of showing it as bad bytes.
    decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")
    text = decoder.decode(window, final=start + len(window) >= len(raw))
    more = start + len(window) < len(raw)
    parts = ["…"] if start else []
    used = len(parts)
    for ch in text:
        piece = _escape(ch)
        if used + len(piece) > EXCERPT_MAX:
            more = True
            break
        parts.append(piece)
        used += len(piece)
    if more:
        # Make room for the ellipsis without splitting an escape sequence.
        while parts and used + 1 > EXCERPT_MAX:
            used -= len(parts.pop())
        parts.append("…")
    return "".join(parts)
