"""A result sent again byte for byte: the key that tells it, and what the rules judged of it.

Servers answer ``tools/list``, ``resources/list`` and the other listings again
and again with the same bytes. A rule whose verdict on a result depends on
nothing but the result (no session state read, none written) says the same of
the same bytes; after it found nothing in one, it need not walk the next one
that is byte for byte equal (``clean_before`` / ``judged_clean``). The guard's
list rules (rules/guard.py) keep their own answers under the same key.

No rules are registered here: the module only serves the rule modules.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

#: A list result longer than this (in JSON) is judged afresh each time, not kept.
MAX_KEPT_LIST = 1 << 20
#: ``rule_state`` key: (rule name, method) -> the key of the last result judged clean.
_CLEAN = "clean_results"


def listing_key(session: Session, msg: Msg, result: dict[str, Any]) -> bytes | tuple[bytes] | None:
    """The result's key: equal keys, equal results (made once per message for every rule).

    A result byte for byte the previous one of its method has the same
    definitions, texts and fingerprints, so a rule can answer it from what it
    kept. The key is the usual reply's own bytes after its id (``reply_tail``:
    nothing serialized, about 34K instructions a 2.5 KiB list), else the result
    as orjson bytes. Bytes tell ``true``, ``1`` and ``1.0`` apart (a
    fingerprint does too). None: too big to keep, or not JSON again (an integer
    beyond 64 bits).
    """
    kept = session.state.rule_state.get("result_key")
    if kept is not None and kept[0] is msg:
        return kept[1]
    raw: bytes | tuple[bytes] | None = None
    source = msg.source
    # The frame bounds the result: a huge one is not copied to be measured.
    if source is None or len(source.raw) <= MAX_KEPT_LIST:
        raw = reply_tail(msg)
        if raw is None:
            with contextlib.suppress(TypeError, orjson.JSONEncodeError):
                raw = orjson.dumps(result)
            if raw is not None and len(raw) > MAX_KEPT_LIST:
                raw = None
    session.state.rule_state["result_key"] = (msg, raw)
    return raw


#: How the usual reply's bytes start, up to its id (the Python SDK and orjson write it so).
_REPLY_HEAD = b'{"jsonrpc":"2.0","id":%d,"result":'


def reply_tail(msg: Msg) -> tuple[bytes] | None:
    """The bytes of the reply's frame after ``{"jsonrpc":"2.0","id":N,"result":``, or None.

    A key for ``listing_key`` without serializing the result: two frames that
    start so (their ids aside) and whose rest is the same bytes parse to the
    same result (the parser is in the same state after either head, and every
    "result" member, the one the parse kept among them, is in the rest), so
    orjson would write the same bytes for both. Only where the message is
    its frame's whole value, which the frame's bytes hold (core/model.py:
    ``value`` is the parsed JSON of ``raw``; a trace's line must prove it,
    trace/codec.py ``embeds_value``). In a tuple: never equal to orjson's
    bytes of a result, the key of any other reply.
    """
    source = msg.source
    ident = msg.id
    if source is None or source.value is not msg.obj or type(ident) is not int:
        return None
    head = _REPLY_HEAD % ident
    raw = source.raw
    if not raw.startswith(head):
        return None
    return (raw[len(head) :],)


def clean_before(session: Session, msg: Msg, result: dict[str, Any], name: str) -> bool:
    """Whether rule ``name`` judged clean a result of this method byte for byte ``result``.

    Its last clean one only (``judged_clean``): a rule that reported on a
    result, or never judged one, judges this one itself.
    """
    clean = session.state.rule_state.get(_CLEAN)
    if clean is None:
        return False
    request = msg.request
    previous = clean.get((name, request.method if request is not None else ""))
    return previous is not None and previous == listing_key(session, msg, result)


def judged_clean(session: Session, msg: Msg, result: dict[str, Any], name: str) -> None:
    """Rule ``name`` found nothing in ``result``: a result byte for byte equal may be skipped."""
    key = listing_key(session, msg, result)
    if key is None:
        return
    request = msg.request
    clean = session.state.rule_state.setdefault(_CLEAN, {})
    clean[(name, request.method if request is not None else "")] = key
