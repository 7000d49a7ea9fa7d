"""What the relay finds and records in real MCP traffic: classic bugs, batches, redaction.

Real servers (the demo server, ``batch_server.py``, an echoing child) run
behind a real ``mcpsniff stdio`` process; a scripted client drives them
through its stdin and stdout, one request at a time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcpsniff.core.model import C2S, S2C, FrameRecord
from mcpsniff.core.redact import MARK
from tests.relay.stdio_support import (
    BATCH_SERVER,
    Client,
    findings,
    messages,
    peer,
    read_trace,
    relay,
    stream,
)

DEMO_SERVER = [sys.executable, "-m", "mcpsniff.demo.server"]


def rules(records: list[Any]) -> set[str]:
    return {f.rule for f in findings(records)}


# --------------------------------------------------------------------------- classic bugs


def test_banner_on_stdout_gives_stdout_clean_and_parse_log_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    with relay([*DEMO_SERVER, "--banner"], "--trace", str(trace)) as r:
        client = Client(r)
        client.handshake()
        client.request(2, "tools/list")
        assert r.finish() == 0
    assert r.stdout.data.startswith(b"Loading model...\n")  # passed on as it came
    records = read_trace(trace)
    (clean,) = findings(records, "STDIO-STDOUT-CLEAN")
    (parse,) = findings(records, "JR-PARSE")
    assert parse.data["cause"] == "log-line"
    assert parse.data["sender"] == "server"
    (banner,) = [x for x in records if isinstance(x, FrameRecord) and x.seq in parse.seq]
    assert banner.raw == b"Loading model...\n" and banner.direction == S2C
    assert clean.seq == parse.seq


def test_client_skipping_initialized_gives_lc_initialized_missing(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    with relay(DEMO_SERVER, "--trace", str(trace)) as r:
        client = Client(r)
        client.handshake(initialized=False)
        client.request(2, "tools/list")
        assert r.finish() == 0
    records = read_trace(trace)
    (missing,) = findings(records, "LC-INITIALIZED-MISSING")
    init, init_response = missing.seq
    by_seq = {m.frame: m for m in messages(records) if m.index is None}
    assert by_seq[init].method == "initialize" and by_seq[init].direction == C2S
    assert by_seq[init_response].answers == init


def test_string_ids_give_jr_resp_id_with_cause_id_type(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    with relay([*DEMO_SERVER, "--string-ids"], "--trace", str(trace)) as r:
        client = Client(r)
        reply = client.handshake()
        assert reply["id"] == "1"
        client.request(2, "ping")
        assert r.finish() == 0
    records = read_trace(trace)
    wrong = findings(records, "JR-RESP-ID")
    assert [f.data.get("cause") for f in wrong] == ["id-type", "id-type"]
    assert [(f.data["request_id"], f.data["response_id"]) for f in wrong] == [(1, "1"), (2, "2")]
    # The responses are still paired with their requests, flagged as mismatched.
    responses = [m for m in messages(records) if m.direction == S2C]
    assert [m.note for m in responses] == ["id-type-mismatch", "id-type-mismatch"]
    assert all(m.answers is not None for m in responses)


def test_batch_answered_out_of_order_is_paired_element_by_element(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    batch = [
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    with relay([sys.executable, BATCH_SERVER], "--trace", str(trace)) as r:
        client = Client(r)
        assert client.handshake("2025-03-26")["result"]["protocolVersion"] == "2025-03-26"
        r.send_json(batch)
        reply = client.response(4)
        assert [item["id"] for item in reply] == [4, 3, 2]  # reversed
        assert r.finish() == 0
    records = read_trace(trace)
    assert findings(records) == []
    elements = [m for m in messages(records) if m.index is not None]
    requests = {m.id: m for m in elements if m.direction == C2S and m.kind == "request"}
    responses = {m.id: m for m in elements if m.direction == S2C}
    assert set(requests) == set(responses) == {2, 3, 4}
    for id_, response in responses.items():
        request = requests[id_]
        assert response.answers == request.frame
        assert response.request_index == request.index
        assert response.method is None or response.method == request.method
    assert [responses[i].index for i in (4, 3, 2)] == [0, 1, 2]
    assert [requests[i].index for i in (2, 3, 4)] == [0, 1, 2]


# --------------------------------------------------------------------------- redaction

SECRETS = ["sk-live-0123456789abcdef", "hunter2-correct-horse", "abcdef123456"]
PROTOCOL_VALUES = ["tok-progress-77", "cursor-next-99"]


def secret_traffic() -> bytes:
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {
            "name": "fetch",
            "arguments": {
                "api_key": SECRETS[0],
                "password": SECRETS[1],
                "headers": {"Authorization": f"Bearer {SECRETS[2]}"},
                "note": f"or send Bearer {SECRETS[2]} by hand",
            },
            "_meta": {"progressToken": PROTOCOL_VALUES[0]},
        },
    }
    page = {"jsonrpc": "2.0", "id": 6, "result": {"tools": [], "nextCursor": PROTOCOL_VALUES[1]}}
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": PROTOCOL_VALUES[0], "progress": 1},
    }
    return b"".join(json.dumps(m).encode() + b"\n" for m in (call, page, progress))


def run_echo_with_secrets(tmp_path: Path, *options: str) -> tuple[bytes, bytes, bytes]:
    """Relay ``secret_traffic`` through a child that echoes it on stdout and logs it on stderr."""
    trace = tmp_path / "t.jsonl"
    data = secret_traffic()
    with relay(peer("echo", "--stderr"), "--trace", str(trace), *options) as r:
        r.send(data)
        r.wait_stdout(data)
        assert r.finish() == 0
    # Forwarded bytes are never changed: the child received every secret
    # (it echoed exactly what it got), and so did the client.
    assert r.stdout.data == data
    assert r.stderr.data.endswith(data)
    return data, trace.read_bytes(), r.stderr.data


def test_secrets_never_reach_the_trace_but_do_reach_the_child(tmp_path: Path) -> None:
    data, trace_bytes, _ = run_echo_with_secrets(tmp_path)
    for secret in SECRETS:
        assert secret.encode() not in trace_bytes, secret
    assert MARK.encode() in trace_bytes
    for value in PROTOCOL_VALUES:
        assert value.encode() in trace_bytes, value
    records = read_trace(tmp_path / "t.jsonl")
    c2s = stream(records, C2S)
    # Same shape, same terminators: only the secret values became the mark.
    assert c2s.count(b"\n") == data.count(b"\n")
    redacted = json.loads(c2s.split(b"\n")[0])
    arguments = redacted["params"]["arguments"]
    assert arguments["api_key"] == MARK and arguments["password"] == MARK
    assert arguments["headers"]["Authorization"] == MARK
    assert arguments["note"] == f"or send Bearer {MARK} by hand"
    assert redacted["params"]["_meta"]["progressToken"] == PROTOCOL_VALUES[0]


def test_no_redact_records_secrets_as_they_are(tmp_path: Path) -> None:
    data, trace_bytes, _ = run_echo_with_secrets(tmp_path, "--no-redact")
    records = read_trace(tmp_path / "t.jsonl")
    assert stream(records, C2S) == data
    assert stream(records, S2C) == data
    for value in [*SECRETS, *PROTOCOL_VALUES]:
        assert value.encode() in trace_bytes, value
    assert MARK.encode() not in trace_bytes
