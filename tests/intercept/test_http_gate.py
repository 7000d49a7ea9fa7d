"""intercept/http_gate.py: ``mcpsniff http --guard enforce`` on one connection (a Playbook).

Events in, bytes and observations out (``tests/relay/playbook.py``): a POST is
held to its end, then forwarded byte for byte or answered by mcpsniff in its
turn; the gate learns each session's tools from the replies it forwarded.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from mcpsniff.guard.enforce import MAX_JUDGED, REFUSED, EnforcePolicy, Gates
from mcpsniff.intercept.http_gate import BoundedDecoder, HttpGate, bounded_decode
from mcpsniff.intercept.http_wire import ClientSide
from tests.relay.playbook import Playbook, Wire


def gated(*forbid: str) -> Playbook:
    book = Playbook()
    book.relay.gate = HttpGate(Gates(EnforcePolicy("http:http://up:80/mcp", None, forbid)))
    return book


def message(start: bytes, body: bytes, *fields: bytes) -> bytes:
    """An HTTP/1.1 message with a JSON body of its Content-Length, and ``fields``."""
    head = start + b"\r\nContent-Type: application/json\r\n" + b"".join(f + b"\r\n" for f in fields)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def post(body: bytes, *fields: bytes) -> bytes:
    return message(b"POST /mcp HTTP/1.1\r\nHost: h", body, *fields)


def reply(body: bytes, *fields: bytes) -> bytes:
    return message(b"HTTP/1.1 200 OK", body, *fields)


def call(ident: object, name: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name}}
    return orjson.dumps(message)


def answer_of(raw: bytes) -> tuple[bytes, dict[str, object]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return head, orjson.loads(body)


def test_a_forbidden_call_is_answered_and_never_forwarded() -> None:
    book = gated("delete_*")
    request = post(call(7, "delete_all"), b"Mcp-Session-Id: s1")
    book.client_sends(request[:40]).client_sends(request[40:])
    assert book.to_upstream() == b""
    head, answer = answer_of(book.to_client())
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Content-Type: application/json" in head and b"X-Mcpsniff: guard-refused" in head
    assert answer["id"] == 7
    assert answer["error"]["code"] == REFUSED  # type: ignore[index]
    assert "forbidden by --forbid-tool 'delete_*'" in answer["error"]["message"]  # type: ignore[index]
    kinds = [o[0] for o in book.observed()]
    assert kinds == [
        "RequestBegin",
        "ResponseBegin",
        "HttpGuardAnswered",
        "ResponseBody",
        "ExchangeEnd",
    ]
    assert not book.client_wire.closed  # keep-alive: the next request may follow


def test_an_allowed_call_is_forwarded_byte_for_byte_at_its_end() -> None:
    book = gated("delete_*")
    chunked = (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\n" + call(1, "read")[:5] + b"\r\n"
    )
    rest = call(1, "read")[5:]
    book.client_sends(chunked)
    assert book.to_upstream() == b""  # held until its end
    book.client_sends(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
    assert book.to_upstream() == chunked + b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest)
    book.upstream_sends(reply(b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    assert book.to_client().endswith(b'"result":{}}')


def test_gets_and_bodies_that_are_no_call_pass_unchanged() -> None:
    book = gated("x")
    get = b"GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n"
    book.client_sends(get)
    assert book.to_upstream() == get  # not held: a stream may stay open
    book.upstream_sends(b"HTTP/1.1 405 No\r\nContent-Length: 0\r\n\r\n")
    deep = b'[{"method":"tools/call","id":1,"params":' + b"[" * 100_000 + b"]" * 100_000 + b"}]"
    for body in [b"not json", b"[1,2", b'{"id":1,"method":"x"}', deep]:
        request = post(body)
        book.client_sends(request)
        assert book.to_upstream() == request
        book.upstream_sends(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    assert book.to_client().count(b"HTTP/1.1 202") == 4


def test_a_body_too_long_to_judge_is_forwarded_unjudged() -> None:
    book = gated("x")
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","p":"'
    big += b"a" * MAX_JUDGED + b'"}}'
    request = post(big)
    book.client_sends(request[: MAX_JUDGED // 2])
    assert book.to_upstream() == b""
    book.client_sends(request[MAX_JUDGED // 2 :])
    assert book.to_upstream() == request


def test_an_answer_waits_for_earlier_responses_and_keeps_their_order() -> None:
    """Pipelined: a forwarded call, a refused one, a forwarded one. The answer goes
    out after the first response, and the third response pairs with its request."""
    book = gated("bad")
    first, second, third = post(call(1, "ok")), post(call(2, "bad")), post(call(3, "ok"))
    book.client_sends(first + second + third)
    assert book.to_upstream() == first + third
    assert book.to_client() == b""  # the refusal waits its turn
    one = reply(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    three = reply(b'{"jsonrpc":"2.0","id":3,"result":{}}')
    book.upstream_sends(one + three)
    out = book.to_client()
    assert out.startswith(one) and out.endswith(three)
    _, answer = answer_of(out[len(one) : -len(three)])
    assert answer["id"] == 2
    ends = [o for o in book.observed() if o[0] == "ExchangeEnd"]
    assert [e[1] for e in ends] == [1, 2, 3] and {e[2] for e in ends} == {"complete"}


def test_the_gate_learns_each_session_from_json_and_sse_replies() -> None:
    from mcpsniff.guard.lockfile import Lock
    from mcpsniff.guard.stored import listed_from_offer
    from tests.guard.offers import offer, tool

    identity = "http:http://up:80/mcp [srv]"
    lock = Lock(
        Path("l"), {identity: listed_from_offer(offer(identity, tool("add")).definitions())}
    )
    book = Playbook()
    gates = Gates(EnforcePolicy("http:http://up:80/mcp", lock))
    book.relay.gate = HttpGate(gates)
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    book.client_sends(post(init))
    book.upstream_sends(
        reply(
            b'{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"srv"}}}',
            b"Mcp-Session-Id: abc",
        )
    )
    listing = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    book.client_sends(post(listing, b"Mcp-Session-Id: abc"))
    event = orjson.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool("add")]}})
    stream = gzip.compress(b"event: message\ndata: " + event + b"\n\n")
    book.upstream_sends(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(stream), stream)
    )
    book.to_client(), book.to_upstream()
    assert gates.gate("abc").reason("add") is None
    book.client_sends(post(call(3, "add"), b"Mcp-Session-Id: abc"))
    assert book.to_upstream().endswith(call(3, "add"))  # pinned, listed, unchanged
    book.upstream_sends(reply(b'{"jsonrpc":"2.0","id":3,"result":{}}'))
    book.to_client()
    book.client_sends(post(call(4, "add"), b"Mcp-Session-Id: other"))
    assert book.to_upstream() == b""  # another session listed nothing, knows no name
    _, answer = answer_of(book.to_client())
    assert "is not pinned" in answer["error"]["message"]  # type: ignore[index]


def test_a_compressed_request_is_judged_decoded_or_refused_unread() -> None:
    book = gated("delete_*")
    book.client_sends(post(gzip.compress(call(1, "delete_x")), b"Content-Encoding: gzip"))
    assert book.to_upstream() == b""
    _, answer = answer_of(book.to_client())
    assert answer["id"] == 1
    book.client_sends(post(b"\x00\x01", b"Content-Encoding: br"))
    assert book.to_upstream() == b""
    _, unread = answer_of(book.to_client())
    assert unread["id"] is None
    assert "cannot read: content-encoding 'br'" in unread["error"]["message"]  # type: ignore[index]


def test_the_decoder_stops_at_the_bound() -> None:
    bomb = gzip.compress(b"\x00" * (MAX_JUDGED + 10))
    decoded, why = bounded_decode(bomb, "gzip")
    assert decoded is None and why is not None and "over" in why
    decoder = BoundedDecoder()
    assert decoder.decode(b"not gzip") == b"" and decoder.broken
    assert bounded_decode(gzip.compress(b"{}"), "x-gzip") == (b"{}", None)


@pytest.mark.parametrize("close", [b"Connection: close", None])
def test_an_answer_to_a_closing_request_closes(close: bytes | None) -> None:
    book = gated("x")
    fields = [close] if close else []
    book.client_sends(post(call(1, "x"), *fields))
    head, _ = answer_of(book.to_client())
    assert (b"Connection: close" in head) == (close is not None)
    assert book.client_wire.closed == (close is not None)


def test_an_unreachable_upstream_answers_502_in_turn_and_the_guard_its_own() -> None:
    book = gated("bad")
    book.client_sends(post(call(1, "ok")) + post(call(2, "bad")))
    book.client._unreachable("connection refused")
    out = book.to_client()
    assert out.startswith(b"HTTP/1.1 502 Bad Gateway")
    assert out.index(b"502 Bad Gateway") < out.index(b"X-Mcpsniff: guard-refused")
    assert out.endswith(b'"tool":"bad"}}}')
    kinds = [(o[0], o[1]) for o in book.observed() if o[0] in ("Unreachable", "HttpGuardAnswered")]
    assert kinds == [("Unreachable", 1), ("HttpGuardAnswered", 2)]


def test_a_held_request_cut_off_never_reached_the_upstream() -> None:
    book = gated("x")
    request = post(call(1, "x"))
    book.client_sends(request[:-5]).client_closes()
    assert book.to_upstream() == b""
    observed = book.observed()
    assert [o[0] for o in observed] == ["RequestBegin", "ExchangeEnd"]  # no RequestCut
    assert observed[-1][2:] == ("client-disconnected mid-body", False)


def test_a_held_request_whose_framing_breaks_is_answered_400_unforwarded() -> None:
    book = gated("x")
    book.client_sends(
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n"
    )
    assert book.to_upstream() == b""
    assert book.to_client().startswith(b"HTTP/1.1 400 Bad Request")
    assert book.client_wire.closed


def test_every_connection_together_holds_no_more_than_the_budget() -> None:
    book = gated("x")
    gate = book.relay.gate
    assert gate is not None
    gate.budget = 4096
    body = call(1, "read") + b" " * 3000
    first = post(body)
    book.client_sends(first[:-10])
    assert 3000 < gate.held <= 4096 and book.to_upstream() == b""
    other = ClientSide(book.relay)
    wire = Wire(("127.0.0.1", 50001))
    other.connection_made(wire)  # type: ignore[arg-type]
    other.data_received(post(body)[:-10])
    assert wire.written.startswith(b"HTTP/1.1 503 Service Unavailable") and wire.closed
    assert "too many request bytes held" in wire.written.decode()
    book.client_sends(first[-10:])
    assert book.to_upstream() == first  # the first one is judged and forwarded whole
    assert gate.held == 0  # nothing held is left counted
    book.client_sends(post(call(2, "read"))[:-3]).client_closes()
    assert gate.held == 0  # a request cut off is no longer counted either


def test_a_refused_notification_is_acknowledged_202_and_never_forwarded() -> None:
    book = gated("delete_*")
    note = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}}'
    book.client_sends(post(note))
    assert book.to_upstream() == b""
    head, _, body = book.to_client().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 202 Accepted\r\n") and b"Content-Length: 0" in head
    assert body == b""
    kinds = [o[0] for o in book.observed()]
    assert kinds == ["RequestBegin", "ResponseBegin", "HttpGuardAnswered", "ExchangeEnd"]


def test_a_reply_too_big_for_the_budget_teaches_nothing_and_is_let_go_of() -> None:
    book = gated("x")
    gate = book.relay.gate
    assert gate is not None
    gate.budget = 2048
    listing = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    tools = [{"name": f"t{n}", "description": "d" * 100} for n in range(30)]
    big = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
    book.client_sends(post(listing, b"Mcp-Session-Id: s"))
    book.upstream_sends(reply(big)[:-100])
    assert gate.held == 0  # over the budget: it stopped reading and let go
    book.upstream_sends(reply(big)[-100:])
    assert book.to_client() == reply(big)  # forwarded all the same
    assert gate.gates.gate("s").listed is None
    small = orjson.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools[:2]}})
    book.client_sends(post(listing.replace(b'"id":1', b'"id":2'), b"Mcp-Session-Id: s"))
    book.upstream_sends(reply(small))
    listed = gate.gates.gate("s").listed
    assert listed is not None and sorted(listed) == ["tool:t0", "tool:t1"]
    assert gate.held == 0
