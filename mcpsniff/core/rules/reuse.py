"""Request ids used twice: MSG-ID-REUSE (handshake era) and MSG-ID-INFLIGHT (stateless).

"The request ID MUST NOT have been previously used by the requestor within
the same session" (basic/index.mdx § Requests). The project's seed article
advises the opposite for retries: re-send a failed request with the same id
so the server can deduplicate it. A reader must be able to tell which one
they are looking at, so the finding says whether the reuse is an identical
retry (same method and params, byte for byte the same frame, as a library's
retry sends it) or a conflicting reuse (another request under an old id),
and, for a reuse of an answered id, that the server had already answered it
(so a deduplicating server answers the retry from its cache, and a naive one
runs the request twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import show_id
from mcpsniff.core.model import SENDER
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.registry import PAIRING, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Fingerprint, Msg, Pending

RULES = ("MSG-ID-REUSE", "MSG-ID-INFLIGHT")

IDENTICAL = "identical-retry"
CONFLICTING = "conflicting-reuse"
SAME_METHOD = "same-method"


def _kind(
    same_method: bool, previous_print: Fingerprint | None, this_print: Fingerprint | None
) -> str:
    if not same_method:
        return CONFLICTING
    if previous_print is None or this_print is None:
        return SAME_METHOD
    return IDENTICAL if previous_print == this_print else CONFLICTING


def _described(kind: str) -> str:
    if kind == IDENTICAL:
        return (
            "an identical retry (same method and params); retrying under the same id for "
            "server-side dedup is common advice, but MCP forbids reusing ids, so send the "
            "retry with a new id"
        )
    if kind == CONFLICTING:
        return "a different request under the same id, which answers cannot be told apart from"
    return "a request of the same method (its params could not be compared)"


@rule("MSG-ID-REUSE", "MSG-ID-INFLIGHT", on=PAIRING, keys=("reuse-in-flight",))
def in_flight(
    session: Session, msg: Msg, previous: Pending, this_print: Fingerprint | None
) -> None:
    """``msg`` reuses the id of ``previous``, which is still waiting for its answer."""
    kind = _kind(previous.method == msg.method, previous.fingerprint, this_print)
    rule = "MSG-ID-INFLIGHT" if session.state.era == STATELESS else "MSG-ID-REUSE"
    session.report(
        rule,
        f"{SENDER[msg.direction]} reused request id {show_id(msg.id)} while the request with "
        f"that id (seq {previous.seq}, {previous.method}) is still waiting for its response: "
        + _described(kind),
        [previous.seq, msg.frame],
        id=msg.id,
        previous_seq=previous.seq,
        in_flight=True,
        reuse=kind,
    )


@rule("MSG-ID-REUSE", on=PAIRING, keys=("reuse-after-completion",))
def after_completion(session: Session, msg: Msg, key: Any, this_print: Fingerprint | None) -> None:
    """``msg`` reuses an id whose request was already answered (or cancelled)."""
    if session.state.era == STATELESS:
        return  # ids are unique only among requests in flight there (MSG-ID-INFLIGHT)
    direction = msg.direction
    earlier = session.state.answered[direction].get(key)
    data: dict[str, Any] = {"id": msg.id, "in_flight": False}
    text = "which it already used earlier in this session; ids must never be reused"
    if earlier is not None:
        kind = _kind(earlier.method == msg.method, earlier.fingerprint, this_print)
        data.update(previous_seq=earlier.seq, reuse=kind)
        if earlier.response_seq is not None:
            data["answered_seq"] = earlier.response_seq
            answered = f", answered at seq {earlier.response_seq}"
        else:
            answered = ", cancelled before its answer"
        text = (
            f"already used by the request at seq {earlier.seq} ({earlier.method}{answered}): "
            + _described(kind)
        )
    seqs = [msg.frame] if earlier is None else [earlier.seq, msg.frame]
    session.report(
        "MSG-ID-REUSE",
        f"{SENDER[direction]} reused request id {show_id(msg.id)}, {text}",
        seqs,
        **data,
    )
