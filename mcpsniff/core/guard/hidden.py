"""Text aimed at the model rather than the user: the hidden-instruction scanner.

A tool description, a parameter's description, a prompt, a resource and the
text of a tool result all reach the model's context verbatim, while a client
shows the user at most a short summary. The MCP specification says so itself
(server/tools.mdx § Security Considerations: "Clients SHOULD ... consider tool
annotations to be untrusted unless they come from trusted servers"; the
2025-06-18 security best practices name "tool poisoning"). This module finds
the usual ways a text hides something from the person while the model reads
it: characters a screen does not show (Unicode tag characters, zero-width and
bidirectional controls), markup a renderer hides (HTML comments, hidden
elements), instruction patterns addressed to the model, requests to read secret
files, encoded blobs, and URLs that carry data out.

Each ``Hit`` quotes the offending span with every invisible character escaped,
says why, and has a strength: ``strong`` hits are reported as warnings,
``weak`` ones (a long base64 run, a URL with a long value: common in honest
text too) as info. Calibrated on the descriptions of the reference servers and
server-everything (tests/core/guard/corpus/): none gives a strong hit.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import re2
from ahocorasick_rs import BytesAhoCorasick, Implementation, MatchKind
from re2 import _re2

from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.literal_search import LiteralSearch

#: At most this many characters of one text are scanned (a hostile text may be huge).
MAX_TEXT = 256 * 1024
#: At most this many hits per text (the first ones say enough).
MAX_HITS = 8
#: The longest quote a hit carries, in characters before escaping.
QUOTE_CHARS = 120


@dataclass(frozen=True, slots=True)
class Hit:
    """One span of a text that hides something from the user."""

    #: What kind of hiding: ``tag-characters``, ``bidi-control``, ``zero-width``,
    #: ``variation-selectors``, ``html-comment``, ``hidden-markup``, ``instruction``,
    #: ``secret-file``, ``encoded-blob``, ``data-url``.
    kind: str
    #: ``strong`` (reported as a warning) or ``weak`` (info).
    strength: str
    #: Character offset of the span in the text.
    start: int
    #: The span, escaped: invisible and control characters as ``\\u{...}``.
    quote: str
    #: Why this span is suspicious, one sentence.
    why: str


def escape_span(text: str) -> str:
    """``text`` cut to ``QUOTE_CHARS`` characters, every non-printing character escaped."""
    cut = text[:QUOTE_CHARS]
    out = []
    for char in cut:
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif code < 0x20 or 0x7F <= code <= 0x9F or (code > 0x7F and _invisible(char)):
            out.append(f"\\u{{{code:x}}}")
        else:
            out.append(char)
    return "".join(out) + ("…" if len(text) > QUOTE_CHARS else "")


def _invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Cf", "Cc", "Co", "Cn", "Zl", "Zp", "Mn") or char in _SPACES_ODD


_SPACES_ODD = frozenset("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a")

# Unicode tag characters (U+E0000..U+E007F) mirror ASCII and render as nothing:
# a whole instruction can ride in them (the "ASCII smuggling" attack).
_TAGS = lazy("[\U000e0000-\U000e007f]+")
# Embeddings, overrides and isolates (Unicode Bidirectional Algorithm, UAX #9):
# they reorder what the screen shows against what the model reads.
_BIDI = lazy("[\u202a-\u202e\u2066-\u2069]+")
# Zero-width characters; a joiner between two emoji or inside Indic or Arabic
# words is honest, so those are judged by their neighbours (``_zero_width``).
_ZERO_WIDTH = lazy("[\u200b\u200c\u200d\u2060\u2061-\u2064\ufeff\u180e\u00ad]+")
# Variation selectors 17..256 select nothing in any font: a run of them is a
# byte channel ("emoji smuggling"); a run of two or more of 1..16 too.
_SELECTORS = lazy("[\U000e0100-\U000e01ef]+|[\ufe00-\ufe0f]{2,}")
_COMMENT = lazy(r"<!--.*?(?:-->|$)", re.DOTALL)
_HIDDEN_MARKUP = lazy(
    r"<[a-z][a-z0-9]*\b[^>]*(?:\bhidden\b|display\s*:\s*none|visibility\s*:\s*hidden|"
    r"font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9]))[^>]*>",
    re.IGNORECASE,
)

# Instruction patterns: phrases addressed to the model that an honest
# description has no reason to contain. Each is (group, pattern, why).
#: The pre-test word group each pattern of ``_INSTRUCTIONS`` needs, in order
#: (``tag``: a "<", which runs every pattern).
_GROUPS = (
    "drop",
    "tag",
    "tokens",
    "hide",
    "hide",
    "hide",
    "before",
    "role",
    "instead",
    "send",
    "param",
    "when",
    "server",
)
_INSTRUCTIONS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (group, lazy(pattern, re.IGNORECASE), why)
    for group, (pattern, why) in zip(
        _GROUPS,
        (
            (
                r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+)?"
                r"(?:previous|prior|above|earlier|preceding|other|system)\s+"
                r"(?:instructions?|prompts?|rules|directions|guidelines|messages?)",
                "tells the model to drop its instructions",
            ),
            (
                r"</?\s*(?:important|system|instructions?|admin|secret|hidden|critical)\s*>",
                "a pseudo-tag that addresses the model with authority",
            ),
            (r"<\|im_(?:start|end)\|>|\[/?INST\]|<<SYS>>", "a chat-template control token"),
            (
                r"\b(?:do\s+not|don't|never|must\s+not)\s+(?:tell|inform|mention|reveal|notify|"
                r"show|alert|let)\s+(?:this\s+to\s+|it\s+to\s+|anything\s+to\s+)?(?:the\s+)?user",
                "asks the model to keep something from the user",
            ),
            (
                r"\bwithout\s+(?:telling|informing|notifying|asking|alerting)\s+(?:the\s+)?user",
                "asks the model to act behind the user's back",
            ),
            (
                r"\b(?:the\s+)?user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|be\s+told|notice)",
                "asks the model to keep something from the user",
            ),
            (
                r"\bbefore\s+(?:using|calling|invoking|running)\s+(?:this|any)\s+tool,?\s+"
                r"(?:you\s+)?(?:must|should|first|always|need\s+to)\b",
                "a precondition that makes the model do something else first",
            ),
            (
                r"\b(?:you\s+are\s+now|new\s+instructions?\s*:|from\s+now\s+on,?\s+you|"
                r"system\s+prompt\s*:|act\s+as\s+(?:an?\s+)?(?:admin|root|developer\s+mode))",
                "tries to change the model's role or instructions",
            ),
            (
                r"\b(?:instead\s+of|rather\s+than)\s+(?:using|calling|invoking)\s+"
                r"(?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+tool",
                "redirects the model away from another tool",
            ),
            (
                r"\b(?:send|forward|post|upload|email|leak|exfiltrate|transmit)\s+(?:all\s+|the\s+|"
                r"its\s+|their\s+|your\s+)?(?:contents?|conversation|chat\s+history|credentials|"
                r"secrets?|keys?|tokens?|passwords?|api[\s_-]?keys?)\b",
                "asks the model to send data somewhere",
            ),
            (
                r"\b(?:pass|put|include|add|insert)\s+(?:its|the|their|that|this)\s+"
                r"(?:full\s+|entire\s+)?(?:contents?|text|output)\s+(?:as|in|into)\s+"
                r"(?:the\s+)?[`'\"]?\w+[`'\"]?\s+(?:parameter|argument|field)",
                "asks the model to smuggle data through a parameter",
            ),
            (
                r"\b(?:when|whenever|if)\s+(?:the\s+user|anyone)\s+(?:asks?|calls?|uses?)\b[^.]{0,80}"
                r"\b(?:always|instead|must)\b",
                "a standing order for the model",
            ),
            (
                r"\b(?:also\s+)?(?:call|invoke|use|run)\s+(?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+tool\s+"
                r"(?:of|from|on)\s+(?:the\s+)?(?:other|another)\s+server",
                "tells the model to call another server's tool",
            ),
        ),
        strict=True,
    )
)
# Files an honest description never asks the model to read (keys, credentials,
# the MCP client's own configuration).
_SECRET_FILES = lazy(
    r"(?:~|\$HOME|%USERPROFILE%|/home/\w+|/Users/\w+)?/?\.ssh/[\w.-]*|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|"
    r"\.aws/credentials|\.config/gcloud|\.kube/config|\.docker/config\.json|\.netrc\b|\.npmrc\b|"
    r"\.pypirc\b|\.git-credentials|/etc/(?:passwd|shadow)\b|(?:^|[\s'\"`(/])\.env\b(?!\w)|"
    r"\b(?:claude_desktop_config|mcp)\.json\b|\.cursor/|\.gnupg/|\bwallet\.dat\b",
    re.IGNORECASE,
)
_SECRET_READ = lazy(
    r"\b(?:read|open|cat|load|fetch|get|include|send|upload|access|attach|copy)\b", re.IGNORECASE
)
_BASE64_RUN = lazy(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{60,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RUN = lazy(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{128,}(?![0-9A-Fa-f])")
_URL = lazy(r"https?://[^\s\"'`)\]]+", re.IGNORECASE)
# A placeholder in a URL asks the model to fill it with something it knows.
_PLACEHOLDER = lazy(
    r"\{\{?[^{}/]{1,60}\}?\}|<[^<>/]{1,60}>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Z_]{3,}%|"
    r"\[(?:insert|put|add|paste)\b",
    re.IGNORECASE,
)
_URL_VALUE = lazy(r"[?&#][^=&#]{1,40}=([^&#]{40,})")


def scan(text: str, *, result: bool = False) -> list[Hit]:
    """The hits in ``text``, at most ``MAX_HITS``, in order of offset.

    ``result``: ``text`` is a tool result, which may carry honest data: there a
    base64 run is strong only when it decodes to instructions.
    """
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT]
    if result and _clean(text):
        return []
    markup = "<" in text
    ascii_only = text.isascii()
    # The pre-test: one pass of an Aho-Corasick automaton over the lower-cased
    # text for the words every pattern below needs, and the longest word for
    # the blobs. Most texts (and every clean tool result) stop here: the
    # regular expressions cost about 100 times more per KiB.
    if ascii_only:
        # As bytes: the same matches (one byte per character, and an ASCII
        # text lowers alike as str and as bytes), found in half the time of the
        # str automaton, which converts every offset back to a character's.
        found = _ASCII_KEYWORDS.find_matches_as_indexes(text.encode("ascii").lower())
        groups = {_KEYWORD_GROUPS[index][1] for index, _, _ in found}
        invisible = False
    else:
        lowers_to_ascii = "\u0130" in text or "\u212a" in text
        if lowers_to_ascii:
            # The two characters whose lower case is ASCII (U+0130 -> "i\u0307",
            # U+212A -> "k"): lowered first, as str.lower() does.
            lowered = text.lower().encode("utf-8", "surrogatepass")
        else:
            # As UTF-8, lowering costs a fraction of str.lower(): the words are
            # ASCII and every other character lowers to non-ASCII. A lone
            # surrogate (a JSON escape the exact parser keeps) passes as any
            # other character.
            lowered = text.encode("utf-8", "surrogatepass").lower()
        # The same pass finds the characters ``_invisible_hits`` looks for, in
        # place of its four scans (together 40 times slower on a 1 KiB text).
        found = _BYTES_KEYWORDS.find_matches_as_indexes(lowered)
        groups = {_BYTES_KEYWORD_GROUPS[index] for index, _, _ in found}
        invisible = lowers_to_ascii or _HIDING in groups
        groups.discard(_HIDING)
    if markup:
        groups.update(_GROUPS)
    # In a tool result a long run is usually honest data (a digest, an
    # encoded file): blobs are looked for in definitions only.
    blobs = not result and max(map(len, text.split()), default=0) >= _BLOB_LENGTH
    if not (invisible or groups or blobs):
        return []
    hits: list[Hit] = []
    if invisible:
        _invisible_hits(text, hits)
    if markup:
        _markup_hits(text, hits)
    if groups:
        _instruction_hits(text, hits, groups)
    if "url" in groups:
        _url_hits(text, hits)
    if blobs:
        _blob_hits(text, hits, result)
    hits.sort(key=lambda hit: hit.start)
    return hits[:MAX_HITS]


#: The shortest base64 or hex run reported (a word at least this long is a candidate).
_BLOB_LENGTH = 60
#: Lower-case words, each with the pattern group that needs it: a pattern runs
#: only when one of its words is in the text (or a "<", for every pattern).
_WORDS: dict[str, tuple[str, ...]] = {
    "drop": ("ignore", "disregard", "forget", "override"),
    "tokens": ("[inst", "[/inst", "<<sys"),
    "role": ("you are", "new instruction", "from now", "system prompt", "act as"),
    "hide": ("never", "don't", "do not", "must not", "without", "user must", "user should"),
    "before": ("before",),
    "when": ("whenever", "when the user", "if the user", "when anyone", "if anyone"),
    "instead": ("instead", "rather"),
    "server": ("other server", "another server"),
    "send": ("send", "forward", "post", "upload", "email", "leak", "exfiltrat", "transmit"),
    "param": ("parameter", "argument", "field"),
    "secret": (
        ".ssh", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", ".aws", "gcloud", ".kube",
        ".docker", ".netrc", ".npmrc", ".pypirc", ".git-credentials", "/etc/passwd",
        "/etc/shadow", ".env", "mcp.json", "claude_desktop_config", ".cursor/", ".gnupg",
        "wallet.dat",
    ),
    "url": ("http://", "https://"),
}  # fmt: skip
_KEYWORD_GROUPS: tuple[tuple[str, str], ...] = tuple(
    (word, group) for group, words in _WORDS.items() for word in words
)
#: The words, for an ASCII text (encoded: its offsets are its characters').
_ASCII_KEYWORDS = BytesAhoCorasick(
    [word.encode() for word, _ in _KEYWORD_GROUPS], matchkind=MatchKind.LeftmostFirst
)
#: Every character ``_invisible_hits`` looks for (the classes of ``_TAGS``,
#: ``_BIDI``, ``_ZERO_WIDTH`` and ``_SELECTORS``, whose ``{2,}`` needs one).
_HIDING_CHARACTERS = (
    "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
    + "".join(map(chr, range(0x202A, 0x202F)))
    + "".join(map(chr, range(0x2066, 0x206A)))
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0000, 0xE0080)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
#: The group of those characters in ``_BYTES_KEYWORDS``.
_HIDING = "hiding"
#: The words and the hiding characters in UTF-8: a hiding character starts
#: with a non-ASCII byte and a word has none, so neither hides a match of the
#: other from the leftmost-first search.
_BYTES_KEYWORD_GROUPS: tuple[str, ...] = (
    *(group for _, group in _KEYWORD_GROUPS),
    *(_HIDING for _ in _HIDING_CHARACTERS),
)
_BYTES_KEYWORDS = BytesAhoCorasick(
    [word.encode() for word, _ in _KEYWORD_GROUPS] + [char.encode() for char in _HIDING_CHARACTERS],
    matchkind=MatchKind.LeftmostFirst,
    # The hiding characters take the default's prefilter away; a DFA is then
    # the fastest (callgrind, a 1 KiB text: 23K instructions, 50K without).
    implementation=Implementation.DFA,
)


# The first pre-test, for tool results (most are clean, and every one is
# scanned): one RE2 search over the text's UTF-8 for anything the scan below
# starts from: a word of ``_WORDS`` in any case, a hiding character, a "<",
# or a character whose lower case is ASCII (U+0130, U+212A). RE2 folds case
# itself (no lowered copy) and its case folding matches whatever str.lower()
# would turn into a word, and more ("\u017f" for "s": such a text only goes
# on to the scan). A lone surrogate (a JSON escape the exact parser keeps)
# is bytes that match nothing. A text it passes would have given no hit:
# tests/core/guard/test_hidden.py compares both on random and adversarial texts.
_ANYTHING_OPTIONS = re2.Options()
_ANYTHING_OPTIONS.never_capture = True
_ANYTHING_PATTERN = (
    "(?i:"
    + "|".join(re2.escape(word) for word, _ in _KEYWORD_GROUPS)
    + ")|["
    + "".join(f"\\x{{{ord(char):x}}}" for char in _HIDING_CHARACTERS + "\u0130\u212a<")
    + "]"
)
# The binding's own object: the wrapper's search() costs a generator and a
# match object per call (4K instructions, as much as 250 bytes of search).
_ANYTHING = _re2.RE2(_ANYTHING_PATTERN.encode(), _ANYTHING_OPTIONS).Match
# The same over a JSON text's bytes (``clean_json``), which also stops at the
# two escapes that can make a character the search looks for: ``\\u`` (any
# character) and ``\\/`` (a "/"). In the same pass: a separate test of the
# bytes for them costs as much as the search.
_ANYTHING_JSON = _re2.RE2((_ANYTHING_PATTERN + "|\\\\[u/]").encode(), _ANYTHING_OPTIONS).Match
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_NO_SPAN = (-1, -1)


# The same search as literals for Hyperscan (Intel's regular expression
# matcher, as Vectorscan; BSD-3, static wheels): ~110 literals in one pass at
# about 5 instructions a byte where a DFA (RE2's, the aho-corasick crate's)
# takes 17: GUARD-HIDDEN-RESULT runs it over every tool result's bytes. Its
# case-insensitive mode folds ASCII only, which is what the scan's own
# pre-test does (``bytes.lower()``; U+0130 and U+212A, the only characters
# that lower to ASCII, stop it themselves). A hiding character is its UTF-8's
# first three bytes: the whole character for those of the BMP, for the tag
# characters and selectors (U+E0000..U+E01EF) their block (more, never less).
_LITERALS: tuple[tuple[bytes, bool], ...] = (
    *((word.encode(), True) for word, _ in _KEYWORD_GROUPS),
    *dict.fromkeys((char.encode()[:3], False) for char in _HIDING_CHARACTERS + "\u0130\u212a<"),
    (b"\\u", False),
    (b"\\/", False),
)


#: ``_LITERALS``' search (core/literal_search.py: compiled by the first search,
#: which loads Hyperscan's library, ~9 ms a command that judges no tool result
#: need not pay; a scratch space per thread, since a search releases the
#: interpreter lock and Hyperscan's "in use" flag is no lock).
_LITERAL_SEARCH = LiteralSearch(_LITERALS)


def _found(data: bytes, search: Any) -> bool:
    """True when ``data`` holds a literal of ``_LITERALS`` (Hyperscan) or a match of ``search``.

    ``search`` is the RE2 equivalent, for where Hyperscan cannot run (no
    wheel for the platform, a CPU without the instructions it needs) and for
    any error of a search.
    """
    found = _LITERAL_SEARCH.found(data)
    if found is not None:
        return found
    return search(_UNANCHORED, data, 0, len(data))[0] != _NO_SPAN


def _clean(text: str) -> bool:
    """True when no pattern of ``scan`` but the blobs' can match ``text``; else False."""
    return not _found(text.encode("utf-8", "surrogatepass"), _ANYTHING)


def clean_json(raw: bytes) -> bool:
    """True when no string of the JSON text ``raw`` can give ``scan(..., result=True)`` a hit.

    ``_clean``'s search over the bytes the strings came from, without decoding
    or encoding any: an unescaped character of a JSON string is its own UTF-8
    in the text (RFC 8259 §7, §8.1), so every run of such characters that the
    search would find in a string is in ``raw`` too. Of the escapes only
    ``\\uXXXX`` (any character) and ``\\/`` ("/", in a word of ``_WORDS``) make
    a character the search looks for; the others make a quote, a backslash or
    a control character, which no word holds. So ``raw`` with neither escape,
    where the search finds nothing, holds no string ``_clean`` would stop.
    False means "ask ``scan`` of each string", never "a hit".
    """
    # ``_found``, inlined: every tool result's frame asks.
    found = _LITERAL_SEARCH.found(raw)
    if found is None:
        found = _ANYTHING_JSON(_UNANCHORED, raw, 0, len(raw))[0] != _NO_SPAN
    return not found


def _invisible_hits(text: str, hits: list[Hit]) -> None:
    for match in _TAGS.finditer(text):
        hidden = "".join(chr(ord(c) - 0xE0000) for c in match.group() if ord(c) < 0xE0080)
        hits.append(
            Hit(
                "tag-characters",
                "strong",
                match.start(),
                escape_span(match.group()),
                f"Unicode tag characters render as nothing but spell {escape_span(hidden)!r}",
            )
        )
    for match in _BIDI.finditer(text):
        hits.append(
            Hit(
                "bidi-control",
                "strong",
                match.start(),
                escape_span(text[match.start() : match.end() + 40]),
                "bidirectional controls make the screen show other text than the model reads",
            )
        )
    for match in _ZERO_WIDTH.finditer(text):
        if _honest_joiner(text, match):
            continue
        hits.append(
            Hit(
                "zero-width",
                "strong",
                match.start(),
                escape_span(text[max(0, match.start() - 20) : match.end() + 20]),
                f"{len(match.group())} zero-width character(s) the user cannot see",
            )
        )
    for match in _SELECTORS.finditer(text):
        hits.append(
            Hit(
                "variation-selectors",
                "strong",
                match.start(),
                escape_span(match.group()),
                f"{len(match.group())} variation selector(s) that select nothing: a hidden "
                "byte channel",
            )
        )


def _honest_joiner(text: str, match: re.Match[str]) -> bool:
    """A single ZWJ or ZWNJ between two pictographs or two letters of a joining script."""
    run = match.group()
    if len(run) != 1 or run not in "\u200c\u200d" or match.start() == 0 or match.end() >= len(text):
        return run == "\ufeff" and match.start() == 0  # a byte order mark at the start
    before, after = text[match.start() - 1], text[match.end()]
    if run == "\u200d" and (_pictograph(before) or unicodedata.category(before) == "Mn"):
        return _pictograph(after)
    return (
        not before.isascii()
        and not after.isascii()
        and unicodedata.category(before)[0] in "LM"
        and unicodedata.category(after)[0] in "LM"
    )


def _pictograph(char: str) -> bool:
    return unicodedata.category(char) == "So" or 0x1F000 <= ord(char) <= 0x1FAFF


def _markup_hits(text: str, hits: list[Hit]) -> None:
    for match in _COMMENT.finditer(text):
        hits.append(
            Hit(
                "html-comment",
                "strong",
                match.start(),
                escape_span(match.group()),
                "an HTML comment: a rendered description hides it, the model reads it",
            )
        )
    for match in _HIDDEN_MARKUP.finditer(text):
        hits.append(
            Hit(
                "hidden-markup",
                "strong",
                match.start(),
                escape_span(text[match.start() : match.end() + 60]),
                "markup that a renderer hides while the model reads its text",
            )
        )


def _instruction_hits(text: str, hits: list[Hit], groups: set[str]) -> None:
    for group, pattern, why in _INSTRUCTIONS:
        if group not in groups:
            continue
        match = pattern.search(text)
        if match is not None:
            hits.append(
                Hit("instruction", "strong", match.start(), escape_span(match.group()), why)
            )
    if "secret" not in groups:
        return
    for match in _SECRET_FILES.finditer(text):
        window = text[max(0, match.start() - 80) : match.start()]
        if _SECRET_READ.search(window) is None:
            continue
        hits.append(
            Hit(
                "secret-file",
                "strong",
                match.start(),
                escape_span(text[max(0, match.start() - 30) : match.end() + 10]),
                "asks for a file that holds keys, credentials or the client's configuration",
            )
        )
        break


def _blob_hits(text: str, hits: list[Hit], result: bool) -> None:
    for match in _BASE64_RUN.finditer(text):
        run = match.group()
        if not (any(c.isdigit() for c in run) or "+" in run or "/" in run):
            continue  # a long identifier or a word run, not an encoding
        if not (any(c.isupper() for c in run) and any(c.islower() for c in run)):
            continue
        decoded = _decoded_text(run)
        if decoded is not None and _INSTRUCTION_IN_BLOB.search(decoded):
            hits.append(
                Hit(
                    "encoded-blob",
                    "strong",
                    match.start(),
                    escape_span(run),
                    f"base64 that decodes to instructions: {escape_span(decoded)!r}",
                )
            )
        elif decoded is not None:
            hits.append(
                Hit(
                    "encoded-blob",
                    "weak" if result else "strong",
                    match.start(),
                    escape_span(run),
                    f"base64 that decodes to hidden text: {escape_span(decoded)!r}",
                )
            )
        else:
            hits.append(
                Hit(
                    "encoded-blob",
                    "weak",
                    match.start(),
                    escape_span(run),
                    f"a {len(run)}-character encoded blob the user cannot read",
                )
            )
    for match in _HEX_RUN.finditer(text):
        hits.append(
            Hit(
                "encoded-blob",
                "weak",
                match.start(),
                escape_span(match.group()),
                f"a {len(match.group())}-digit hex blob the user cannot read",
            )
        )


_INSTRUCTION_IN_BLOB = lazy(
    r"ignore|instruction|do not|don't|user|secret|password|key|token|send|call|read|\.ssh",
    re.IGNORECASE,
)


def _decoded_text(run: str) -> str | None:
    """The run decoded as base64 (standard or URL-safe), when that gives readable text."""
    padded = run + "=" * (-len(run) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decode(padded.encode("ascii"))
        except (binascii.Error, ValueError):
            continue
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        printable = sum(1 for c in decoded if c.isprintable() or c in "\n\t")
        if decoded and printable / len(decoded) > 0.95 and " " in decoded:
            return decoded
    return None


def _url_hits(text: str, hits: list[Hit]) -> None:
    for match in _URL.finditer(text):
        url = match.group()
        query = url.find("?")
        # A template in the path ({owner}/{repo}) is how honest APIs are
        # documented; one in the query asks for a value to send out.
        placeholder = _PLACEHOLDER.search(url, query) if query >= 0 else None
        if placeholder is not None:
            hits.append(
                Hit(
                    "data-url",
                    "strong",
                    match.start(),
                    escape_span(url),
                    "a URL with a placeholder for the model to fill: data would leave in the URL",
                )
            )
            continue
        value = _URL_VALUE.search(url)
        if value is not None:
            hits.append(
                Hit(
                    "data-url",
                    "weak",
                    match.start(),
                    escape_span(url),
                    f"a URL carrying a {len(value.group(1))}-character value",
                )
            )
