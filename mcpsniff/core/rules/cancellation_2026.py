"""2026-07-28 cancellation: a notification on stdio, a closed stream on Streamable HTTP.

``basic/patterns/cancellation.mdx`` § Transport-Specific Cancellation:
"**Streamable HTTP**: Closing the SSE response stream is the cancellation
signal. [...] No ``notifications/cancelled`` message is required or expected.
**stdio**: There is no per-request stream to close. The client **MUST** send a
``notifications/cancelled`` notification referencing the request ID."

* MOD-CANCEL: a client that sends ``notifications/cancelled`` over Streamable
  HTTP. ``basic/transports/streamable-http.mdx`` says the notification "is used
  only on the stdio transport"; a server owes it nothing, so a client relying
  on it may never cancel. Info: the notification is not forbidden.
* STDIO-V5-CANCEL (``basic/transports/stdio.mdx`` § Cancellation): "Servers
  **SHOULD** stop work on a cancelled request as soon as practical and **MUST
  NOT** send any further messages for it". A response that crossed the
  notification is the race every version allows (cancellation.mdx § Timing
  Considerations), so only a response sent more than ``GRACE_SECONDS`` after
  the cancellation is judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.protocol import V5
from mcpsniff.core.rules.http import streamable_exchange
from mcpsniff.core.rules.registry import NOTIFICATION, RESPONSE, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("MOD-CANCEL", "STDIO-V5-CANCEL")
#: How long after a cancellation a response is still the race, not a violation.
GRACE_SECONDS = 2.0
#: Cancellations remembered per session.
CANCEL_WINDOW = 4096
_CANCELS = "stdio_cancels"


@rule(*RULES, on=NOTIFICATION, methods=("notifications/cancelled",))
def cancelled(session: Session, msg: Msg) -> None:
    """Over HTTP: not the way to cancel; on stdio: remember when, for the late answer."""
    if msg.direction != C2S or session.state.version != V5:
        return
    frame = msg.source
    if frame is not None and streamable_exchange(session, frame) is not None:
        session.report(
            "MOD-CANCEL",
            "the client sent notifications/cancelled over Streamable HTTP; in 2026-07-28 a "
            "client cancels a request by closing its response stream, and the server need not "
            "act on the notification",
            [msg.frame],
            severity="info",
        )
        return
    request_id = (msg.params or {}).get("requestId")
    if frame is None or frame.transport != "stdio" or not isinstance(request_id, int | str):
        return
    cancels = session.state.rule_state.get(_CANCELS)
    if cancels is None:
        cancels = session.state.rule_state[_CANCELS] = BoundedMap(CANCEL_WINDOW)
    cancels.put(repr(request_id), (msg.sent_at, msg.frame))


@rule("STDIO-V5-CANCEL", on=RESPONSE, methods=("",))
def answered_after_cancel(session: Session, msg: Msg) -> None:
    """A response well after the client cancelled its request on stdio."""
    if msg.note != "late-after-cancel" or msg.direction != S2C:
        return
    cancels = session.state.rule_state.get(_CANCELS)
    found = cancels.get(repr(msg.id)) if cancels is not None else None
    if found is None:
        return
    at, cancel_seq = found
    late = msg.sent_at - at
    if late <= GRACE_SECONDS:
        return
    session.report(
        "STDIO-V5-CANCEL",
        f"the server answered request {str(msg.id)[:40]} {late:.1f} s after the client cancelled "
        "it; after a cancellation the server sends nothing more for that request",
        [cancel_seq, msg.frame],
        late_s=round(late, 3),
    )
