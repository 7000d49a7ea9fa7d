"""MOD-HTTP-POST-ONLY: 2026-07-28 Streamable HTTP has no sessions.

streamable-http.mdx (2026-07-28) § Backward Compatibility > Earlier Streamable
HTTP Revisions: an incoming ``Mcp-Session-Id`` is ignored, never minted or
echoed. A server that answers a 2026-07-28 request (its ``_meta`` names the
protocol version) with an ``Mcp-Session-Id`` header makes a session the era
does not have; clients that honour it pin themselves to one server instance.

A dual-era server may mint a session for a 2025-era client's ``initialize``:
only responses to POSTs carrying a 2026-07-28 request count. A session judged
as 2026-07-28 by ``check --as`` (``SessionState.pinned``) counts every request:
its traffic names its recorded version, and the question is what would break.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.model import REQUEST, RESPONSE, S2C
from mcpsniff.core.protocol import META_VERSION, V5
from mcpsniff.core.rules import http
from mcpsniff.core.rules.registry import FRAME, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.core.session import Session

RULES = ("MOD-HTTP-POST-ONLY",)


def _modern(message: MessageRecord) -> bool:
    """Whether a request names 2026-07-28 in its ``_meta``."""
    params = message.params
    meta = params.get("_meta") if params is not None else None
    return message.kind == REQUEST and isinstance(meta, dict) and meta.get(META_VERSION) == V5


@rule("MOD-HTTP-POST-ONLY", on=FRAME, keys=("parsed",))
def session_minted(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """A result to a 2026-07-28 request, in a response with an Mcp-Session-Id header.

    Judged on the result, not on the status line: a 2025-era server answering
    a dual-era client's probe (its error, often an HTTP 400) is not a
    2026-07-28 server (MOD-HTTP-FALLBACK: "Don't flag the probe").
    """
    if frame.direction != S2C or not messages:
        return
    state = session.state.http
    number = (frame.meta or {}).get("exchange")
    if state is None or not isinstance(number, int):
        return
    exchange = state.exchanges.get(number)
    if (
        exchange is None
        or exchange.method != "POST"
        or exchange.transport != http.STREAMABLE
        or exchange.minted_reported
    ):
        return
    sid = exchange.response_headers.get("mcp-session-id")
    if sid is None:
        return
    pinned = session.state.pinned and session.state.version == V5
    modern = {m.frame for m in exchange.methods if _modern(m) or (pinned and m.kind == REQUEST)}
    if not any(
        m.kind == RESPONSE and m.request is not None and m.request.seq in modern for m in messages
    ):
        return
    exchange.minted_reported = True
    echoed = exchange.headers.get("mcp-session-id") == sid
    session.report(
        "MOD-HTTP-POST-ONLY",
        f"the server answered a 2026-07-28 request with Mcp-Session-Id {sid[:60]!r}"
        + (" (the client's own, echoed)" if echoed else "")
        + "; the stateless era has no sessions: the header is never minted or echoed",
        [exchange.seq, frame.seq],
        echoed=echoed,
    )
