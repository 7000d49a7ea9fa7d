"""intercept/http_wire.py: the forwarding path of one client connection.

The connection logic runs in a Playbook (``tests/relay/playbook.py``: events
in, bytes and observations out, no sockets), and on real sockets on 127.0.0.1
(a scripted raw upstream, a raw client), where what is asserted is the bytes
each side got and what the trace paired with what.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.hostile.test_http_relay import Relayed, run, through_relay
from tests.relay.hostile_peers import BOUND, ScriptedUpstream, read_head, statuses
from tests.relay.playbook import Playbook

# --------------------------------------------------------------------------- on real sockets


def test_pipelined_responses_pair_with_their_requests_in_order(tmp_path: Path) -> None:
    """Three requests in one write; the upstream answers only once it has all three,
    each with its own status: the client gets them in order and the trace pairs
    each exchange's path with its own status (FIFO, RFC 9112 §9.3.2)."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads = [await read_head(reader) for _ in range(3)]
        for head in heads:
            target = head.split(b" ")[1]
            status = 200 + int(target[1:])
            writer.write(
                b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(target), target)
            )
        await writer.drain()
        await reader.read()

    async def scenario() -> tuple[bytes, Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()

        async def talk(port: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"".join(b"GET /%d HTTP/1.1\r\nHost: h\r\n\r\n" % i for i in range(3)))
            try:
                return await asyncio.wait_for(reader.readuntil(b"/2"), BOUND)
            finally:
                writer.close()

        try:
            return await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()

    answer, relayed = run(scenario())
    assert statuses(answer) == [200, 201, 202]
    assert answer.endswith(b"/0" + answer[answer.index(b"HTTP/1.1 201") :])
    paths = {e.data["exchange"]: e.data["path"] for e in relayed.events("http-request")}
    pairs = [(paths[e.data["exchange"]], e.data["status"]) for e in relayed.events("http-response")]
    assert pairs == [("/0", 200), ("/1", 201), ("/2", 202)]
    assert relayed.outcomes() == ["complete"] * 3
    assert relayed.errors == []


@pytest.mark.parametrize("split", [1, 7, None])
def test_what_the_upstream_receives_has_no_hop_by_hop_field_however_it_arrives(
    split: int | None, tmp_path: Path
) -> None:
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    received = bytearray()

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await read_head(reader))
        received.extend(await reader.readuntil(b"0\r\n\r\n"))
        writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        await writer.drain()

    async def scenario() -> tuple[bytes, Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()

        async def talk(port: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            step = split or len(request)
            for at in range(0, len(request), step):
                writer.write(request[at : at + step])
                await writer.drain()
            try:
                return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BOUND)
            finally:
                writer.close()

        try:
            return await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()

    answer, relayed = run(scenario())
    assert statuses(answer) == [204]
    assert b"Connection" not in answer  # the upstream's close is its own hop's business
    assert bytes(received) == (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    assert relayed.errors == []


# --------------------------------------------------------------------------- playbook (no sockets)

POST = (
    b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 40\r\n\r\n"
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
)
JSON_OK = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n"
    b'{"jsonrpc":"2.0","id":1,"result":{}}'
)


def test_playbook_a_request_goes_up_and_its_response_down_then_both_are_observed() -> None:
    play = Playbook()
    play.client_sends(POST)
    assert play.to_upstream() == POST
    assert play.observed() == [
        ("RequestBegin", 1, "POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    ]
    play.upstream_sends(JSON_OK)
    assert play.to_client() == JSON_OK
    assert play.observed() == [
        ("ResponseBegin", 1, 200),
        ("ResponseBody", 1, b'{"jsonrpc":"2.0","id":1,"result":{}}'),
        ("ExchangeEnd", 1, "complete", True),
    ]
    assert not play.client_wire.closed and not play.upstream_wire.closed


@pytest.mark.parametrize("split", [1, 5, 1000])
def test_playbook_a_request_split_anywhere_is_forwarded_and_observed_the_same(split: int) -> None:
    play = Playbook()
    for start in range(0, len(POST), split):
        play.client_sends(POST[start : start + split])
    assert play.to_upstream() == POST
    assert [o[:2] for o in play.observed()] == [("RequestBegin", 1)]


def test_playbook_a_response_that_comes_before_its_request_ends_is_observed_after_it() -> None:
    """An upstream may answer early (a 413, say); the observer is told in order anyway."""
    play = Playbook()
    head, body = POST.split(b"\r\n\r\n")
    play.client_sends(head + b"\r\n\r\n" + body[:10])
    play.upstream_sends(b"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n")
    assert play.to_client().startswith(b"HTTP/1.1 413")
    assert play.observed() == []  # the request is not in yet
    play.client_sends(body[10:])
    assert play.observed() == [
        ("RequestBegin", 1, "POST", "/mcp", body),
        ("ResponseBegin", 1, 413),
        ("ExchangeEnd", 1, "complete", True),
    ]


def test_playbook_pipelined_requests_pair_with_responses_in_order() -> None:
    play = Playbook()
    play.client_sends(b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n")
    assert play.to_upstream().count(b"GET /") == 2
    play.upstream_sends(b"HTTP/1.1 201 X\r\nContent-Length: 1\r\n\r\naHTTP/1.1 202 Y\r\n")
    play.upstream_sends(b"Content-Length: 1\r\n\r\nb")
    assert statuses(play.to_client()) == [201, 202]
    observed = play.observed()
    assert [o for o in observed if o[0] == "RequestBegin"] == [
        ("RequestBegin", 1, "GET", "/a", b""),
        ("RequestBegin", 2, "GET", "/b", b""),
    ]
    assert [o for o in observed if o[0] == "ResponseBegin"] == [
        ("ResponseBegin", 1, 201),
        ("ResponseBegin", 2, 202),
    ]


def test_playbook_a_malformed_head_gets_400_and_nothing_reaches_the_upstream() -> None:
    play = Playbook()
    play.client_sends(b"GET /mcp HTTP/1.1\nHost: h\n\n")
    assert play.to_upstream() == b""
    answer = play.to_client()
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"X-Mcpsniff: refused" in answer
    assert play.client_wire.closed
    assert play.relay.refusals == [("127.0.0.1:50000", "bad-request", "bare CR or LF in the head")]
    assert play.observed() == []


def test_playbook_a_well_formed_head_passes_where_a_malformed_one_does_not() -> None:
    """The near miss of the test above: the same request with CRLFs is relayed."""
    play = Playbook()
    play.client_sends(b"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n")
    assert play.to_upstream() == b"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n"
    assert play.relay.refusals == [] and not play.client_wire.closed


def test_playbook_a_body_cut_mid_way_is_observed_as_a_cut_request() -> None:
    play = Playbook()
    play.client_sends(POST[:-5])
    play.client_closes()
    observed = play.observed()
    assert observed[0][:4] == ("RequestBegin", 1, "POST", "/mcp")
    assert observed[1:] == [
        ("RequestCut", 1, 35),
        ("ExchangeEnd", 1, "client-disconnected mid-body", False),
    ]
    # Cut, so that the upstream stops working on a request nobody waits for.
    assert play.upstream_wire.aborted


def test_playbook_an_upstream_breaking_a_response_off_aborts_the_client_too() -> None:
    play = Playbook()
    play.client_sends(POST)
    play.observed()
    play.upstream_sends(JSON_OK[:-5])
    play.upstream_closes(ConnectionResetError("reset"))
    assert play.to_client() == JSON_OK[:-5]
    assert play.client_wire.aborted
    # The body delimited by its length never ended: the framer says so, the end is whole
    # (the server's message is truncated, which the analysis may judge).
    assert play.observed()[-1] == (
        "ExchangeEnd",
        1,
        "upstream-error: connection closed mid-message",
        True,
    )


def test_playbook_a_response_nobody_asked_for_closes_the_upstream_and_is_recorded() -> None:
    play = Playbook()
    play.upstream_sends(JSON_OK)
    assert play.to_client() == b""
    assert play.upstream_wire.aborted
    assert play.relay.refusals == [
        ("127.0.0.1:50000", "upstream-unrequested", "a response without a request")
    ]


def test_playbook_a_legacy_endpoint_is_held_rewritten_and_observed() -> None:
    """A session-less GET stream's first event is a legacy endpoint naming the upstream:
    the client gets it pointing at the proxy, re-chunked, and the rewrite is observed."""

    async def scenario() -> Playbook:
        play = Playbook()
        play.client_sends(b"GET /sse HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n")
        play.upstream_sends(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        event = b"event: endpoint\ndata: http://up:80/messages?sessionId=7\n\n"
        play.upstream_sends(b"%x\r\n%s\r\n" % (len(event[:9]), event[:9]))
        assert play.to_client().startswith(b"HTTP/1.1 200 OK\r\n")  # the head, not the event
        play.upstream_sends(b"%x\r\n%s\r\n" % (len(event[9:]), event[9:]))
        return play

    play = run(scenario())
    rewritten = b"event: endpoint\ndata: http://proxy:6280/messages?sessionId=7\n\n"
    assert play.to_client() == b"%x\r\n%s\r\n" % (len(rewritten), rewritten)
    observed = play.observed()
    assert (
        "EndpointRewritten",
        1,
        "http://up:80/messages?sessionId=7",
        "http://proxy:6280/messages?sessionId=7",
    ) in observed


def test_playbook_a_stream_that_names_its_session_is_not_held() -> None:
    """The near miss: a GET stream sent with Mcp-Session-Id passes at once, unrewritten."""
    play = Playbook()
    play.client_sends(b"GET /mcp HTTP/1.1\r\nHost: h\r\nMcp-Session-Id: s\r\n\r\n")
    play.upstream_sends(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    event = b"event: endpoint\ndata: http://up:80/messages?sessionId=7\n\n"
    play.upstream_sends(b"%x\r\n%s\r\n" % (len(event), event))
    assert play.to_client().endswith(event + b"\r\n")
    assert not any(o[0] == "EndpointRewritten" for o in play.observed())
