"""Answers after a cancellation, and 2026-07-28's two ways to cancel.

``basic/patterns/cancellation.mdx`` (2026-07-28) § Transport-Specific Cancellation:
"**Streamable HTTP**: Closing the SSE response stream is the cancellation
signal. [...] No ``notifications/cancelled`` message is required or expected.
**stdio**: There is no per-request stream to close. The client **MUST** send a
``notifications/cancelled`` notification referencing the request ID."

* MOD-CANCEL: a client that sends ``notifications/cancelled`` over Streamable
  HTTP in 2026-07-28. ``basic/transports/streamable-http.mdx`` says the
  notification "is used only on the stdio transport"; a server owes it nothing,
  so a client relying on it may never cancel. Info: the notification is not
  forbidden.
* STDIO-V5-CANCEL (2026-07-28 ``basic/transports/stdio.mdx`` § Cancellation):
  "Servers **SHOULD** stop work on a cancelled request as soon as practical
  and **MUST NOT** send any further messages for it".
* CANCEL-NO-RESPONSE (``basic/utilities/cancellation.mdx`` § Behavior
  Requirements, every version): receivers of a cancellation "**SHOULD** [...]
  Not send a response for the cancelled request". Info, everywhere but
  2026-07-28 stdio, where it is STDIO-V5-CANCEL's error.

A response that crossed the notification is the race every version allows
(§ Timing Considerations: "Both parties **MUST** handle these race conditions
gracefully"), so only a response sent more than ``GRACE_SECONDS`` after the
cancellation is judged. 2026-07-28 Streamable HTTP cancels by closing the
stream: there, no answer after a notification is judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import C2S, OPPOSITE, SENDER
from mcpsniff.core.protocol import V5
from mcpsniff.core.rules.http import streamable_exchange
from mcpsniff.core.rules.registry import NOTIFICATION, RESPONSE, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("MOD-CANCEL", "STDIO-V5-CANCEL", "CANCEL-NO-RESPONSE")
#: How long after a cancellation a response is still the race, not a violation.
GRACE_SECONDS = 2.0
#: Cancellations remembered per session.
CANCEL_WINDOW = 4096
_CANCELS = "cancel_times"


@rule(*RULES, on=NOTIFICATION, methods=("notifications/cancelled",))
def cancelled(session: Session, msg: Msg) -> None:
    """2026-07-28 HTTP: not the way to cancel; elsewhere: remember when, for a late answer."""
    frame = msg.source
    if frame is None:
        return
    over_http = streamable_exchange(session, frame) is not None
    if over_http and session.state.version == V5 and msg.direction == C2S:
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
    if not isinstance(request_id, int | str):
        return
    cancels = session.state.rule_state.get(_CANCELS)
    if cancels is None:
        cancels = session.state.rule_state[_CANCELS] = BoundedMap(CANCEL_WINDOW)
    cancels.put((msg.direction, repr(request_id)), (msg.sent_at, msg.frame))


@rule("STDIO-V5-CANCEL", "CANCEL-NO-RESPONSE", on=RESPONSE, methods=("",))
def answered_after_cancel(session: Session, msg: Msg) -> None:
    """A response well after its request was cancelled."""
    if msg.note != "late-after-cancel":
        return
    cancels = session.state.rule_state.get(_CANCELS)
    found = cancels.get((OPPOSITE[msg.direction], repr(msg.id))) if cancels is not None else None
    if found is None:
        return
    at, cancel_seq = found
    late = msg.sent_at - at
    stdio = msg.source is not None and msg.source.transport == "stdio"
    if late <= GRACE_SECONDS or (session.state.version == V5 and not stdio):
        return
    answerer, canceller = SENDER[msg.direction], SENDER[OPPOSITE[msg.direction]]
    if session.state.version == V5:
        session.report(
            "STDIO-V5-CANCEL",
            f"the server answered request {str(msg.id)[:40]} {late:.1f} s after the client "
            "cancelled it; after a cancellation the server sends nothing more for that request",
            [cancel_seq, msg.frame],
            late_s=round(late, 3),
        )
        return
    session.report(
        "CANCEL-NO-RESPONSE",
        f"the {answerer} answered request {str(msg.id)[:40]} {late:.1f} s after the {canceller} "
        "cancelled it; a cancelled request should get no response (the canceller ignores it)",
        [cancel_seq, msg.frame],
        severity="info",
        late_s=round(late, 3),
    )
