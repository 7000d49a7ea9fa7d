"""Header fields as the HTTP layer reads them: look-ups by name, and the end-to-end ones.

RFC 9110 §5.1: field names are case-insensitive, so every look-up goes by the
lower-cased name. Headers arrive as ``(name, value)`` text pairs, or as the
bytes pairs mitmproxy holds (``text_headers``).
"""

from __future__ import annotations

from typing import Any

# RFC 9110 §7.6.1 connection-specific headers: they describe one hop, not the message.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name``, given in lower case (RFC 9110 §5.1: any case)."""
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def lowered(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Header names in lower case to the first value of each (RFC 9110 §5.1: any case).

    Performance: built once per message, so that every later look-up is a dict
    access instead of a scan that lower-cases every name again.
    """
    return first_values(names_of(headers), headers)


def names_of(headers: list[tuple[str, str]]) -> list[str]:
    """The lower-cased names of ``headers``, in order."""
    return [key.lower() for key, _ in headers]


def first_values(names: list[str], headers: list[tuple[str, str]]) -> dict[str, str]:
    """``names`` (lower-cased, parallel to ``headers``) to the first value of each."""
    # Built from the end, so that the first of repeated names is the one left.
    return dict(zip(reversed(names), [value for _, value in reversed(headers)], strict=True))


def end_to_end_named(
    headers: list[tuple[str, str]], names: list[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """``end_to_end`` given the lower-cased names; also returns the names it kept."""
    drop = HOP_BY_HOP
    if "connection" in names:
        listed = {
            token.strip().lower()
            for name, (_, value) in zip(names, headers, strict=True)
            if name == "connection"
            for token in value.split(",")
        }
        drop = HOP_BY_HOP | listed
    if drop.isdisjoint(names):  # the usual case: nothing to drop
        return list(headers), names
    kept = [name not in drop for name in names]
    return (
        [pair for pair, keep in zip(headers, kept, strict=True) if keep],
        [name for name, keep in zip(names, kept, strict=True) if keep],
    )


def end_to_end(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers a proxy forwards: all but hop-by-hop ones.

    Those are HOP_BY_HOP plus every header a ``Connection`` header names
    (RFC 9110 §7.6.1): a sender may declare any header connection-specific.
    """
    return end_to_end_named(headers, names_of(headers))[0]


def text_headers(headers: Any) -> list[tuple[str, str]]:
    """Header pairs as text; bytes pairs decoded as mitmproxy's ``Headers`` decodes them."""
    if headers and isinstance(headers[0][0], bytes):
        return [
            (k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
            for k, v in headers
        ]
    return list(headers)  # type: ignore[arg-type]


def client_address(peer: Any) -> str | None:
    """A socket's peer as ``host:port`` (an IPv6 host in brackets, RFC 3986 §3.2.2).

    It names the client's connection in ``http-request`` events, and the
    stateless era pairs request ids per connection (``Session._scope``).
    """
    if not isinstance(peer, tuple) or len(peer) < 2:
        return None
    host = str(peer[0])
    return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
