"""Field values the framing depends on: list-based fields and connection persistence."""

from __future__ import annotations


def field_tokens(headers: list[tuple[str, str]], name: str) -> list[str]:
    """The lower-cased comma-separated tokens of every ``name`` field (a list-based field)."""
    # RFC 9110 §5.6.1: list elements are separated by OWS "," OWS, and OWS is
    # SP or HTAB only (str.strip() would also trim \v or a no-break space, and
    # "chunked\v" would pass for "chunked").
    return [
        token.strip(" \t").lower()
        for key, value in headers
        if key.lower() == name
        for token in value.split(",")
        if token.strip(" \t")
    ]


def wants_close(
    version: str, headers: list[tuple[str, str]], names: list[str] | None = None
) -> bool:
    """Whether the connection ends after this message (RFC 9112 §9.3).

    "close" in Connection ends it; without it HTTP/1.1 persists, and HTTP/1.0
    persists only with "keep-alive". ``names``: the lower-cased names, if known.
    """
    if names is not None and "connection" not in names:
        return version == "HTTP/1.0"
    tokens = field_tokens(headers, "connection")
    if "close" in tokens:
        return True
    return version == "HTTP/1.0" and "keep-alive" not in tokens
