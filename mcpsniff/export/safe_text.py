"""Text from traffic, made safe for the documents exports write.

An export is read by other programs (a CI server's XML parser, a browser, a
terminal that someone ``cat``s a report to). Traffic strings may hold anything
(docs/architecture.md, invariant 6), so every one goes through :func:`export_text` first.
"""

from __future__ import annotations

import re

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.redact import redact_text

# Code points XML 1.0 forbids outright (§2.2 Char) or that no encoder can write:
# lone surrogates from a peer's "\ud800" escapes, and the noncharacters U+FFFE/F.
_UNWRITABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")

#: The longest traffic string an export copies into one field.
MAX_FIELD = 4096


def _visible(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def export_text(text: object, limit: int = MAX_FIELD) -> str:
    """``text`` as a string that is valid XML 1.0 and JSON, shows no control codes, and is bounded.

    Control, escape and bidi characters are shown as escapes (``\\x1b``), like
    everywhere mcpsniff prints traffic; the cut is marked with its size.
    """
    value = text if isinstance(text, str) else str(text)
    if len(value) > limit:
        value = f"{value[:limit]}… ({len(value) - limit} more characters)"
    value = terminal_safe(value)
    if _UNWRITABLE.search(value) is not None:
        value = _UNWRITABLE.sub(_visible, value)
    return value


def shared_text(text: object, limit: int = MAX_FIELD) -> str:
    """``export_text`` of traffic text bound for a shared report, credentials replaced.

    A finding's message may quote the wire (a stdout line, an error body); a
    SARIF log is uploaded to code scanning and a JUnit report kept by CI, so
    what a --no-redact trace holds must not reach them in the clear.
    """
    value = text if isinstance(text, str) else str(text)
    return export_text(redact_text(value)[0], limit)
