"""``subscriptions/listen`` (2026-07-28, basic/patterns/subscriptions.mdx).

A client opens a subscription with a ``subscriptions/listen`` request naming
the notifications it wants (``params.notifications``: ``toolsListChanged``,
``promptsListChanged``, ``resourcesListChanged``, ``resourceSubscriptions``).
The server acknowledges with ``notifications/subscriptions/acknowledged``,
then sends those notifications, each with
``_meta["io.modelcontextprotocol/subscriptionId"]`` = the listen request's id,
and ends it with a result (``resultType: "complete"``) or, when it tears it
down, ``notifications/cancelled`` for the listen id.

* MOD-SUBS-ACK-FIRST: "This notification MUST be the first message the server
  sends carrying the subscription's ID"; on stdio the order is per
  subscription id, so other subscriptions' messages may come between.
* MOD-SUBS-ID: every notification of a subscription carries its id, and the id
  is a listen request's.
* MOD-SUBS-FILTER: "the server MUST NOT send notification types the client has
  not explicitly requested" (and an acknowledgement honours a subset).
* MOD-SUBS-CLOSE: a graceful end is a success result with ``resultType:
  "complete"`` and the subscription id; the server "MUST NOT send
  notifications/cancelled for any other purpose".

A listen request left open when the session ends is not an unanswered request
("an abrupt transport close carries no response"): rules/flow.py skips it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import BoundedMap, id_key, show_id
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.registry import NOTIFICATION, REQUEST, RESULT, rule
from mcpsniff.core.state import Answered

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("MOD-SUBS-ACK-FIRST", "MOD-SUBS-ID", "MOD-SUBS-FILTER", "MOD-SUBS-CLOSE")

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: The notifications a listen stream carries, and the filter flag that asks for each.
STREAM_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
    "notifications/resources/updated": "resourceSubscriptions",
}
#: Subscriptions remembered per session; URIs remembered per subscription.
MAX_SUBSCRIPTIONS = 1024
MAX_URIS = 4096
_STATE_KEY = "subscriptions"


@dataclass(slots=True)
class Subscription:
    """One listen request and what it asked for."""

    seq: int
    id: Any
    flags: frozenset[str]
    uris: frozenset[str]
    acknowledged: int | None = None
    closed: bool = False
    reported: set[str] = field(default_factory=set)


def _subscriptions(session: Session) -> BoundedMap:
    found = session.state.rule_state.get(_STATE_KEY)
    if found is None:
        found = session.state.rule_state[_STATE_KEY] = BoundedMap(MAX_SUBSCRIPTIONS)
    return found


def _filter(value: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The flags set to true, and the resource URIs, of a SubscriptionFilter."""
    if not isinstance(value, dict):
        return frozenset(), frozenset()
    flags = frozenset(
        k
        for k in ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
        if value.get(k) is True
    )
    uris = value.get("resourceSubscriptions")
    chosen = (
        frozenset(u for u in uris[:MAX_URIS] if isinstance(u, str))
        if isinstance(uris, list)
        else frozenset()
    )
    if chosen:
        flags |= {"resourceSubscriptions"}
    return flags, chosen


def _subscription_id(msg: Msg) -> tuple[bool, Any]:
    """Whether ``msg``'s params._meta names a subscription id, and the id."""
    params = msg.params
    meta = params.get("_meta") if params is not None else None
    if not isinstance(meta, dict) or SUBSCRIPTION_ID not in meta:
        return False, None
    return True, meta[SUBSCRIPTION_ID]


def _shown(value: Any) -> str:
    """An id for a message, bounded (ids come from traffic)."""
    text = show_id(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _key(value: Any) -> Any:
    return id_key(value) if isinstance(value, str | int | float) else None


def _scoped(session: Session, value: Any, msg: Msg) -> Any:
    """A subscription's key: its listen id, per client connection where ids are.

    Stateless HTTP clients each count ids from 1 (core/session/scoping.py); a listen
    stream's notifications travel on the listen request's exchange, so they
    scope to the same client.
    """
    key = _key(value)
    return None if key is None else session.scoped(key, msg)


@rule("MOD-SUBS-FILTER", on=REQUEST, methods=(LISTEN,))
def listen(session: Session, msg: Msg) -> None:
    """A client opens a subscription: remember what it asked for."""
    key = _scoped(session, msg.id, msg)
    if msg.direction != C2S or key is None:
        return
    params = msg.params or {}
    flags, uris = _filter(params.get("notifications"))
    _subscriptions(session).put(key, Subscription(msg.frame, msg.id, flags, uris))


@rule(
    "MOD-SUBS-ACK-FIRST",
    "MOD-SUBS-ID",
    "MOD-SUBS-FILTER",
    on=NOTIFICATION,
    methods=(ACKNOWLEDGED, *STREAM_FLAGS),
)
def subscription_notification(session: Session, msg: Msg) -> None:
    """An acknowledgement or a change notification of a subscription."""
    if msg.direction != S2C or session.state.era != STATELESS:
        return
    has_id, value = _subscription_id(msg)
    method = msg.method or ""
    subscriptions = _subscriptions(session)
    if not has_id:
        if method == ACKNOWLEDGED:
            session.report(
                "MOD-SUBS-ACK-FIRST",
                "the server acknowledged a subscription without "
                f'_meta["{SUBSCRIPTION_ID}"]; the acknowledgement names the listen request\'s id',
                [msg.frame],
                cause="no-subscription-id",
            )
        elif any(not sub.closed for sub in subscriptions.values()):
            session.report(
                "MOD-SUBS-ID",
                f'the server sent {method} without _meta["{SUBSCRIPTION_ID}"] while a '
                "subscription is open; every notification of a subscription carries its id "
                "(the listen request's id)",
                [msg.frame],
                method=method,
            )
        return
    key = _scoped(session, value, msg)
    sub = subscriptions.get(key) if key is not None else None
    if sub is None:
        session.report(
            "MOD-SUBS-ID",
            f"the server sent {method} for subscription {_shown(value)}, but the client "
            "opened no subscriptions/listen with that id",
            [msg.frame],
            method=method,
            subscription_id=value if key is not None else None,
        )
        return
    if method == ACKNOWLEDGED:
        if sub.acknowledged is None:
            sub.acknowledged = msg.frame
            flags, uris = _filter((msg.params or {}).get("notifications"))
            extra = sorted((flags - sub.flags) | {f"resource {u}" for u in uris - sub.uris})
            if extra:
                session.report(
                    "MOD-SUBS-FILTER",
                    f"the server acknowledged subscription {_shown(sub.id)} with "
                    f"{', '.join(extra[:5])}, which the client did not ask for; it honours a "
                    "subset of the request",
                    [sub.seq, msg.frame],
                    extra=extra[:20],
                )
        return
    if sub.acknowledged is None:
        if "ack" not in sub.reported:
            sub.reported.add("ack")
            session.report(
                "MOD-SUBS-ACK-FIRST",
                f"the server sent {method} on subscription {_shown(sub.id)} before "
                "acknowledging it; notifications/subscriptions/acknowledged comes first",
                [sub.seq, msg.frame],
                method=method,
            )
        return
    flag = STREAM_FLAGS[method]
    uri = (msg.params or {}).get("uri")
    if flag == "resourceSubscriptions":
        wanted = isinstance(uri, str) and uri in sub.uris
    else:
        wanted = flag in sub.flags
    if not wanted:
        what = f"updates of {uri!r}"[:200] if flag == "resourceSubscriptions" else flag
        session.report(
            "MOD-SUBS-FILTER",
            f"the server sent {method} on subscription {_shown(sub.id)}, which did not ask "
            f"for {what}; servers send only the notification types a client requested",
            [sub.seq, msg.frame],
            method=method,
        )


@rule("MOD-SUBS-CLOSE", on=NOTIFICATION, methods=("notifications/cancelled",))
def subscription_cancelled(session: Session, msg: Msg) -> None:
    """A 2026-07-28 server cancels only subscriptions."""
    if msg.direction != S2C or session.state.era != STATELESS:
        return
    params = msg.params or {}
    value = params.get("requestId")
    key = _scoped(session, value, msg)
    sub = _subscriptions(session).get(key) if key is not None else None
    if sub is None or sub.closed:
        session.report(
            "MOD-SUBS-CLOSE",
            f"the server sent notifications/cancelled for request {_shown(value)}, which is "
            "no open subscription; in 2026-07-28 a server sends it only to tear down a "
            "subscriptions/listen stream",
            [msg.frame],
            request_id=value if key is not None else None,
        )
        return
    sub.closed = True
    _settle(session, msg, sub)


@rule("MOD-SUBS-CLOSE", on=RESULT, methods=(LISTEN,))
def listen_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """The graceful end of a subscription: resultType "complete" and the subscription id."""
    request = msg.request
    key = _scoped(session, request.id, msg) if request is not None else None
    sub = _subscriptions(session).get(key) if key is not None else None
    if sub is not None:
        sub.closed = True
    meta = result.get("_meta")
    named = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
    problems = []
    if result.get("resultType") != "complete":
        problems.append(f"resultType {result.get('resultType')!r} instead of 'complete'")
    if request is not None and (named is None or _key(named) != _key(request.id)):
        problems.append(f'no _meta["{SUBSCRIPTION_ID}"] naming the listen id')
    if problems:
        session.report(
            "MOD-SUBS-CLOSE",
            "the server ended a subscription with " + " and ".join(problems),
            [msg.frame] if request is None else [request.seq, msg.frame],
        )


def _settle(session: Session, msg: Msg, sub: Subscription) -> None:
    """A torn-down subscription's listen request is done: not unanswered at the end."""
    state = session.state
    key = session.pairing_key(sub.id, msg)
    pending = state.pending[C2S].pop(key, None)
    if pending is not None:
        state.answered[C2S].put(
            key,
            Answered(pending.seq, pending.index, pending.method, None, cancelled=True),
        )
