"""HTTP-ORIGIN and SSE-ORIGIN: a server must validate the ``Origin`` header.

transports.mdx § Security Warning: "Servers MUST validate the Origin header on
all incoming connections to prevent DNS rebinding attacks"; from 2025-11-25:
"If the Origin header is present and invalid, servers MUST respond with HTTP
403 Forbidden".

Passively, which origins a server allows cannot be known, so this is a
heuristic (reported as a warning): a local server (its ``Host`` is a loopback
name or address) that accepts, with a 2xx, a request whose ``Origin`` is a web
page elsewhere (or the opaque ``null`` origin) did not validate it. A page on
another local port (the MCP Inspector on localhost:6274 talking to a server on
localhost:3001) is a common, legitimate setup and is not reported; neither is a
request without ``Origin`` (non-browser clients send none).
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcpsniff.core.rules import http
from mcpsniff.core.rules.registry import EVENT, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.core.session import Session

RULES = ("HTTP-ORIGIN", "SSE-ORIGIN")

#: Origins already reported per session (one finding per foreign origin).
_STATE_KEY = "http-origin"
_MAX_REPORTED = 256


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a name or an address, without port) is this machine."""
    if not host:
        return False
    host = host.strip().lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_of_header(value: str) -> str | None:
    """The host of a ``Host`` header value (``127.0.0.1:3001``, ``[::1]:80``)."""
    try:
        return urlsplit("//" + value.strip()).hostname
    except ValueError:
        return None


def foreign_origin(origin: str) -> bool:
    """Whether ``origin`` is a page that is not on this machine (or is opaque)."""
    text = origin.strip()
    if text.lower() == "null":
        return True
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        return True
    if parts.scheme not in ("http", "https") or host is None:
        return True  # file://, chrome-extension://, garbage: not a local web page
    return not is_loopback(host)


@rule("HTTP-ORIGIN", "SSE-ORIGIN", on=EVENT, keys=("http-response",))
def origin_accepted(session: Session, record: EventRecord) -> None:
    """A local server accepted a request from a foreign ``Origin``."""
    state = session.state.http
    number = record.data.get("exchange")
    if state is None or not isinstance(number, int):
        return
    exchange = state.exchanges.get(number)
    if exchange is None or exchange.status is None or not 200 <= exchange.status < 300:
        return
    origin = exchange.headers.get("origin")
    host = exchange.headers.get("host")
    if origin is None or host is None or not is_loopback(host_of_header(host)):
        return
    if not foreign_origin(origin):
        return
    reported = session.state.rule_state.setdefault(_STATE_KEY, set())
    if origin in reported or len(reported) >= _MAX_REPORTED:
        return
    reported.add(origin)
    legacy = exchange.transport == http.LEGACY
    session.report(
        "SSE-ORIGIN" if legacy else "HTTP-ORIGIN",
        f"the local server ({host[:100]}) answered {exchange.status} to {exchange.method} "
        f"{exchange.path[:200]} from Origin {origin[:200]!r}, a page elsewhere; servers must "
        "validate Origin (DNS rebinding), and from 2025-11-25 answer an invalid one with "
        "403 Forbidden",
        [exchange.seq, record.seq],
        severity="warning",
        origin=origin[:200],
        host=host[:100],
        status=exchange.status,
    )
