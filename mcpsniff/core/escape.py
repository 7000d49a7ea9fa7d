"""Making a hostile string inert before it reaches a terminal or a log.

Every string that came from traffic or from a trace file (a method name, a tool
name, an error message, a stderr line, an HTTP path) may carry terminal control
sequences: ``ESC ] 0 ; ... BEL`` retitles the window, ``ESC ] 52 ; c ; ...`` writes
the clipboard, and the bidirectional overrides (Unicode TR9, "Trojan Source",
CVE-2021-42574) make text read differently from what it is. docs/architecture.md, invariant
6: "Escape it before it reaches a terminal (control, escape and bidi characters
shown, never interpreted)".

``terminal_safe`` shows each such code point visibly, the way Python's repr does
(``\\x1b``, ``\\x9b``, ``\\u202e``), and leaves every other character alone, so
ordinary text, JSON and non-Latin scripts read as they are. A backslash is left
alone too: JSON text is full of them, and doubling each would make a message
unreadable while protecting nothing, since only the code points below can act
on a terminal.
"""

from __future__ import annotations

import re

from mcpsniff.core.lazy_pattern import lazy

# C0 controls except none (tab and newline included: a traffic string must not
# start a new line of output, or it could forge one), DEL, C1 controls, the bidi
# embeddings and overrides U+202A..U+202E, the isolates U+2066..U+2069, and the
# implicit marks U+200E, U+200F and U+061C, which reorder text just as well.
# Lone surrogates (U+D800..U+DFFF) too: JSON's "\ud800" is valid (RFC 8259 §8.2
# allows unpaired escapes), but no terminal encoding can write one, so printing
# it raises UnicodeEncodeError; shown as an escape, it prints.
_UNSAFE = lazy("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every terminal-active or bidi code point shown as an escape."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_visible, text)


def terminal_safe_lines(text: str) -> list[str]:
    """``text`` split at its line breaks, each line made safe.

    For multi-line values a person should read as lines (a pretty-printed body,
    a stack trace in an error's data): the breaks become real line breaks of the
    output, and nothing else in them can act on the terminal.
    """
    return [terminal_safe(line) for line in text.split("\n")]
