"""``mcpsniff http --guard enforce`` against hostile request bodies, on real sockets.

What the gate does not refuse reaches the upstream byte for byte (huge, deep,
not JSON, no call, a batch of allowed calls); a batch with a forbidden call in
it is answered whole by mcpsniff and never forwarded; the trace accounts for
every request, and no event-loop error is left behind.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from mcpsniff.guard.enforce import MAX_JUDGED, REFUSED, EnforcePolicy
from tests.hostile.test_http_relay import Relayed, run, through_relay
from tests.relay.hostile_peers import ScriptedUpstream, exchange_raw, read_head

ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


def post(body: bytes) -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def call(ident: int, name: str, **extra: object) -> dict[str, object]:
    params = {"name": name, "arguments": extra}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


BODIES = {
    "huge": orjson.dumps(call(1, "read", blob="x" * (MAX_JUDGED + 1024))),
    "deep": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    "not-json": b"tools/call delete_all \xff\xfe",
    "no-call": orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    "allowed-batch": orjson.dumps([call(1, "read"), call(2, "write")]),
}
FORBIDDEN_BATCH = orjson.dumps(
    [call(1, "read"), {"jsonrpc": "2.0", "method": "notifications/x"}, call(2, "delete_all")]
)


def relayed(
    tmp_path: Path, policy: EnforcePolicy | None
) -> tuple[list[bytes], list[bytes], Relayed]:
    """Every body, then the forbidden batch, through a relay: what the upstream
    received, what the client got, and the trace."""
    received: list[bytes] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_head(reader)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        received.append(head + await reader.readexactly(length))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)
        )
        await writer.drain()

    async def scenario() -> tuple[list[bytes], Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()

        async def talk(port: int) -> list[bytes]:
            return [await exchange_raw(port, post(b)) for b in [*BODIES.values(), FORBIDDEN_BATCH]]

        try:
            return await through_relay(upstream.port, talk, tmp_path, guard=policy)
        finally:
            await upstream.stop()

    answers, trace = run(scenario())
    return received, answers, trace


def test_what_is_not_refused_passes_byte_for_byte_and_a_bad_batch_is_answered(
    tmp_path: Path,
) -> None:
    plain, plain_answers, _ = relayed(tmp_path, None)
    assert len(plain) == len(BODIES) + 1  # guard off: everything reaches the upstream
    policy = EnforcePolicy("http:x", None, ("delete_*",))
    received, answers, trace = relayed(tmp_path, policy)
    # Exactly the bytes the transparent relay forwards, in order: all but the batch.
    assert received == plain[: len(BODIES)]
    assert received[0].endswith(BODIES["huge"]) and received[1].endswith(BODIES["deep"])
    assert answers[:-1] == plain_answers[:-1]
    assert all(a.endswith(ANSWER) for a in answers[:-1])
    head, _, body = answers[-1].partition(b"\r\n\r\n")
    assert b"X-Mcpsniff: guard-refused" in head and b"Connection: close" in head
    first, refused = orjson.loads(body)  # the notification gets no reply
    assert first["id"] == 1 and first["error"]["code"] == REFUSED
    assert "refused this batch: it calls 'delete_all'" in first["error"]["message"]
    assert refused["id"] == 2 and refused["error"]["data"]["tool"] == "delete_all"
    assert len(trace.events("http-request")) == len(BODIES) + 1
    (event,) = trace.events("guard-answered")
    assert event.data["tool"] == "delete_all" and event.data["id"] == 2
    assert trace.outcomes() == ["complete"] * (len(BODIES) + 1)
    assert trace.errors == []
