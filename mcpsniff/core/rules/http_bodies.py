"""What may travel in which HTTP body or stream (Streamable HTTP).

* HTTP-POST-BODY / MOD-HTTP-POST-BODY: what a client may POST. 2025-03-26: one
  message or a batch of one kind; 2025-06-18 and 2025-11-25: one request,
  notification or response; 2026-07-28: one request or notification, never a
  response (transports.mdx § Sending Messages to the Server 3).
* HTTP-JSON-BODY: an ``application/json`` reply is "one JSON object", the
  response to the POSTed request (§ Sending Messages to the Server 5).
* HTTP-GET-NO-RESPONSES: "The server MUST NOT send a JSON-RPC response on the
  stream unless resuming a stream associated with a previous client request"
  (§ Listening for Messages from the Server 4).

A batch where batches no longer exist is MSG-BATCH-REMOVED's finding; the
transport rule that a POST carries one message is reported as its dependent
(``data.caused_by``), so the reader sees one cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.model import BATCH, C2S, CALLS, ERROR, REPLIES, REQUEST
from mcpsniff.core.protocol import STATELESS, V2, V3, V4, V5
from mcpsniff.core.rules import http
from mcpsniff.core.rules.registry import FRAME, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.core.session import Session

RULES = ("HTTP-POST-BODY", "MOD-HTTP-POST-BODY", "HTTP-JSON-BODY", "HTTP-GET-NO-RESPONSES")


@rule("HTTP-POST-BODY", "MOD-HTTP-POST-BODY", on=FRAME, keys=("parsed",))
def post_body(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """The body a client POSTed: one message of a kind the version allows there."""
    if frame.direction != C2S or not messages:
        return
    exchange = http.streamable_exchange(session, frame, "POST")
    if exchange is None:
        return
    top = messages[0]
    is_batch = top.kind == BATCH and top.index is None
    exchange.batch = is_batch
    elements = [m for m in messages if m.kind != BATCH]
    version = session.state.version
    seq = [frame.seq]
    if session.state.era == STATELESS or version == V5:
        replies = [m for m in elements if m.kind in REPLIES]
        if is_batch:
            session.report(
                "MOD-HTTP-POST-BODY",
                "the client POSTed a JSON array; in 2026-07-28 a POST body is a single request "
                "or notification",
                seq,
                caused_by={"rule": "MSG-BATCH-REMOVED", "seq": frame.seq},
            )
        elif replies:
            session.report(
                "MOD-HTTP-POST-BODY",
                "the client POSTed a JSON-RPC "
                + ("error" if replies[0].kind == ERROR else "response")
                + "; in 2026-07-28 a POST body is a single request or notification, never a "
                "response (servers send no requests to answer)",
                seq,
                kind=replies[0].kind,
            )
        return
    if not is_batch:
        return
    if version in (V3, V4):
        session.report(
            "HTTP-POST-BODY",
            f"the client POSTed a JSON array; in {version} every POST body is a single "
            "request, notification or response",
            seq,
            caused_by={"rule": "MSG-BATCH-REMOVED", "seq": frame.seq},
        )
    elif version == V2:
        kinds = {m.kind for m in elements}
        if kinds & CALLS and kinds & REPLIES:
            session.report(
                "HTTP-POST-BODY",
                "the client POSTed a batch mixing requests or notifications with responses; "
                "a 2025-03-26 POST carries one message, a batch of requests and "
                "notifications, or a batch of responses",
                seq,
                caused_by={"rule": "MSG-BATCH-V2-SHAPE", "seq": frame.seq},
            )


@rule("HTTP-JSON-BODY", "HTTP-GET-NO-RESPONSES", on=FRAME, keys=("parsed",))
def server_body(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """What the server sent in a JSON reply body or on a GET stream."""
    if frame.direction == C2S or not messages:
        return
    exchange = http.streamable_exchange(session, frame)
    if exchange is None:
        return
    if exchange.method == "GET":
        _get_stream(session, frame, exchange, messages)
    elif exchange.method == "POST" and frame.transport != "sse":
        _json_body(session, frame, exchange, messages)


def _get_stream(
    session: Session,
    frame: FrameRecord,
    exchange: http.ExchangeFacts,
    messages: list[MessageRecord],
) -> None:
    if "last-event-id" in exchange.headers:
        return  # resuming a stream that belonged to a request: its responses may come here
    version = session.state.version
    for message in messages:
        if message.kind not in REPLIES:
            continue
        request = message.request
        if (
            version == V4
            and request is not None
            and (
                request.method.startswith("tasks/")
                or (request.params is not None and "task" in request.params)
            )
        ):
            # tasks.mdx: clients "SHOULD expect messages to be delivered on any SSE
            # stream, including the HTTP GET stream" (catalogue trap 9).
            continue
        answered = f" to {request.method} (seq {request.seq})" if request is not None else ""
        session.report(
            "HTTP-GET-NO-RESPONSES",
            f"the server sent a JSON-RPC response{answered} on the GET stream; responses go on "
            "the stream of the POST that carried the request (the GET stream carries only "
            "server requests and notifications)",
            [exchange.seq, frame.seq],
            **({"request_seq": request.seq} if request is not None else {}),
        )
        return  # one per frame


def _json_body(
    session: Session,
    frame: FrameRecord,
    exchange: http.ExchangeFacts,
    messages: list[MessageRecord],
) -> None:
    status = exchange.status
    content_type = exchange.response_headers.get("content-type", "")
    if (
        status is None
        or not 200 <= status < 300
        or content_type.split(";")[0].strip().lower() != "application/json"
        or REQUEST not in exchange.kinds
    ):
        return
    seq = [exchange.seq, frame.seq]
    top = messages[0]
    version = session.state.version
    if top.kind == BATCH and top.index is None and not (exchange.batch and version == V2):
        # Where batches are gone, the array is MSG-BATCH-REMOVED's finding first.
        root = {"caused_by": {"rule": "MSG-BATCH-REMOVED", "seq": frame.seq}}
        session.report(
            "HTTP-JSON-BODY",
            "the server answered a POST with an application/json array; the body must be one "
            "JSON object, the response to the POSTed request",
            seq,
            cause="array",
            **(root if version in (V3, V4, V5) else {}),
        )
        return
    elements = [m for m in messages if m.kind != BATCH]
    others = [m for m in elements if m.kind not in REPLIES]
    if others:
        session.report(
            "HTTP-JSON-BODY",
            f"the server's application/json reply carries a {others[0].kind}"
            + (f" ({others[0].method})" if others[0].method else "")
            + "; a JSON reply is only the response to the POSTed request (requests and "
            "notifications need a text/event-stream reply)",
            seq,
            cause="not-a-response",
        )
        return
    posted = {m.frame for m in exchange.methods if m.kind == REQUEST}
    for message in elements:
        request = message.request
        if request is not None and request.seq not in posted:
            session.report(
                "HTTP-JSON-BODY",
                f"the server's application/json reply answers {request.method} (seq "
                f"{request.seq}), a request of another POST; it must be the response to the "
                "request this POST carried",
                seq,
                cause="other-request",
                request_seq=request.seq,
            )
            return
