"""Scoping: which era a session is in, and within what a request id pairs.

In the handshake era (and on stdio) a request id is unique within the
session, so its key is the id's own (``ids.id_key``; an integer is its own
key). The stateless era (2026-07-28) has no sessions: every client through one
proxy counts its ids from 1, so there a session-less Streamable HTTP
message's key is scoped to its client connection (``ScopedKey``). Progress
tokens, which clients make up too, are scoped alike (rules/flow.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from mcpsniff.core.ids import id_key
from mcpsniff.core.model import C2S
from mcpsniff.core.protocol import META_VERSION, STATELESS, V5, is_known_version

if TYPE_CHECKING:
    from mcpsniff.core.session.base import SessionBase
    from mcpsniff.core.state import Msg, SessionState


class ScopedKey(NamedTuple):
    """A request id's key within one client connection (``scope_of``)."""

    scope: str
    key: Any


def note_era(state: SessionState, msg: Msg) -> None:
    """A client request whose _meta names a protocol version opens the stateless era.

    Decided before the request is keyed (the era decides how ids pair); only
    the first such request sets it.
    """
    if state.era is not None or msg.direction != C2S:
        return
    params = msg.params
    meta = None if params is None else params.get("_meta")
    if isinstance(meta, dict) and META_VERSION in meta:
        state.era = STATELESS
        requested = meta[META_VERSION]
        state.version = requested if is_known_version(requested) else V5
        state.settle_era()


def pairing_key(session: SessionBase, ident: Any, msg: Msg) -> Any:
    """The key request id ``ident`` is paired by, for ``msg`` (see ``scope_of``)."""
    return scoped(session, ident if type(ident) is int else id_key(ident), msg)


def scoped(session: SessionBase, key: Any, msg: Msg) -> Any:
    """``key`` (an id's or a progress token's) within ``msg``'s client, when scoped."""
    scope = scope_of(session, msg)
    return key if scope is None else ScopedKey(scope, key)


def rescope(mapping: Any, key: Any) -> tuple[Any, bool]:
    """Where ``mapping`` holds ``key``'s entry, and whether that is ambiguous.

    Pairing per connection (``scope_of``) must not lose what a client sends
    on another of its connections (an HTTP/1.1 client pools several): a
    cancellation while its request's stream is still open, progress on a
    stream resumed elsewhere. ``key`` itself when it is there (or is not
    scoped); else the one entry for the same id under another scope; else
    ``key``, with ``True`` when several clients have that id (then nobody
    can tell whose it is, and nothing should be reported).
    """
    if type(key) is not ScopedKey or key in mapping:
        return key, False
    inner = key.key
    found = [k for k in mapping if type(k) is ScopedKey and k.key == inner]
    if len(found) == 1:
        return found[0], False
    return key, len(found) > 1


def scope_of(session: SessionBase, msg: Msg) -> str | None:
    """The client connection of a stateless HTTP message, when ids are paired per client.

    (Progress tokens, which clients make up too, are kept per client alike.)

    2026-07-28 has no sessions, so a server's stateless traffic is one group,
    and every client counts its request ids from 1: two concurrent clients
    through one proxy had each other's ids in flight (a false MSG-ID-INFLIGHT,
    and answers paired with the other client's request). A response travels
    on its request's HTTP exchange, so within the group ids are paired per
    client connection (the ``client`` of the exchange's http-request event,
    when the shell knows it). Only session-less Streamable HTTP exchanges
    are scoped: a session id or a legacy stream keeps clients apart already,
    and a legacy server answers on its GET stream. Batch elements are left
    unscoped: batches are gone from that era (MSG-BATCH-REMOVED).
    """
    state = session.state
    if state.era != STATELESS or msg.index is not None:
        return None
    exchanges = state.http
    frame = msg.source
    if exchanges is None or frame is None or not frame.meta:
        return None
    number = frame.meta.get("exchange")
    # A trace's meta is hostile: only an integer names an exchange.
    return exchanges.sessionless_client(number) if type(number) is int else None
