"""Correlation: which request a reply answers, and which bad input an error reply answers.

JSON-RPC links a reply to its request by the id alone (JSON-RPC 2.0 §5: "It
MUST be the same as the value of the id member in the Request Object"). A
request is registered in flight under its key when it is classified
(``classification.message``); the usual reply then pairs there, inline. The
rest comes here (``match_response``): an id of another JSON type, an integer
id that lost digits, two requests in flight under one id, a reply after a
cancellation, a second reply, a null id that answers a bad frame
(``bad_frames``), a reply nobody asked for. Each outcome goes to the PAIRING
rules (``dispatch.pairing_rules``); this module reports nothing itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import coerced_keys, id_key
from mcpsniff.core.model import C2S, ERROR, OPPOSITE, S2C
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.session.dispatch import pairing_rules
from mcpsniff.core.session.scoping import ScopedKey, pairing_key, rescope, scope_of
from mcpsniff.core.state import Answered, Pending

if TYPE_CHECKING:
    from mcpsniff.core.session.base import SessionBase
    from mcpsniff.core.state import Fingerprint, Msg

#: Error codes whose reply carries a null id when the request could not be read.
BAD_INPUT_CODES = frozenset({-32700, -32600})
#: Floats at or above 2**53 may be integers that lost digits on the way in.
EXACT_FLOAT_LIMIT = float(2**53)
#: How many requests sharing one in-flight id are remembered per id.
MAX_SHADOWED = 64
#: How many ids with shadowed requests are remembered per direction.
MAX_SHADOWED_IDS = 1024
#: The member a method's result always has (schema.ts); an empty result answers the rest.
RESULT_MEMBER = {
    "initialize": "protocolVersion",
    "tools/list": "tools",
    "tools/call": "content",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "resources/read": "contents",
    "prompts/list": "prompts",
    "prompts/get": "messages",
    "completion/complete": "completion",
    "roots/list": "roots",
    "sampling/createMessage": "model",
    "elicitation/create": "action",
    "tasks/list": "tasks",
    "server/discover": "supportedVersions",
}


# --------------------------------------------------------------------------- bad input


def note_bad(session: SessionBase, direction: str, seq: int, kind: str) -> None:
    """Remember frame ``seq`` as bad input waiting for its error reply (rules/replies.py)."""
    session.state.bad_frames[direction].append((seq, kind))


def link_bad_input(session: SessionBase, msg: Msg) -> tuple[int, str] | None:
    """The oldest bad frame of the other side that the -32700/-32600 ``msg`` answers."""
    bad = session.state.bad_frames[OPPOSITE[msg.direction]]
    if not bad:
        return None
    culprit, kind = bad.popleft()
    msg.answers = culprit
    msg.note = "parse-error-reply" if msg.error_code == -32700 else "invalid-request-reply"
    return culprit, kind


def is_bad_input_error(msg: Msg) -> bool:
    """Whether ``msg`` is a -32700 or -32600 error (the replies to unreadable input)."""
    code = msg.error_code
    return msg.kind == ERROR and type(code) is int and code in BAD_INPUT_CODES


def answer_bad_input(session: SessionBase, msg: Msg, reason: str) -> bool:
    """Pair the bad-input error ``msg`` with the bad frame it answers, if one waits.

    The pairing rules run for ``reason``; False when no bad frame waits.
    """
    linked = link_bad_input(session, msg)
    if linked is None:
        return False
    pairing_rules(session, reason, msg, *linked)
    return True


# --------------------------------------------------------------------------- requests


def reused(
    session: SessionBase, msg: Msg, key: Any, seen: bool, this_print: Fingerprint | None
) -> None:
    """A request whose id was used before (``message`` registers it after this)."""
    direction = msg.direction
    state = session.state
    pending = state.pending[direction]
    if key in pending:
        pairing_rules(session, "reuse-in-flight", msg, pending[key], this_print)
    elif seen:
        pairing_rules(session, "reuse-after-completion", msg, key, this_print)
    if key in pending:
        # Both requests are in flight under one id: keep both, so each reply
        # pairs with one of them (``take_pending``) instead of the second
        # reply counting as a duplicate of the first.
        by_id = state.shadowed[direction]
        if key in by_id or len(by_id) < MAX_SHADOWED_IDS:
            shadowed = by_id.setdefault(key, [])
            if len(shadowed) < MAX_SHADOWED:
                shadowed.append(pending[key])


# --------------------------------------------------------------------------- replies


def match_response(session: SessionBase, msg: Msg) -> None:
    """Pair a reply that is not the usual one (``message`` pairs that inline)."""
    state = session.state
    request_direction = OPPOSITE[msg.direction]
    if msg.has_id and msg.id is None:
        # A request sent with "id": null (MSG-ID-NOT-NULL, its root finding)
        # answered with that null id echoed: the pair, not a reply to a
        # notification nor a request never answered.
        key = pairing_key(session, None, msg)
        request = state.pending[request_direction].pop(key, None)
        if request is not None:
            pair(session, msg, request)
            msg.note = "null-id-echo"
            return
    if not msg.has_id or msg.id is None:
        request = _request_of_exchange(session, msg)
        if request is not None:
            # An id-less error in an HTTP error response answers the request
            # POSTed in that exchange (catalogue trap 1, MOD-HTTP-FALLBACK).
            del state.pending[request_direction][request.key]
            pair(session, msg, request)
            msg.note = "http-error-reply"
            return
        # JSON-RPC §5: "If there was an error in detecting the id in the Request
        # object (e.g. Parse error/Invalid Request), it MUST be Null": such a
        # reply answers the oldest bad frame the other side sent.
        if is_bad_input_error(msg):
            answer_bad_input(session, msg, "bad-input-reply")
            return
        pairing_rules(session, "null-id", msg)
        return
    ident = msg.id
    scope = scope_of(session, msg) if state.era == STATELESS else None
    key = ident if type(ident) is int else id_key(ident)
    if scope is not None:
        key = ScopedKey(scope, key)
    pending = state.pending[request_direction]
    request = pending.pop(key, None)
    if request is not None and state.shadowed[request_direction]:
        request = take_pending(session, msg, key, request)
    if request is not None:
        pair(session, msg, request)
        if msg.error_code == -32700 and msg.kind == ERROR:
            pairing_rules(session, "parse-error-for-request", msg, request)
        if request.cancelled:
            # A result after notifications/cancelled is an expected race
            # (cancellation.mdx: "Both parties MUST handle these race
            # conditions gracefully"; catalogue trap 6): record, don't flag.
            msg.note = "late-after-cancel"
        return
    for alt in coerced_keys(msg.id):
        if scope is not None:
            alt = ScopedKey(scope, alt)
        request = pending.get(alt)
        if request is not None:
            del pending[alt]
            pair(session, msg, request)
            msg.note = "id-type-mismatch"
            pairing_rules(session, "id-type-mismatch", msg, request)
            return
    answered = state.answered[request_direction].get(key)
    if answered is not None:
        msg.answers = answered.seq
        msg.request_index = answered.index
        if answered.cancelled and answered.response_seq is None:
            msg.note = "late-after-cancel"
            answered.response_seq = msg.frame
            if (
                answered.method == "initialize"
                and answered.seq == state.lifecycle.init_seq
                and msg.direction == S2C
            ):
                pairing_rules(session, "late-initialize", msg)
            return
        msg.note = "duplicate-response"
        pairing_rules(session, "duplicate-response", msg, answered)
        return
    if scope is not None:
        # Not on its own connection, nor answered there lately: a stream resumed on a
        # new connection (Last-Event-ID) carries answers to requests sent on
        # another. The one such request of another scope pairs.
        other, ambiguous = rescope(pending, key)
        if other is not key:
            pair(session, msg, pending.pop(other))
            return
        if ambiguous:
            return  # two clients' requests with this id: whose, the trace cannot tell
    if key in state.used[request_direction]:
        msg.note = "duplicate-response"
        pairing_rules(session, "duplicate-response", msg, None)
        return
    # A -32700/-32600 with an id nobody sent, while a bad frame waits for its
    # reply: that reply, with an id it could not have read.
    if is_bad_input_error(msg) and answer_bad_input(session, msg, "orphan-bad-input-reply"):
        return
    if lost_precision(session, msg, pending):
        return
    msg.note = "orphan"
    pairing_rules(session, "orphan", msg)


def _request_of_exchange(session: SessionBase, msg: Msg) -> Pending | None:
    """The pending request an id-less HTTP error body answers, if there is exactly one.

    The HTTP rules keep the exchanges (``state.http``, rules/http.py); an
    error that came with an HTTP error status answers the one request its
    exchange's POST carried.
    """
    meta = msg.source.meta
    if msg.kind != ERROR or not meta or not isinstance(meta.get("exchange"), int):
        return None
    status = meta.get("status")
    if not isinstance(status, int) or status < 400:
        return None
    exchanges = session.state.http
    request = exchanges.sole_request(meta["exchange"]) if exchanges is not None else None
    if request is None:
        return None
    return session.state.pending[C2S].get(request.key)


def lost_precision(session: SessionBase, msg: Msg, pending: dict[Any, Pending]) -> bool:
    """A reply whose integer id lost digits: 2**53 + 1 echoed as 2**53.

    A peer that keeps JSON numbers as IEEE doubles (JavaScript) cannot echo
    an integer id beyond 2**53 exactly; the reply then names another id.
    Ids compare exactly (JSON-RPC §5), so it is a JR-RESP-ID of its own
    cause, linked to the request it was meant for.
    """
    ident = msg.id
    if type(ident) not in (int, float) or abs(ident) < EXACT_FLOAT_LIMIT:
        return False
    for key, request in pending.items():
        meant = request.id
        if (
            type(meant) is int
            and abs(meant) > EXACT_FLOAT_LIMIT
            and meant != ident
            and float(meant) == float(ident)
        ):
            del pending[key]
            pair(session, msg, request)
            msg.note = "id-precision"
            pairing_rules(session, "id-precision", msg, request)
            return True
    return False


def take_pending(session: SessionBase, msg: Msg, key: Any, request: Pending) -> Pending:
    """Which of the requests in flight under one id ``msg`` answers.

    JSON-RPC gives no way to tell (the id is the only link), so the
    result's shape decides when it fits exactly one of them (a `tools`
    array answers tools/list, not ping); otherwise the oldest goes first.
    The others stay in flight under the id.
    """
    direction = OPPOSITE[msg.direction]
    shadowed = session.state.shadowed[direction]
    queue = shadowed.get(key)
    if not queue:
        return request
    candidates = [*queue, request]
    chosen = by_result_shape(msg, candidates) or candidates[0]
    candidates.remove(chosen)
    session.state.pending[direction][key] = candidates.pop()
    if candidates:
        shadowed[key] = candidates
    else:
        del shadowed[key]
    msg.note = "ambiguous-id"
    return chosen


def by_result_shape(msg: Msg, candidates: list[Pending]) -> Pending | None:
    """The one candidate whose method's result has the shape of ``msg``'s result."""
    result = msg.obj.get("result") if isinstance(msg.obj, dict) else None
    if not isinstance(result, dict):
        return None
    keys = set(result) - {"_meta"}
    fits = [
        c
        for c in candidates
        if (member := RESULT_MEMBER.get(c.method)) in keys or (member is None and not keys)
    ]
    return fits[0] if len(fits) == 1 else None


def pair(session: SessionBase, msg: Msg, request: Pending) -> None:
    """Record ``msg`` as the reply to ``request``, and ``request`` as answered."""
    msg.answers = request.seq
    msg.request_index = request.index
    msg.latency_ms = round_ms((msg.sent_at - request.t) * 1000.0)
    msg.request = request
    # BoundedMap.put, inlined: this runs for every response.
    answered = session.state.answered[OPPOSITE[msg.direction]]
    key = request.key
    answered[key] = Answered(
        request.seq,
        request.index,
        request.method,
        msg.frame,
        request.cancelled,
        request.fingerprint,
    )
    answered.move_to_end(key)
    if len(answered) > answered.limit:
        answered.popitem(False)


def round_ms(value: float) -> float:
    """``round(value, 3)``, exactly, in half the time for the usual latency.

    ``round`` with digits goes through a decimal string and back (about
    0.23 us), and every response pays it. Below 2**31 thousandths the product
    ``value * 1000.0`` is within 2**-22 of the exact one, so when its
    fractional part is more than 1e-6 away from one half, the integer it rounds
    to is the one the exact value rounds to, and ``n / 1000.0`` (one correctly
    rounded division of exact operands) is the double nearest to n/1000, which
    is what ``round`` returns. Near a half, at zero (the sign of -0.0) and for
    anything else, ``round`` itself decides.
    """
    scaled = value * 1000.0
    if 0.0 < scaled < 2147483648.0:
        whole = int(scaled)
        fraction = scaled - whole
        if fraction > 0.500001:
            return (whole + 1) / 1000.0
        if fraction < 0.499999 and whole:
            return whole / 1000.0
    return round(value, 3)
