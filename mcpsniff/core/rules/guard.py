"""The guard's rules on live traffic: hidden instructions and definitions that drift.

* GUARD-HIDDEN-DEFINITION: a tool, parameter, prompt or resource description
  that carries content aimed at the model rather than the user
  (``core/guard/hidden.py`` says what counts and why).
* GUARD-HIDDEN-RESULT: the same in the text of a tool result, where a server
  that cannot poison its description can still poison what it answers.
* GUARD-DRIFT-SESSION: a list result that changes definitions within one
  session (after ``notifications/tools/list_changed`` or not). A server may
  change its offer (server/tools.mdx § List Changed Notification), so this is
  not a protocol error; but a definition the user approved that changes under
  a running client is the "rug pull" the guard exists to show.

These are not protocol rules: the catalogue keeps them in ``catalog_guard.json``
and every version has them. The trace-wide guard findings (drift across
sessions, the lock file, shadowing, policy gates) are ``mcpsniff/guard/``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcpsniff.core.guard.diff import Listed, diff_offers
from mcpsniff.core.guard.fingerprint import LISTS, Definition, definitions, texts
from mcpsniff.core.guard.hidden import Hit, clean_json, scan
from mcpsniff.core.rules.registry import RESULT, rule
from mcpsniff.core.rules.repeats import listing_key as _listing

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("GUARD-HIDDEN-DEFINITION", "GUARD-HIDDEN-RESULT", "GUARD-DRIFT-SESSION")

#: At most this many hits are reported per list result, and this many changes per drift.
MAX_REPORTED = 20
#: At most this many content blocks of one tool result are scanned.
MAX_BLOCKS = 100
#: A definition, where in it, and the hits of that text.
Hidden = tuple[Definition, str, tuple[Hit, ...]]


def hit_data(hit: Hit) -> dict[str, Any]:
    """A hit as a finding's data."""
    return {"kind": hit.kind, "strength": hit.strength, "quote": hit.quote, "why": hit.why}


def _method(msg: Msg) -> str:
    """The method a reply answers (the dispatch key of these rules)."""
    request = msg.request
    return request.method if request is not None else (msg.method or "")


def _carries(hits: Sequence[Hit]) -> str:
    """What the first hit carries and why, and how many more there are."""
    first = hits[0]
    more = f" and {len(hits) - 1} more" if len(hits) > 1 else ""
    return f"carries {first.kind} ({first.why}): {first.quote!r}{more}"


def _severity(hits: Sequence[Hit]) -> str:
    return "warning" if any(h.strength == "strong" for h in hits) else "info"


@rule("GUARD-HIDDEN-DEFINITION", on=RESULT, methods=tuple(LISTS))
def hidden_in_definitions(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Every text of every listed definition, scanned; one finding per definition."""
    method = _method(msg)
    raw = _listing(session, msg, result)
    kept = session.state.rule_state.setdefault("guard_hidden", {})
    previous = kept.get(method)
    if raw is not None and previous is not None and previous[0] == raw:
        found = previous[1]
    else:
        found = _hidden_definitions(method, result)
        kept[method] = (raw, found)
    for definition, where, hits in found:
        session.report(
            "GUARD-HIDDEN-DEFINITION",
            f"{definition.kind} {definition.name[:80]!r}: {where} {_carries(hits)}",
            [msg.frame],
            severity=_severity(hits),
            definition=definition.key[:200],
            where=where[:200],
            hits=[hit_data(h) for h in hits],
        )


def _hidden_definitions(method: str, result: dict[str, Any]) -> tuple[Hidden, ...]:
    """The definitions of a list result that carry hidden content, at most ``MAX_REPORTED``."""
    found: list[Hidden] = []
    for definition in definitions(method, result):
        for where, text in texts(definition):
            hits = scan(text)
            if not hits:
                continue
            found.append((definition, where, tuple(hits)))
            if len(found) >= MAX_REPORTED:
                return tuple(found)
    return tuple(found)


@rule("GUARD-HIDDEN-RESULT", on=RESULT, methods=("tools/call",))
def hidden_in_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """The text blocks of a tool result, scanned."""
    content = result.get("content")
    if type(content) is not list:
        return
    source = msg.source
    if source is not None and source.value is msg.obj and clean_json(source.raw):
        # The message is its frame's whole value, whose JSON text the frame's
        # bytes hold (core/model.py: ``value`` is the parsed JSON of ``raw``; a
        # trace's line must prove it, trace/codec.py ``embeds_value``): no
        # text block in them can give a hit.
        return
    for index, block in enumerate(content[:MAX_BLOCKS]):
        if type(block) is not dict or block.get("type") != "text":
            continue
        text = block.get("text")
        if type(text) is not str:
            continue
        hits = scan(text, result=True)
        if not hits:
            continue
        tool = msg.request.params.get("name") if msg.request and msg.request.params else None
        session.report(
            "GUARD-HIDDEN-RESULT",
            f"the result of tool {str(tool)[:80]!r}, content[{index}], {_carries(hits)}",
            [msg.frame],
            severity=_severity(hits),
            tool=str(tool)[:200],
            block=index,
            hits=[hit_data(h) for h in hits],
        )
        return  # one finding per result says enough


@rule("GUARD-DRIFT-SESSION", on=RESULT, methods=("initialize",))
def server_name(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Remember who the server says it is: the history keys its offers by it."""
    info = result.get("serverInfo")
    if type(info) is dict and type(info.get("name")) is str:
        session.state.rule_state["guard_server"] = info["name"][:200]


@rule("GUARD-DRIFT-SESSION", on=RESULT, methods=tuple(LISTS))
def drift_in_session(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A complete list that differs from the previous complete list of the same kind."""
    request = msg.request
    if type(result.get("nextCursor")) is str or (
        request is not None and request.params is not None and "cursor" in request.params
    ):
        return  # one page of a paginated list: not the whole offer
    method = _method(msg)
    memory = session.state.rule_state.setdefault("guard_offers", {})
    previous = memory.get(method)
    raw = _listing(session, msg, result)
    listed = session.state.rule_state.setdefault("guard_offer_listing", {})
    if raw is not None and previous is not None and listed.get(method) == raw:
        # The previous complete list again: the same offer, nothing changed.
        memory[method] = (previous[0], msg.frame, msg.sent_at)
        return
    listed[method] = raw
    offer = {
        d.key: Listed(d.kind, d.name, d.fingerprint, d.body) for d in definitions(method, result)
    }
    # The relays keep the last offer of each session in the state folder's
    # history when the capture ends (``mcpsniff/guard/live.py``).
    memory[method] = (offer, msg.frame, msg.sent_at)
    if previous is None:
        return
    changes = diff_offers(previous[0], offer)
    if not changes:
        return
    kind = LISTS[method][0]
    session.report(
        "GUARD-DRIFT-SESSION",
        f"{method} changed {len(changes)} {kind} definition(s) since seq {previous[1]}: "
        + "; ".join(c.describe()[:200] for c in changes[:3])
        + (f"; and {len(changes) - 3} more" if len(changes) > 3 else ""),
        [previous[1], msg.frame],
        changes=[c.as_data() for c in changes[:MAX_REPORTED]],
    )
