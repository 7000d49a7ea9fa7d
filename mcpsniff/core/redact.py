"""Redaction of credentials in recorded frames (DESIGN.md invariant 5).

Only the *trace* is redacted; forwarded traffic is never touched. A frame is
redacted before the analyzer sees it, so that no finding can quote a secret
and ``mcpsniff check`` on the trace reproduces the live findings.

The value of every JSON member whose name says it holds a secret (``api_key``,
``password``, ``accessToken``, ``Authorization``, ...) becomes ``[REDACTED]``,
and so does any ``Bearer``/``Basic`` credential in a string. Protocol fields
that merely look similar, such as ``progressToken`` and ``nextCursor``, are
never redacted. Redaction rewrites the value in place in the raw bytes, so the
frame keeps its shape, its line terminator and its other bytes exactly.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote_plus

MARK = "[REDACTED]"
_MARK_BYTES = MARK.encode()

#: Member names (lower-cased, without "_" and "-") that hold secrets outright.
_SECRET_NAMES = frozenset(
    {
        "apikey",
        "xapikey",
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "authtoken",
        "bearertoken",
        "sessiontoken",
        "clientsecret",
        "privatekey",
        "authorization",
        "proxyauthorization",
        "cookie",
        "setcookie",
        "credential",
        "credentials",
        "passphrase",
    }
)
#: Name endings that mark a secret (``openai_api_key``, ``db_password``, ...).
_SECRET_SUFFIXES = (
    "apikey",
    "password",
    "secret",
    "accesstoken",
    "refreshtoken",
    "privatekey",
    # Header-style names: X-Auth-Token, Private-Token (GitLab), X-Api-Token.
    "authtoken",
    "privatetoken",
    "apitoken",
)
#: MCP protocol fields that are never secrets, whatever their names suggest.
_PROTOCOL_FIELDS = frozenset({"progresstoken", "nextcursor", "cursor", "requestid"})

# A quick filter: a frame without any of these substrings has nothing to redact.
# It runs on a lower-cased copy: a case-insensitive alternation is ten times
# slower in `re` (about 50 us per KiB), and this runs on every frame.
_HINT = re.compile(rb"key|pass|pwd|secret|token|auth|cookie|credential|bearer|basic ")
# A JSON member with a string value: "name" : "value" (escapes allowed in both).
_MEMBER = re.compile(rb'"((?:[^"\\]|\\.){1,64})"(\s*:\s*)"((?:[^"\\]|\\.)*)"')
# Credentials inside any string: Authorization-style schemes.
_SCHEME = re.compile(rb"(?i)\b(bearer|basic)( +)([A-Za-z0-9._~+/=-]{8,})")


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a JSON member or header called ``name`` holds a credential."""
    key = name.lower().replace("_", "").replace("-", "")
    if key in _PROTOCOL_FIELDS:
        return False
    return key in _SECRET_NAMES or key.endswith(_SECRET_SUFFIXES)


def redact_frame(raw: bytes) -> tuple[bytes, int]:
    """Redact secrets in one frame; return the new bytes and how many values changed."""
    if _HINT.search(raw.lower()) is None:
        return raw, 0
    count = 0

    def member(match: re.Match[bytes]) -> bytes:
        nonlocal count
        name = match.group(1).decode("utf-8", errors="replace")
        value = match.group(3)
        if not is_secret_name(name) or value == _MARK_BYTES:
            return match.group(0)
        count += 1
        return b'"' + match.group(1) + b'"' + match.group(2) + b'"' + _MARK_BYTES + b'"'

    def scheme(match: re.Match[bytes]) -> bytes:
        nonlocal count
        count += 1
        return match.group(1) + match.group(2) + _MARK_BYTES

    out = _MEMBER.sub(member, raw)
    out = _SCHEME.sub(scheme, out)
    return out, count


def redact_query(target: str) -> str:
    """A request target with the values of secret-named query parameters replaced.

    ``?api_key=...`` is how some servers take credentials; the rest of the
    target is kept exactly as it was sent.
    """
    base, sep, query = target.partition("?")
    if not sep:
        return target
    parts = query.split("&")
    changed = False
    for i, part in enumerate(parts):
        name, eq, value = part.partition("=")
        if eq and value and is_secret_name(unquote_plus(name)):
            parts[i] = f"{name}={MARK}"
            changed = True
    return f"{base}?{'&'.join(parts)}" if changed else target


def redact_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Header pairs with credential values replaced (for HTTP transport events)."""
    return [(name, MARK if is_secret_name(name) else value) for name, value in headers]
