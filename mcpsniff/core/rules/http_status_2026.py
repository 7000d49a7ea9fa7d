"""The HTTP status of a 2026-07-28 server's replies, and servers that accept what they must reject.

``basic/transports/streamable-http.mdx`` (2026-07-28) and ``basic/index.mdx``:

* -32020 HeaderMismatch: "servers **MUST** return HTTP status ``400 Bad
  Request``" (§ Server Validation), MOD-HTTP-STD-HEADERS.
* -32021 MissingRequiredClientCapability: "On HTTP, the response status
  **MUST** be ``400 Bad Request``" (basic/index.mdx § _meta), MOD-MISSING-CLIENT-CAP.
* -32022 UnsupportedProtocolVersion: "it **MUST** respond with ``400 Bad
  Request``" (§ Protocol Version Header), MOD-UNSUPPORTED-VERSION.
* A request missing a required ``_meta`` field: "the server **MUST** reject it
  with JSON-RPC error code ``-32602`` (Invalid params). On HTTP, the response
  status **MUST** be ``400 Bad Request``" (basic/index.mdx § _meta), MOD-META-REQUIRED.
* -32601: "If the server does not implement the requested RPC method, it
  **MUST** respond with ``404 Not Found`` and a JSON-RPC error with code
  ``-32601``", MOD-HTTP-404-METHOD. Not for ``server/discover``: a server that
  lacks it is a legacy server answering a dual-era client's probe
  (MOD-HTTP-FALLBACK: "Don't flag the probe"); every modern server implements it.
* GET and DELETE: "A server that supports only this revision and receives such
  traffic from an older client **SHOULD** respond [...] with ``405 Method Not
  Allowed``", MOD-HTTP-POST-ONLY, judged where the request names 2026-07-28 in
  its ``MCP-Protocol-Version`` header (a dual-era server serves the others).

The status of a reply to a notification (202) is HTTP-202 (rules/http.py).
A -32020 for headers that match the body once decoded is MOD-HTTP-BASE64:
"servers **MUST** decode an encoded ``Mcp-Name`` or ``Mcp-Param-{Name}`` value
before comparing it to the corresponding request body value".
And a server that answers a request whose headers failed validation
(rules/http_2026.py) with a result: "Servers **MUST** reject requests where the
values specified in the headers do not match the corresponding values in the
request body" with 400 and -32020.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.model import ERROR, RESPONSE, S2C
from mcpsniff.core.protocol import V5
from mcpsniff.core.rules import http, http_2026
from mcpsniff.core.rules.registry import EVENT, FRAME, rule
from mcpsniff.core.rules.stateless_era import lacks_meta

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Pending

RULES = (
    "MOD-HTTP-404-METHOD",
    "MOD-HTTP-STD-HEADERS",
    "MOD-MISSING-CLIENT-CAP",
    "MOD-UNSUPPORTED-VERSION",
    "MOD-META-REQUIRED",
    "MOD-HTTP-POST-ONLY",
)
#: Error code -> (the HTTP status it travels with, the rule, what the error is).
STATUS_OF_CODE: dict[int, tuple[int, str, str]] = {
    -32020: (400, "MOD-HTTP-STD-HEADERS", "HeaderMismatch"),
    -32021: (400, "MOD-MISSING-CLIENT-CAP", "MissingRequiredClientCapability"),
    -32022: (400, "MOD-UNSUPPORTED-VERSION", "UnsupportedProtocolVersion"),
    -32601: (404, "MOD-HTTP-404-METHOD", "Method not found"),
}


@rule(
    *RULES[:5],
    "MOD-HTTP-PROTO-HEADER",
    "MOD-HTTP-PARAM-HEADERS",
    "MOD-HTTP-BASE64",
    on=FRAME,
    keys=("parsed",),
)
def reply_status(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """The replies in a server's HTTP body (JSON or SSE) to the request its POST carried."""
    exchange = http_2026.stateless_post(session, frame, S2C, messages)
    if exchange is None:
        return
    status = exchange.status
    posted = {m.frame for m in exchange.methods}
    for message in messages:
        request = message.request
        if request is None or request.seq not in posted:
            continue
        if message.kind == ERROR:
            _error_status(session, exchange, message, request, status)
        elif message.kind == RESPONSE:
            _accepted(session, exchange, message, request)


def _error_status(
    session: Session,
    exchange: http.ExchangeFacts,
    message: MessageRecord,
    request: Pending,
    status: int | None,
) -> None:
    code = message.error_code
    decoded = http_2026.encoded(session).pop(request.seq, None)
    if code == -32020 and decoded:
        session.report(
            "MOD-HTTP-BASE64",
            f"the server refused {request.method[:60]} with -32020 (HeaderMismatch), but its "
            f"{', '.join(decoded[:4])} match the body once their =?base64?...?= form is decoded; "
            "servers must decode these values before comparing",
            [request.seq, message.frame],
            headers=decoded[:8],
            blame="server",
        )
    expected = STATUS_OF_CODE.get(code) if isinstance(code, int) else None
    if expected is None and code == -32602 and lacks_meta(request):
        expected = (400, "MOD-META-REQUIRED", "Invalid params for a request lacking _meta")
    if expected is None or status is None:
        return
    wanted, rule_id, name = expected
    if status == wanted or (code == -32601 and request.method == "server/discover"):
        return
    stream = exchange.response_headers.get("content-type", "").startswith("text/event-stream")
    session.report(
        rule_id,
        f"the server answered {request.method[:60]} with error {code} ({name}) under HTTP "
        f"{status}{' on an SSE stream' if stream else ''}; it must be HTTP {wanted}",
        [exchange.seq, message.frame],
        status=status,
        expected_status=wanted,
        code=code,
    )


def _accepted(
    session: Session, exchange: http.ExchangeFacts, message: MessageRecord, request: Pending
) -> None:
    """A result to a request whose headers failed validation: the server did not validate."""
    http_2026.encoded(session).pop(request.seq, None)
    found = http_2026.faults(session).pop(request.seq, None)
    if not found:
        return
    rules = dict.fromkeys(rule_id for rule_id, _ in found)
    for rule_id in rules:
        what = "; ".join(w for r, w in found if r == rule_id)
        session.report(
            rule_id,
            f"the server answered {request.method[:60]} with a result although the request's "
            f"headers failed validation ({what[:300]}); it must reject it with HTTP 400 and "
            "error -32020 (HeaderMismatch)",
            [request.seq, message.frame],
            blame="server",
        )


def _pinned_to_v5(session: Session) -> bool:
    """``check --as 2026-07-28``: every request is judged as that version's."""
    return session.state.pinned and session.state.version == V5


@rule("MOD-HTTP-POST-ONLY", on=EVENT, keys=("http-response",))
def get_or_delete(session: Session, record: EventRecord) -> None:
    """A GET or DELETE naming 2026-07-28 (or judged as it), answered with anything but 405."""
    number = record.data.get("exchange")
    state = session.state.http
    if state is None or not isinstance(number, int):
        return
    exchange = state.exchanges.get(number)
    if (
        exchange is None
        or exchange.method not in ("GET", "DELETE")
        or exchange.transport != http.STREAMABLE
        or (exchange.headers.get("mcp-protocol-version") != V5 and not _pinned_to_v5(session))
        or exchange.status is None
        or exchange.status == 405
    ):
        return
    session.report(
        "MOD-HTTP-POST-ONLY",
        f"the server answered a 2026-07-28 {exchange.method} with HTTP {exchange.status}; the "
        "MCP endpoint takes POST only, and GET and DELETE should get 405 Method Not Allowed",
        [exchange.seq, record.seq],
        status=exchange.status,
        severity="warning",
    )
