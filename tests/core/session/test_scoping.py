"""core/session/scoping.py: the era, and within what a request id pairs."""

from __future__ import annotations

import orjson

from mcpsniff.core.model import FindingRecord, MessageRecord
from mcpsniff.core.protocol import META_VERSION
from mcpsniff.core.session import Session
from mcpsniff.core.session.scoping import ScopedKey, note_era, rescope
from mcpsniff.core.state import SessionState
from tests.conftest import Conversation, request, result


def _v5(id_: int, method: str, params: dict | None = None) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    return request(id_, method, {**(params or {}), "_meta": meta})


def _v5_result(id_: int, value: dict) -> dict:
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    return result(id_, {"resultType": "complete", "_meta": meta, **value})


def test_stateless_reuse_after_completion_is_allowed_in_flight_is_not(convo: Conversation) -> None:
    convo.client(_v5(1, "server/discover"))
    convo.server(
        _v5_result(
            1,
            {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {},
                "ttlMs": 0,
                "cacheScope": "public",
            },
        )
    )
    convo.client(_v5(1, "tools/list"))
    convo.client(_v5(1, "tools/list"))
    assert convo.find("MSG-ID-REUSE") == []
    (inflight,) = convo.find("MSG-ID-INFLIGHT")
    assert inflight.severity == "error"


def test_rescope_finds_the_one_entry_of_another_connection_and_gives_up_on_two() -> None:
    mine, other, third = ScopedKey("a:1", 5), ScopedKey("b:2", 5), ScopedKey("c:3", 5)
    # On its own connection, or not scoped at all: the key itself.
    assert rescope({mine: "x"}, mine) == (mine, False)
    assert rescope({5: "x"}, 5) == (5, False)
    # Only another connection has the id: that entry.
    assert rescope({other: "x", ScopedKey("b:2", 6): "y"}, mine) == (other, False)
    # Two other connections have it: whose, nobody can tell.
    assert rescope({other: "x", third: "y"}, mine) == (mine, True)
    # Nobody has it.
    assert rescope({}, mine) == (mine, False)


def test_the_first_client_request_naming_a_version_opens_the_stateless_era() -> None:
    state = SessionState()
    note_era(state, _msg("s2c", {"_meta": {META_VERSION: "2026-07-28"}}))
    assert state.era is None  # a server's request decides nothing
    note_era(state, _msg("c2s", {"_meta": {"other": 1}}))
    assert state.era is None
    note_era(state, _msg("c2s", {"_meta": {META_VERSION: "1999-01-01"}}))
    assert (state.era, state.version) == ("stateless", "2026-07-28")  # unknown: the newest
    note_era(state, _msg("c2s", {"_meta": {META_VERSION: "2025-11-25"}}))
    assert state.version == "2026-07-28"  # only the first sets it


def test_stateless_ids_pair_per_client_connection() -> None:
    # Two clients through one proxy both count from 1: each reply pairs with
    # the request of its own connection, and neither reuses the other's id.
    session = Session("http", "http")
    sent = {}
    records = []
    for number, client in ((1, "127.0.0.1:5001"), (2, "127.0.0.1:5002")):
        data = {"exchange": number, "method": "POST", "path": "/mcp", "headers": []}
        records += session.event(
            "http-request", 0.0, {**data, "transport": "streamable", "client": client}
        )
        frame = session.feed_frame(
            "c2s", "http", _raw(_v5(1, "tools/list")), 0.0, {"exchange": number}
        )
        records += frame
        sent[number] = frame[0].seq
    for number in (2, 1):
        out = session.feed_frame(
            "s2c", "http", _raw(_v5_result(1, {"tools": []})), 1.0, {"exchange": number}
        )
        records += out
        (reply,) = [r for r in out if isinstance(r, MessageRecord)]
        assert reply.answers == sent[number]
    assert session.state.pending["c2s"] == {}
    rules = {r.rule for r in records if isinstance(r, FindingRecord)}
    assert not rules & {"MSG-ID-INFLIGHT", "JR-RESP-ID"}, rules


def _raw(message: dict) -> bytes:
    return orjson.dumps(message)


def _msg(direction: str, params: dict) -> MessageRecord:
    return MessageRecord(1, "k", direction, "request", method="tools/list", params=params)
