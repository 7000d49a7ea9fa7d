"""Redaction of credentials in what mcpsniff records (docs/architecture.md, invariant 5).

Only the *trace* is redacted; forwarded traffic is never touched. A frame is
redacted before the analyzer sees it, so that no finding can quote a secret
and ``mcpsniff check`` on the trace reproduces the live findings.

Two signals, either one enough:

* the **name** (``secret_names``): the value of a JSON member, header, query
  parameter, command-line flag or ``name=value`` pair whose name says it holds
  a credential (``api_key``, ``X-Amz-Security-Token``, ``--token``, ``pw``);
* the **value** (``secret_values``): a string that is a credential whatever its
  name (Bearer/Basic credentials, JWTs, ``sk-``, ``ghp_``, ``xox``, ``AKIA``
  keys, PEM private keys, the password in a URL's userinfo).

Either way the secret becomes ``[REDACTED]`` in place: the frame keeps its
shape, its line terminator and every other byte. JSON carried inside a JSON
string (how tool results usually arrive: ``"text": "{\\"api_key\\": ...}"``) is
decoded, redacted the same way and re-encoded. Protocol fields stay intact
(``progressToken``, ``cursor``, ``nextCursor``, ``id``): the analyzer pairs
and checks them, and a redacted id would read as a protocol violation. Every
function returns, or the record stores, how many values it replaced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import unquote_plus

import re2
from re2 import _re2

from mcpsniff.core.hint_scan import HintScanner, Hits
from mcpsniff.core.jsontypes import any_leaf
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.literal_search import LiteralSearch
from mcpsniff.core.secret_names import PROTOCOL_NAMES, Context, is_secret_name, words
from mcpsniff.core.secret_values import DETECTORS, VALUE_HINTS, Detector

__all__ = [
    "MARK",
    "is_secret_name",
    "may_redact",
    "recorded_argv",
    "redact_argv",
    "redact_frame",
    "redact_header_pairs",
    "redact_headers",
    "redact_json_value",
    "redact_query",
    "redact_text",
    "redact_url",
    "redaction_explains",
]

MARK = "[REDACTED]"
_MARK_BYTES = MARK.encode()
_MARK_LOW = _MARK_BYTES.lower()
_QUOTED_MARK = b'"' + _MARK_BYTES + b'"'

# Hints: lower-case literals one of which every secret's name or value
# contains, found in one pass over a lower-cased copy of the bytes (see
# hint_scan). A frame with none of them is returned untouched; that is almost
# every frame, and this runs on every frame.
_NAME_HINTS = (b"pass", b"pw", b"secret", b"token", b"auth", b"cookie", b"credential", b"key")
_QUERY_HINTS = (b"sig", b"code")
_SCANNER = HintScanner(_NAME_HINTS + _QUERY_HINTS + VALUE_HINTS)
_NAME_IDS = _SCANNER.ids(_NAME_HINTS)
_PAIR_IDS = _SCANNER.ids(_NAME_HINTS + _QUERY_HINTS)
_VALUE_IDS = _SCANNER.ids(VALUE_HINTS)
#: The hints in any ASCII case, searched in the frame itself: the pre-test of
#: ``redact_frame`` without the lower-cased copy (core/literal_search.py).
_ANY_HINT = LiteralSearch((hint, True) for hint in _SCANNER.hints).found
_TOKEN_ID = _SCANNER.ids((b"token",))
(_TOKEN_NUMBER,) = _TOKEN_ID
#: Each value detector with the numbers of its hints.
_DETECTOR_IDS = tuple((detector, _SCANNER.ids(detector.hints)) for detector in DETECTORS)
_STRING_AT = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NUMBER_AT = lazy(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_COLON_AT = re.compile(rb"[ \t\r\n]*:[ \t\r\n]*")
# After a name in plain text: `=value`, `: value`, `="value"`, `: Bearer value`.
_PAIR_TAIL = re.compile(
    rb"[ \t]*[=:][ \t]*(\\?[\"'])?((?:bearer|basic|digest) +)?([^\s&\"',;<>\\])"
)
#: The rest of the value whose first byte ``_PAIR_TAIL`` matched (kept apart so
#: that hints inside one long value do not each read it to its end again).
_VALUE_RUN = lazy(rb"[^\s&\"',;<>\\]*")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
#: The rest of a name from a hint on, in lower-cased bytes (at most 40 of ``_NAME_BYTES``).
_NAME_RUN = re.compile(rb"[a-z0-9_.\-]{0,40}")
# The members whose values the analyzer needs exactly: never touched by a value detector.
_PROTECTED_BEFORE = lazy(
    rb'"(?:id|progressToken|cursor|nextCursor|requestId|method|jsonrpc)"[ \t\r\n]*:[ \t\r\n]*$'
)
# Single bytes searched as ints: ``bytes.__contains__`` with an int is one
# memchr, with a one-byte ``bytes`` CPython's general search (6 times slower).
_QUOTE, _EQUALS, _COLON = 0x22, 0x3D, 0x3A
#: How deep JSON inside JSON strings is followed (each level doubles the escapes).
_MAX_DEPTH = 4


def redact_frame(raw: bytes) -> tuple[bytes, int]:
    """Redact secrets in one frame, stderr line or body; return the bytes and the count.

    ``raw`` may be JSON, JSON with JSON inside its strings, or plain text.
    """
    # Almost every frame holds no hint: one caseless pass over the frame says
    # so (False), where the scanner would need its lower-cased copy. Where a
    # hint may occur (True), or Hyperscan cannot tell (None), the scanner runs.
    if type(raw) is bytes and _ANY_HINT(raw) is False:
        return raw, 0
    low = raw.lower()
    hits = _SCANNER.scan(low)
    if hits is None:
        return raw, 0
    return _redact(raw, 0, low, hits)


def holds_no_hint(data: bytes) -> bool:
    """True when no hint occurs in ``data``: ``redact_frame`` leaves every part of it as it is.

    A hint is a literal (in any ASCII case), so a part of ``data`` holds none
    either: the recording lane asks once for a read's lines, not once a line.
    False also where Hyperscan cannot tell.
    """
    return type(data) is bytes and _ANY_HINT(data) is False


# What every step needs where it replaces anything, in the lower-cased bytes:
# ``_members`` a name hint in a member name (a quote at most 64 bytes after
# it, then ``[ \t\r\n]*:``); ``_nested`` a string literal holding both an
# escaped quote and a hint (in either order: the literal's bytes between them
# are unescaped bytes or escape pairs); ``_values`` a value hint;
# ``_text_pairs`` a name or query hint whose name run (at most 40 bytes)
# meets ``[ \t]*[=:]``. Each alternative matches more than its step acts on,
# never less. Latin-1, so that every byte is a character: ``[^"]`` takes any
# byte but the quote, as the steps' ``find`` does (in UTF-8 a stray byte would
# match nothing). tests/core/test_redact.py has a frame for each alternative.
_MAY_REDACT_OPTIONS = re2.Options()
_MAY_REDACT_OPTIONS.encoding = re2.Options.Encoding.LATIN1
_MAY_REDACT_OPTIONS.never_capture = True
_MAY_REDACT_OPTIONS.dot_nl = True


def _alternation(literals: Iterable[bytes]) -> bytes:
    return b"(?:" + b"|".join(re2.escape(literal) for literal in literals) + b")"


_MAY_REDACT_PATTERN = b"|".join(
    (
        _alternation(_NAME_HINTS) + rb'[^"]{0,64}"[ \t\r\n]*:',
        rb'\\"(?:[^"\\]|\\.)*' + _alternation(_SCANNER.hints),
        _alternation(_SCANNER.hints) + rb'(?:[^"\\]|\\.)*\\"',
        _alternation(VALUE_HINTS),
        _alternation(_NAME_HINTS + _QUERY_HINTS) + rb"[a-z0-9_.\-]{0,40}[ \t]*[=:]",
    )
)
# A set of one pattern, asked only whether it matches somewhere: RE2's
# many-match DFA, one pass, where ``RE2.Match`` also works out the span (about
# 2K instructions fewer a 90-byte log message, benchmarks/README.md). A set
# has no fallback: where its DFA fails, ``Match`` answers "none". It fails
# only when one state does not fit in its emptied cache (a many-match search
# never gives up on slow input, as the single-pattern one may before it falls
# back to the NFA), and RE2 builds no DFA without room for twenty states;
# a DFA it could not build fails on every input, which the known match below
# catches at import.
_MAY_REDACT_SET = _re2.Set(_re2.RE2.Anchor.UNANCHORED, _MAY_REDACT_OPTIONS)
if (
    _MAY_REDACT_SET.Add(_MAY_REDACT_PATTERN) != 0
    or not _MAY_REDACT_SET.Compile()
    or _MAY_REDACT_SET.Match(b'{"token": "x"}') != [0]
):
    raise RuntimeError("re2 could not build the redaction pre-test")
_MAY_REDACT = _MAY_REDACT_SET.Match


def may_redact(raw: bytes) -> bool:
    """False when ``redact_frame(raw)`` certainly replaces nothing; True when it may.

    One search for what each step needs (``_MAY_REDACT``) in place of the
    hint scan and the steps: for a caller that wants the count only, on data
    that holds hints in prose ("token", "decode") far more often than secrets.
    """
    # The set's one pattern matched: its index, 0, is in the list.
    return bool(_MAY_REDACT(raw.lower()))


def redact_text(text: str) -> tuple[str, int]:
    """``redact_frame`` for a ``str`` (a stderr line, an argument, an error message)."""
    data = text.encode("utf-8", "surrogatepass")
    out, count = redact_frame(data)
    return (out.decode("utf-8", "surrogatepass"), count) if count else (text, 0)


def _redact(
    data: bytes, depth: int, low: bytes | None = None, hits: Hits | None = None
) -> tuple[bytes, int]:
    """Every step over ``data`` in turn (``low``, ``hits``: its lower case and hints, if known)."""
    count = 0
    if low is None:
        low = data.lower()
        hits = _SCANNER.scan(low)
    if hits is not None and _only_progress_tokens(low, hits):
        return data, 0
    for step, needs in _STEPS:
        if hits is None:
            break  # no hint left: no step can find anything
        # A step acts only at occurrences of its own hints: skip it without them.
        if hits.present().isdisjoint(needs):
            continue
        if step is _nested and (depth >= _MAX_DEPTH or b'\\"' not in data):
            continue
        new, n = step(data, low, hits, depth)
        if new is not data:
            data, low = new, new.lower()
            hits = _SCANNER.scan(low)
        count += n
    return data, count


_QUOTED_PROGRESS_TOKEN = b'"progresstoken"'


def _only_progress_tokens(low: bytes, hits: Hits) -> bool:
    """Whether the only hints are the ``token`` of ``"progressToken"`` member names.

    The commonest hint by far (every request with progress, every progress
    notification: MCP basic/utilities/progress), and a protocol name that is
    never a secret in any context (``is_secret_name``): no step could act on
    it, so the frame is passed over without running them.
    """
    quoted = _QUOTED_PROGRESS_TOKEN
    found = hits.kept()
    if found is not None:
        # A frame of one window: its occurrences are a list already (no set of
        # the hints present, no generators: this runs on every such frame).
        token = _TOKEN_NUMBER
        for hint, start, _ in found:
            if hint != token or start < 9 or not low.startswith(quoted, start - 9):
                return False
        return True
    if hits.present() != _TOKEN_ID:
        return False
    return all(start >= 9 and low.startswith(quoted, start - 9) for _, start in hits.starts())


def _splice(data: bytes, cuts: list[tuple[int, int, bytes]]) -> bytes:
    """``data`` with each (start, end) range replaced; ranges ascending, disjoint."""
    parts: list[bytes] = []
    last = 0
    for start, end, new in cuts:
        parts.append(data[last:start])
        parts.append(new)
        last = end
    parts.append(data[last:])
    return b"".join(parts)


# --------------------------------------------------------------------------- JSON members


def _members(data: bytes, low: bytes, hits: Hits, depth: int) -> tuple[bytes, int]:
    """Values of secret-named JSON members (strings, numbers, arrays) become the mark."""
    if _QUOTE not in data:
        return data, 0
    cuts: list[tuple[int, int, bytes]] = []
    floor = 0
    closes: dict[int, int | None] = {}  # array ends found so far (see _array_end)
    for hint in hits.positions(_NAME_IDS):
        if hint < floor:
            continue  # inside a name or value already handled
        opening = data.rfind(b'"', max(0, hint - 64), hint)
        closing = data.find(b'"', hint, hint + 64)
        if opening < 0 or closing < 0 or data.find(b"\\", opening, closing) >= 0:
            continue
        colon = _COLON_AT.match(data, closing + 1)
        if colon is None:
            continue  # a string value, not a member name
        floor = colon.end()
        name = data[opening + 1 : closing].decode("utf-8", "replace")
        if not is_secret_name(name, "json"):
            continue
        start = colon.end()
        end = _value_end(data, start, closes)
        if end is None or data[start:end] in (_QUOTED_MARK, b'""'):
            continue
        cuts.append((start, end, _QUOTED_MARK))
        floor = end
    return (_splice(data, cuts), len(cuts)) if cuts else (data, 0)


def _value_end(data: bytes, start: int, closes: dict[int, int | None]) -> int | None:
    """Where the JSON value at ``start`` ends, for the kinds a secret can have."""
    first = data[start : start + 1]
    if first == b'"':
        match = _STRING_AT.match(data, start)
    elif first == b"-" or first.isdigit():
        match = _NUMBER_AT.match(data, start)
    elif first == b"[":
        return _array_end(data, start, closes)
    else:
        return None  # objects are walked member by member; true/false/null hold no secret
    return match.end() if match else None


#: What an array walk stops at: a string's quote, an opening or a closing bracket.
_ARRAY_TOKEN = lazy(rb'["\[\]{}]')


def _array_end(data: bytes, start: int, closes: dict[int, int | None]) -> int | None:
    """The end of the JSON array at ``start`` (strings inside it skipped whole).

    Brackets and braces count alike, and a string that does not end makes the
    array end nowhere. ``closes`` remembers, for every opening bracket a walk
    has passed (in the same data), where it closes or None: a walk reaching
    one of those jumps over it, and a hostile frame of many unterminated
    arrays (``{"api_key":[`` repeated) is walked once, not once per array.
    """
    known = closes.get(start, False)
    if known is not False:
        return known
    search = _ARRAY_TOKEN.search
    openers: list[int] = []
    token = search(data, start)
    while token is not None:
        at = token.start()
        byte = data[at]
        if byte == 0x22:  # '"'
            string = _STRING_AT.match(data, at)
            if string is None:
                break
            token = search(data, string.end())
            continue
        if byte in (0x5B, 0x7B):  # '[' '{'
            end = closes.get(at, False) if openers else False
            if end is None:
                break  # it never closes, so neither does anything around it
            if end is not False:
                token = search(data, end)  # the same walk was made from there
                continue
            openers.append(at)
        else:  # ']' '}'
            closes[openers.pop()] = at + 1
            if not openers:
                return at + 1
        token = search(data, at + 1)
    for opener in openers:
        closes[opener] = None
    return None


def _nested(data: bytes, low: bytes, hits: Hits, depth: int) -> tuple[bytes, int]:
    """JSON strings that carry JSON (or text) with secrets: decoded, redacted, re-encoded."""
    cuts: list[tuple[int, int, bytes]] = []
    count = 0
    for match in json_strings(data):
        literal = match.group()
        if b'\\"' not in literal or not _SCANNER.any(literal.lower()):
            continue
        try:
            inner = json.loads(literal)
        except ValueError:
            continue
        if not isinstance(inner, str):
            continue
        encoded = inner.encode("utf-8", "surrogatepass")
        # Prose that quotes a word and names a hint ("encode", "token") is far
        # commoner than a secret inside a string: the one-pass pre-test says
        # "nothing to replace" before the hint scan and the steps run (it
        # answers for every step on these bytes, so for depth + 1 as well).
        if not may_redact(encoded):
            continue
        redacted, n = _redact(encoded, depth + 1)
        if n:
            text = redacted.decode("utf-8", "surrogatepass")
            cuts.append((match.start(), match.end(), _encode_string(text)))
            count += n
    return (_splice(data, cuts), count) if cuts else (data, 0)


def json_strings(data: bytes) -> Iterator[re.Match[bytes]]:
    """The JSON string literals in ``data``, left to right: ``_STRING_AT.finditer``, linearly.

    ``finditer`` retries the pattern after every quote, and a hostile frame of
    unterminated strings (``{\\"key\\":`` repeated: every quote escaped) makes
    each try read to the end: quadratic. One failed try is enough: a string
    opened at quote ``q`` that never closes means every later quote is the
    second byte of an escape pair in the scan from ``q`` (else it would have
    closed the string), so a string opened there scans the same bytes in the
    same pairs to the same end and fails too. Each byte is read at most twice.
    """
    find = data.find
    match_at = _STRING_AT.match
    at = find(b'"')
    while at >= 0:
        match = match_at(data, at)
        if match is None:
            return
        yield match
        at = find(b'"', match.end())


def _encode_string(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- values


def _values(data: bytes, low: bytes, hits: Hits, depth: int) -> tuple[bytes, int]:
    """Credentials recognised by their format, whatever they are called."""
    count = 0
    for detector, ids in _DETECTOR_IDS:
        if hits.present().isdisjoint(ids):
            continue
        cuts: list[tuple[int, int, bytes]] = []
        for match in anchored_matches(detector, data, hits.positions(ids)):
            start, end = match.span(detector.group)
            if data.startswith(_MARK_BYTES, start) or _protected(data, start):
                continue
            cuts.append((start, end, _MARK_BYTES))
        if cuts:
            data = _splice(data, cuts)
            count += len(cuts)
            rescanned = _SCANNER.scan(data.lower())
            if rescanned is None:
                break
            hits = rescanned
    return data, count


#: Tries of a detector's pattern per frame before anchored_matches searches instead.
_PROBE_BUDGET = 4096


def anchored_matches(
    detector: Detector, data: bytes, hint_starts: Iterable[int]
) -> Iterator[re.Match[bytes]]:
    """What ``detector.pattern.finditer(data)`` yields, trying the pattern only near hints.

    Every match has one of the detector's hints at most ``hint_offset`` bytes
    after its start (and only ``lead`` bytes before it), so the leftmost match
    from any position is among those candidates; they are tried in ascending
    order, each at most once, and the search resumes at the end of a match
    exactly as ``finditer`` does. ``hint_starts`` ascend (``Hits.positions``).
    """
    match_at = detector.pattern.match
    back = detector.hint_offset
    lead = detector.lead
    resume = 0  # no match may start before here (the end of the last one)
    untried = 0  # candidates before here were tried and failed
    # Hints everywhere (a hostile "eyJeyJeyJ..."): past this many tries one
    # search over the rest is cheaper, and finds the same from where we are.
    budget = _PROBE_BUDGET + len(data) // 64
    for hint in hint_starts:
        budget -= 1
        if budget < 0:
            yield from detector.pattern.finditer(data, max(resume, untried))
            return
        start = max(resume, untried, hint - back)
        if lead is not None and start < hint:
            # A match's bytes before its hint are all ``lead`` bytes: none
            # can start before the run of them that ends at the hint.
            run = lead.search(data, start, hint)
            start = hint + 1 if run is None else run.start()
        while start <= hint:
            match = match_at(data, start)
            if match is not None:
                yield match
                resume = match.end()
                break
            start += 1
        untried = start


def _protected(data: bytes, start: int) -> bool:
    """Whether ``start`` lies in the string value of a protocol member (an id, a cursor)."""
    opening = data.rfind(b'"', max(0, start - 4096), start)
    if opening < 0:
        return False
    return _PROTECTED_BEFORE.search(data, max(0, opening - 40), opening) is not None


# --------------------------------------------------------------------------- plain text


def _text_pairs(data: bytes, low: bytes, hits: Hits, depth: int) -> tuple[bytes, int]:
    """``password=...``, ``api_key: ...``, ``?key=...`` in text: the value becomes the mark."""
    if _EQUALS not in data and _COLON not in data:
        return data, 0
    cuts: list[tuple[int, int, bytes]] = []
    floor = 0
    name_run = _NAME_RUN.match
    run_start = run_end = 0  # the last value run measured
    for hint in hits.positions(_PAIR_IDS):
        if hint < floor:
            continue
        end = name_run(low, hint).end()
        floor = end
        tail = _PAIR_TAIL.match(low, end)
        if tail is None:
            continue  # most hints (inside words, base64, JSON names): no pair
        start = hint
        while start > 0 and hint - start < 40 and low[start - 1] in _NAME_BYTES:
            start -= 1
        value_start = tail.start(3)
        if not run_start <= value_start < run_end:
            # A value run ends at the same byte wherever in it one starts.
            run_start, run_end = value_start, _VALUE_RUN.match(low, value_start).end()
        value_end = run_end
        if low.startswith(_MARK_LOW, value_start):
            continue
        before = low[start - 1 : start] if start else b""
        context: Context = "query" if before in (b"?", b"&") else "text"
        name = data[start:end].decode("utf-8", "replace").strip("-_.")
        if not is_secret_name(name, context):
            continue
        cuts.append((value_start, value_end, _MARK_BYTES))
        floor = value_end
    return (_splice(data, cuts), len(cuts)) if cuts else (data, 0)


#: The steps in order, each with the hints it acts on.
_STEPS = (
    (_members, _NAME_IDS),
    (_nested, frozenset(range(len(_SCANNER.hints)))),
    (_values, _VALUE_IDS),
    (_text_pairs, _PAIR_IDS),
)


# --------------------------------------------------------------------------- URLs, headers, argv


def redact_url(url: str) -> tuple[str, int]:
    """A URL or request target with its userinfo password and secret query values replaced.

    ``http://user:pass@host/p?key=K&x=1`` → ``http://user:[REDACTED]@host/p?key=[REDACTED]&x=1``;
    everything else is kept exactly as it was written.
    """
    count = 0
    base, sep, query = url.partition("?")
    if "@" in base:
        redacted, n = redact_text(base)
        base, count = redacted, count + n
    if sep:
        parts = query.split("&")
        for i, part in enumerate(parts):
            name, eq, value = part.partition("=")
            if not (eq and value) or value == MARK:
                continue
            if is_secret_name(unquote_plus(name), "query"):
                parts[i] = f"{name}={MARK}"
                count += 1
            else:
                new, n = redact_text(value)
                if n:
                    parts[i] = f"{name}={new}"
                    count += n
        query = "&".join(parts)
    return (f"{base}{sep}{query}", count) if count else (url, 0)


def redact_query(target: str) -> str:
    """``redact_url`` without the count (the relays' call sites)."""
    return redact_url(target)[0]


#: Headers the analyzer and the sessions need as they are.
_PROTOCOL_HEADERS = frozenset({"mcp-session-id", "mcp-protocol-version", "last-event-id"})


def redact_header_pairs(headers: Iterable[Sequence[str]]) -> tuple[list[list[str]], int]:
    """Header pairs as a trace stores them, and how many values were replaced.

    A header named like a credential (``Authorization``, ``Cookie``,
    ``X-Amz-Security-Token``, ``X-Auth``) loses its value; any other header's
    value is scanned for credentials (a Bearer token in
    ``X-Forwarded-Authorization``, a key in a ``Link`` URL). Request and
    response headers alike.
    """
    out: list[list[str]] = []
    count = 0
    for name, value in headers:
        if name.lower() in _PROTOCOL_HEADERS:
            out.append([name, value])
        elif is_secret_name(name, "header"):
            out.append([name, MARK])
            count += value != MARK
        else:
            new, n = redact_text(value)
            out.append([name, new])
            count += n
    return out, count


def redact_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Header pairs with credential values replaced (for HTTP transport events)."""
    pairs, _ = redact_header_pairs(headers)
    return [(name, value) for name, value in pairs]


def redact_argv(argv: Sequence[str]) -> tuple[list[str], int]:
    """A command line with its credentials replaced, and how many.

    ``--api-key X``, ``--token=X``, ``-p=X`` style flags named like secrets,
    ``API_KEY=X`` environment assignments, and any argument holding a credential
    by its value (``postgres://u:pw@host/db``, ``sk-...``).
    """
    out = [str(arg) for arg in argv]
    count = 0
    i = 0
    while i < len(out):
        arg = out[i]
        flag = arg.lstrip("-")
        if arg.startswith("-") and "=" not in arg and flag and is_secret_name(flag, "arg"):
            if i + 1 < len(out) and not out[i + 1].startswith("-") and out[i + 1] != MARK:
                out[i + 1] = MARK
                count += 1
                i += 2
                continue
        elif arg.startswith("-") and "=" in arg:
            name, _, value = flag.partition("=")
            if value and value != MARK and is_secret_name(name, "arg"):
                out[i] = arg[: len(arg) - len(value)] + MARK
                count += 1
                i += 1
                continue
        new, n = redact_text(arg)
        out[i] = new
        count += n
        i += 1
    return out, count


# --------------------------------------------------------------------------- JSON values


def redact_json_value(value: Any, name: str = "") -> tuple[Any, int]:
    """A parsed JSON value (an event's data, a header's meta) with its secrets replaced.

    Members named like secrets lose scalar and array values; strings are
    scanned as text; the structure is kept.
    """
    if isinstance(value, dict):
        count = 0
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new, n = redact_json_value(item, str(key))
            out[key] = new
            count += n
        return out, count
    if name and _secret_member(name) and not isinstance(value, bool) and value is not None:
        if isinstance(value, str | int | float | list) and value not in (MARK, ""):
            return MARK, 1
    if isinstance(value, list):
        count = 0
        items = []
        for item in value:
            new, n = redact_json_value(item)
            items.append(new)
            count += n
        return items, count
    if isinstance(value, str):
        return redact_text(value)
    return value, 0


def _secret_member(name: str) -> bool:
    return "".join(words(name)) not in PROTOCOL_NAMES and is_secret_name(name, "json")


def recorded_argv(argv: Sequence[str], redact: bool) -> list[str]:
    """A spawned server's command line as a trace stores it (``redact_argv`` unless --no-redact)."""
    return redact_argv(argv)[0] if redact else list(argv)


def holds_mark(value: Any) -> bool:
    """Whether a parsed JSON value holds a redaction mark anywhere."""
    return any_leaf(value, lambda item: isinstance(item, str) and MARK in item)


def redaction_explains(frame: Any, value: Any) -> bool:
    """Whether ``value``, from ``frame``, may differ from what was sent because it was redacted.

    Rules that judge values (a tool's arguments against its inputSchema) ask
    this before reporting: the frame's ``meta.redacted`` count says redaction
    happened, and a mark inside ``value`` says it happened here, so a number
    recorded as ``"[REDACTED]"`` is not read as a type error.
    """
    meta = getattr(frame, "meta", None)
    return bool(meta and meta.get("redacted")) and holds_mark(value)


def redactor(enabled: bool) -> Callable[[bytes], tuple[bytes, int]] | None:
    """The frame redactor to hand the analyzer: ``redact_frame``, or none with --no-redact."""
    return redact_frame if enabled else None
