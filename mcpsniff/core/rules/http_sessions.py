"""Streamable HTTP sessions and scope errors, judged on the server's response headers.

2025-03-26 to 2025-11-25 ``basic/transports.mdx`` § Session Management:

* HTTP-SESSION-ASSIGN (1): a server "**MAY** assign a session ID at
  initialization time, by including it in an ``MCP-Session-Id`` header on the
  HTTP response containing the ``InitializeResult``". A response to anything
  else that hands out a different id than the request carried assigns a
  session elsewhere (info: the header's meaning is the server's).
* HTTP-SESSION-SECURE (1): "The session ID **SHOULD** be globally unique and
  cryptographically secure (e.g., a securely generated UUID, a JWT, or a
  cryptographic hash)". An id shorter than 16 characters, or of digits only,
  cannot be: a guessable id lets another client take the session over (info:
  the length is the evidence, not a proof).
* HTTP-SESSION-MISSING-400 (2): "Servers that require a session ID **SHOULD**
  respond to requests without an ``MCP-Session-Id`` header (other than
  initialization) with HTTP 400 Bad Request". Judged on a server that assigned
  sessions and refused a POST without one with another client error (a 404
  says "this session ended", which a request naming no session cannot be;
  401, 403, 405, 406, 413, 415 and 429 have causes of their own).

2025-11-25 and 2026-07-28 ``basic/authorization.mdx`` § Runtime Insufficient
Scope Errors:

* AUTH-INSUFFICIENT-SCOPE: a request "with an access token with insufficient
  scope" gets "HTTP 403 Forbidden" and "``WWW-Authenticate`` header with the
  ``Bearer`` scheme and" ``error="insufficient_scope"``. Judged on a 403 to a
  request that carried an Authorization header and no Origin (a local server
  answers a foreign Origin with 403 too: HTTP-ORIGIN's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.http import STREAMABLE
from mcpsniff.core.rules.registry import EVENT, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.core.session import Session

RULES = (
    "HTTP-SESSION-ASSIGN",
    "HTTP-SESSION-SECURE",
    "HTTP-SESSION-MISSING-400",
    "AUTH-INSUFFICIENT-SCOPE",
)
#: Fewer characters than a UUID's 122 random bits need in any usual encoding.
SHORTEST_SECURE_ID = 16
#: Client errors whose cause is not the missing session id.
OTHER_CAUSES = frozenset({400, 401, 403, 405, 406, 413, 415, 429})


@rule(*RULES, on=EVENT, keys=("http-response",))
def session_headers(session: Session, record: EventRecord) -> None:
    """The session id a response hands out, and a 403's challenge (after rules/http.py)."""
    number = record.data.get("exchange")
    http = session.state.http
    exchange = http.exchanges.get(number) if http is not None and type(number) is int else None
    if exchange is None or exchange.status is None or exchange.transport != STREAMABLE:
        return
    status = exchange.status
    headers = exchange.response_headers
    seq = [exchange.seq, record.seq]
    if status == 403 and "authorization" in exchange.headers and "origin" not in exchange.headers:
        challenge = headers.get("www-authenticate", "")
        if "insufficient_scope" not in challenge.lower():
            session.report(
                "AUTH-INSUFFICIENT-SCOPE",
                "the server answered 403 to a request with an access token "
                + ("without a WWW-Authenticate header" if not challenge else "with a challenge")
                + ' that names no error="insufficient_scope"; the client cannot learn which '
                "scopes to ask for",
                seq,
            )
    if session.state.era == STATELESS:
        return
    initialize = any(m.method == "initialize" for m in exchange.methods)
    sid = headers.get("mcp-session-id")
    request_sid = exchange.headers.get("mcp-session-id")
    if sid is not None and 200 <= status < 300:
        if initialize and _guessable(sid):
            session.report(
                "HTTP-SESSION-SECURE",
                f"the server assigned session id {sid[:40]!r}: "
                + ("digits only" if sid.isdigit() else f"{len(sid)} characters")
                + "; a session id should be a cryptographically secure value (a UUID, a JWT, a "
                "hash) that no other client can guess",
                seq,
                severity="info",
            )
        elif not initialize and request_sid != sid:
            session.report(
                "HTTP-SESSION-ASSIGN",
                f"the server handed out session id {sid[:40]!r} on its answer to "
                f"{exchange.method} {exchange.path[:60]}"
                + (f", which carried {request_sid[:40]!r}" if request_sid else "")
                + "; a session is assigned on the response carrying the InitializeResult",
                seq,
                severity="info",
            )
    if (
        request_sid is None
        and exchange.method == "POST"
        and not initialize
        and 400 <= status < 500
        and status not in OTHER_CAUSES
        and session.shared.get("assigned")
    ):
        session.report(
            "HTTP-SESSION-MISSING-400",
            f"the server refused a POST without Mcp-Session-Id with {status}; a server that "
            "requires sessions answers a request lacking the header with 400 Bad Request",
            seq,
            status=status,
        )


def _guessable(sid: str) -> bool:
    return len(sid) < SHORTEST_SECURE_ID or sid.isdigit()
