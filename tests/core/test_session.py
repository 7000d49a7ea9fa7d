"""Correlation, lifecycle and rule behaviour of the Session, on scripted traffic."""

from __future__ import annotations

import orjson
import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from tests.conftest import Conversation, error, notification, request, result
from tests.core import session_reference


def _response_for(convo: Conversation, frame_seq: int) -> MessageRecord:
    (msg,) = [m for m in convo.messages if m.answers == frame_seq]
    return msg


# --------------------------------------------------------------------------- correlation


def test_response_is_paired_with_latency(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(1, "tools/list"))
    convo.t += 0.25
    convo.server(result(1, {"tools": []}))
    response = _response_for(convo, req[0].seq)
    assert response.kind == "response"
    assert 250.0 < response.latency_ms < 252.0
    assert not [f for f in convo.findings if f.severity == "error"]


def test_out_of_order_batch_reply_pairs_every_element(convo: Conversation) -> None:
    convo.handshake("2025-03-26")
    batch = convo.client([request(1, "ping"), request(2, "tools/list"), request(3, "ping")])
    convo.server([result(3, {}), result(1, {}), result(2, {"tools": []})])
    elements = [m for m in convo.messages if m.frame == batch[0].seq + 0 and m.index is not None]
    assert len(elements) == 3
    reply = [m for m in convo.messages if m.answers == batch[0].seq]
    assert sorted((m.id, m.request_index) for m in reply) == [(1, 0), (2, 1), (3, 2)]
    assert convo.findings == []


def test_batch_reply_missing_an_element(convo: Conversation) -> None:
    convo.handshake("2025-03-26")
    convo.client([request(1, "ping"), request(2, "ping")])
    convo.server([result(1, {})])
    convo.close()
    (finding,) = convo.find("JR-BATCH-RESP-COUNT")
    assert finding.data["missing"] == [2]
    assert finding.data["expected"] == 2 and finding.data["received"] == 1
    # The missing element was already reported; it is not reported twice.
    assert convo.find("JR-RESP-REQUIRED") == []


def test_batch_removed_after_2025_06_18(convo: Conversation) -> None:
    convo.handshake("2025-06-18")
    convo.client([request(1, "ping")])
    (finding,) = convo.find("MSG-BATCH-REMOVED")
    assert finding.severity == "error"
    assert finding.data["version"] == "2025-06-18"


def test_id_echoed_as_string(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(7, "tools/list"))
    convo.server(result("7", {"tools": []}))
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data["cause"] == "id-type"
    assert finding.data["request_id"] == 7 and finding.data["response_id"] == "7"
    assert _response_for(convo, req[0].seq).note == "id-type-mismatch"
    convo.close()
    assert convo.find("JR-RESP-REQUIRED") == []


def test_orphan_response(convo: Conversation) -> None:
    convo.handshake()
    convo.server(result(99, {}))
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data == {"cause": "unknown-id", "id": 99}
    assert "never sent a request" in finding.message


def test_duplicate_response(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(5, "ping"))
    first = convo.server(result(5, {}))
    convo.server(result(5, {}))
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data["cause"] == "duplicate-response"
    assert finding.data["first_response_seq"] == first[0].seq
    assert finding.seq[0] == req[0].seq


def test_ids_are_per_direction(convo: Conversation) -> None:
    convo.handshake(server_caps={"tools": {}})
    convo.client(request(1, "ping"))
    convo.server(request(1, "ping"))
    convo.client(result(1, {}))
    convo.server(result(1, {}))
    assert convo.find("JR-RESP-ID") == []
    assert convo.find("MSG-ID-REUSE") == []


def test_id_reuse_in_flight_and_after_completion_handshake_era(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "ping"))
    convo.client(request(1, "ping"))
    convo.server(result(1, {}))
    convo.client(request(2, "ping"))
    convo.server(result(2, {}))
    convo.client(request(2, "ping"))
    reuse = convo.find("MSG-ID-REUSE")
    assert [f.data["in_flight"] for f in reuse] == [True, False]


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


def test_stateless_session_never_raises_handshake_findings(convo: Conversation) -> None:
    convo.client(_v5(1, "server/discover"))
    convo.server(
        _v5_result(
            1,
            {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "public",
            },
        )
    )
    convo.client(_v5(2, "tools/list"))
    convo.server(_v5_result(2, {"tools": [], "ttlMs": 1000, "cacheScope": "private"}))
    convo.close()
    assert [r for r in convo.rules() if r.startswith(("LC-", "CAP-"))] == []
    assert convo.findings == []


def test_stateless_rules(convo: Conversation) -> None:
    convo.client(_v5(1, "tools/list"))
    convo.server(result(1, {"tools": []}))
    convo.client(request(2, "tools/list"))
    convo.server(request(9, "roots/list"))
    rules = convo.rules()
    assert "MOD-RESULTTYPE" in rules
    assert "MOD-META-REQUIRED" in rules
    assert "MOD-NO-SERVER-REQUESTS" in rules
    assert "LC-INIT-FIRST" not in rules


def test_unanswered_request_reported_at_end(convo: Conversation) -> None:
    convo.handshake()
    req = convo.client(request(3, "tools/call", {"name": "x"}))
    convo.close()
    (finding,) = convo.find("JR-RESP-REQUIRED")
    assert finding.seq == [req[0].seq]
    assert finding.data["method"] == "tools/call"


def test_cancelled_request_is_not_unanswered_and_late_result_is_noted(
    convo: Conversation,
) -> None:
    convo.handshake()
    req = convo.client(request(3, "tools/call", {"name": "x"}))
    convo.client(notification("notifications/cancelled", {"requestId": 3, "reason": "t/o"}))
    convo.server(result(3, {"content": []}))
    convo.close()
    assert convo.find("JR-RESP-REQUIRED") == []
    assert convo.find("JR-RESP-ID") == []
    late = _response_for(convo, req[0].seq)
    assert late.note == "late-after-cancel"


def test_cancel_of_unknown_or_foreign_request(convo: Conversation) -> None:
    convo.handshake()
    convo.server(request(8, "ping"))
    convo.client(notification("notifications/cancelled", {"requestId": 8}))
    convo.client(notification("notifications/cancelled", {"requestId": 77}))
    found = convo.find("CANCEL-SAME-DIRECTION")
    assert len(found) == 2
    assert "belongs to a request the server sent" in found[0].message


def test_parse_error_reply_links_to_bad_frame(convo: Conversation) -> None:
    convo.handshake()
    bad = convo.client(b'{"jsonrpc":"2.0","id":4,"method":"ping",}\n')
    convo.server(error(None, -32700, "Parse error"))
    reply = _response_for(convo, bad[0].seq)
    assert reply.note == "parse-error-reply"
    (parse,) = convo.find("JR-PARSE")
    assert parse.data["cause"] == "trailing-comma"
    assert parse.data["sender"] == "client"


# --------------------------------------------------------------------------- lifecycle


def test_missing_initialized(convo: Conversation) -> None:
    init = convo.client(
        request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        )
    )
    reply = convo.server(
        result(
            0,
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"},
            },
        )
    )
    convo.client(request(1, "tools/list"))
    convo.close()
    (missing,) = convo.find("LC-INITIALIZED-MISSING")
    assert missing.seq == [init[0].seq, reply[0].seq]
    assert missing.severity == "error"
    assert convo.find("LC-INITIALIZED-ORDER")[0].data["method"] == "tools/list"


def test_first_message_must_be_initialize(convo: Conversation) -> None:
    convo.client(request(1, "tools/list"))
    (finding,) = convo.find("LC-INIT-FIRST")
    assert finding.data["method"] == "tools/list"


def test_discover_probe_then_initialize_is_not_a_violation(convo: Conversation) -> None:
    convo.client(request(1, "server/discover"))
    convo.server(error(1, -32601, "Method not found"))
    convo.handshake()
    assert convo.find("LC-INIT-FIRST") == []


def test_request_before_initialize_response(convo: Conversation) -> None:
    convo.client(
        request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        )
    )
    convo.client(request(1, "ping"))
    convo.client(request(2, "tools/list"))
    (finding,) = convo.find("LC-CLIENT-PRE-RESPONSE")
    assert finding.data["method"] == "tools/list"
    assert finding.severity == "warning"


def test_capability_gating_severity_depends_on_version() -> None:
    for version, severity in (("2025-03-26", "warning"), ("2025-06-18", "error")):
        convo = Conversation()
        convo.handshake(version, server_caps={"prompts": {}})
        convo.client(request(1, "tools/list"))
        (finding,) = convo.find("CAP-TOOLS")
        assert finding.severity == severity


def test_logging_notification_needs_logging_capability(convo: Conversation) -> None:
    convo.handshake(server_caps={"tools": {}})
    convo.server(notification("notifications/message", {"level": "info", "data": "x"}))
    assert convo.find("CAP-LOGGING-NOTIFY")[0].severity == "error"


# --------------------------------------------------------------------------- tools and progress


TOOLS = {
    "tools": [
        {
            "name": "add",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"],
            },
        }
    ]
}


def test_tool_rules(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/list"))
    convo.server(result(1, TOOLS))
    convo.client(request(2, "tools/call", {"name": "nope", "arguments": {}}))
    convo.client(request(3, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    convo.client(request(4, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    convo.server(
        result(4, {"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": "3"}})
    )
    convo.client(request(5, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    convo.server(result(5, {"content": [], "isError": True}))
    assert convo.find("TOOL-CALL-KNOWN")[0].data["tool"] == "nope"
    assert "'b' is a required property" in convo.find("TOOL-ARGS-SCHEMA")[0].message
    (conform,) = convo.find("TOOL-OUTPUT-CONFORMS")
    assert conform.severity == "error" and "sum" in conform.data["error"]


def test_progress_rules(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/call", {"name": "x", "_meta": {"progressToken": "p"}}))
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 1}))
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 1}))
    convo.server(notification("notifications/progress", {"progressToken": "zz", "progress": 1}))
    convo.server(result(1, {"content": []}))
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 5}))
    assert len(convo.find("PROG-MONOTONIC")) == 1
    assert convo.find("PROG-ACTIVE-TOKEN")[0].data["token"] == "zz"
    assert len(convo.find("PROG-STOP")) == 1


# --------------------------------------------------------------------------- framing


def test_chunking_does_not_change_records() -> None:
    lines = [
        orjson.dumps(
            request(
                0,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            )
        ),
        orjson.dumps(notification("notifications/initialized")),
        b"garbage line",
        orjson.dumps(request(1, "ping")),
    ]
    stream = b"\r\n".join(lines) + b"\n"
    whole = Conversation()
    whole.client(stream)
    whole.close()
    bytewise = Conversation()
    for i in range(len(stream)):
        bytewise.client(stream[i : i + 1])
    bytewise.close()

    def strip(records: list) -> list:
        return [
            (
                type(r).__name__,
                getattr(r, "raw", None),
                getattr(r, "rule", None),
                getattr(r, "kind", None),
            )
            for r in records
        ]

    assert strip(whole.records) == strip(bytewise.records)


def test_missing_final_newline_is_flushed_as_truncated(convo: Conversation) -> None:
    convo.handshake()
    convo.server(b'{"jsonrpc":"2.0","id":1,"res')
    convo.close()
    (parse,) = convo.find("JR-PARSE")
    assert parse.data["cause"] == "truncated"
    frames = [r.raw for r in convo.records if hasattr(r, "raw")]
    assert frames[-1] == b'{"jsonrpc":"2.0","id":1,"res'


def test_analyzer_errors_are_recorded_not_raised(convo: Conversation, monkeypatch) -> None:
    from mcpsniff.core.rules import registry

    def boom(session, msg):
        raise RuntimeError("bug")

    # A registered rule that raises: the session's dispatch table for ping.
    monkeypatch.setitem(registry.TABLES[registry.REQUEST], "ping", (boom,))
    out = convo.client(request(1, "ping"))
    assert [r.event for r in out if isinstance(r, EventRecord)] == ["analyzer-error"]
    assert "RuntimeError" in out[-1].data["error"]
    assert isinstance(out[0].raw, bytes)


def test_an_analyzer_error_in_one_line_of_a_read_spares_the_others(
    convo: Conversation, monkeypatch
) -> None:
    from mcpsniff.core.rules import registry

    def boom(session, msg):
        raise RuntimeError("bug")

    # One read, three lines: the middle one's analysis fails, the others are whole.
    convo.handshake()
    before = convo.session.counter.value
    monkeypatch.setitem(registry.TABLES[registry.REQUEST], "ping", (boom,))
    lines = [request(1, "tools/list"), request(2, "ping"), request(3, "tools/list")]
    out = convo.client(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    kinds = [type(r).__name__ for r in out]
    assert kinds == [
        "FrameRecord",
        "MessageRecord",
        "FrameRecord",
        "MessageRecord",
        "EventRecord",
        "FrameRecord",
        "MessageRecord",
    ]
    assert out[4].event == "analyzer-error" and out[4].seq == out[2].seq
    frames = [before + 1, before + 2, before + 3]
    assert [r.seq for r in out if isinstance(r, FrameRecord)] == frames
    assert convo.session.counter.value == before + 3


def test_every_reported_rule_is_in_the_catalogue_and_registry() -> None:
    import re
    from pathlib import Path

    from mcpsniff.core import catalog
    from mcpsniff.core.rules import IMPLEMENTED

    root = Path(__file__).resolve().parents[2] / "mcpsniff" / "core"
    source = "\n".join(p.read_text() for p in root.rglob("*.py"))
    used = set(
        re.findall(
            r'"((?:JR|MSG|LC|CAP|MOD|TOOL|RES|PROMPT|LOG|COMPL|PAGE|PING|ROOTS|'
            r'SAMP|ELIC|CANCEL|PROG|STDIO|HTTP|SSE)-[A-Z0-9-]+)"',
            source,
        )
    )
    assert used <= set(IMPLEMENTED) | {"MOD-STDIO-PROBE"}
    for rule in IMPLEMENTED:
        catalog.get(rule)
    families = ("JR-", "MSG-", "LC-", "CAP-")
    assert len(IMPLEMENTED) >= 80
    assert len([r for r in IMPLEMENTED if r.startswith(families)]) >= 50


def test_findings_have_the_required_fields(convo: Conversation) -> None:
    convo.client(b"Loading model...\n")
    for finding in convo.findings:
        assert isinstance(finding, FindingRecord)
        assert finding.severity in ("error", "warning", "info")
        assert finding.message and finding.seq and finding.session == "test"


def test_ids_beyond_64_bits_compare_exactly(convo: Conversation) -> None:
    convo.handshake()
    convo.client(b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}\n')
    convo.server(b'{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}\n')
    assert convo.find("MSG-ID-TYPE") == []
    (finding,) = convo.find("JR-RESP-ID")
    # Not equal (ids compare exactly), and 2**64 + 1 as a double is 2**64: the
    # id lost its last digit on the way, a cause of its own (not "unknown-id").
    assert finding.data["cause"] == "id-precision"


@pytest.mark.parametrize("kind", sorted(session_reference.GENERATORS))
def test_fast_paths_find_what_the_general_path_found(kind: str) -> None:
    """The plain-envelope and inline-pairing shortcuts find exactly what the general path
    of ``1c5b6d6`` found (see ``session_reference``) on ids of every JSON type, duplicates,
    batches, out-of-order and unknown replies, cancellations and hostile envelopes."""
    expected = session_reference.expected()[kind]
    generate = session_reference.GENERATORS[kind]
    differing = [
        seed
        for seed in session_reference.SEEDS
        if session_reference.digest(generate(seed)) != expected[seed]
    ]
    assert differing == [], f"{kind} seeds whose findings differ from 1c5b6d6: {differing[:20]}"
