"""ResponseFaults without sockets: body pieces in, bytes to the client and fault records out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from mcpsniff.core.observations import ExchangeFault
from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.http import ExchangeFaults
from mcpsniff.faults.spec import parse_faults
from mcpsniff.http1.events import Body, End, ResponseHead
from mcpsniff.http1.parser import RequestParser, ResponseParser
from mcpsniff.intercept.http_messages import LAST_CHUNK, chunk
from mcpsniff.intercept.response_faults import (
    JUDGE_LIMIT,
    ResponseFaults,
    call_after,
    judged_response,
    may_match,
    unfinished_json,
)


class Connection:
    """The client connection as ``ResponseFaults`` sees it: what it was sent, cut, told."""

    def __init__(self, *specs: str) -> None:
        self.faults = ExchangeFaults(parse_faults(list(specs)))
        self.told: list[Any] = []
        self.relay = SimpleNamespace(observer=SimpleNamespace(sink=self.told.append))
        self.sent: list[bytes] = []
        self.cuts = 0
        self.late: list[str] = []

    def send(self, data: bytes) -> None:
        self.sent.append(data)

    def cut(self) -> None:
        self.cuts += 1

    def ended_late(self, exchange: object, outcome: str) -> None:
        self.late.append(outcome)


class Remote:
    """The exchange's analysis side: numbered, sees the body as the client got it."""

    number = 7

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    def body_chunk(self, data: bytes) -> None:
        self.seen.append(data)


def _exchange() -> Any:
    return SimpleNamespace(remote=Remote())


def _event(method: str, **params: object) -> bytes:
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    return b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"


def _result(text: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "note": text}})


def test_events_no_fault_can_match_pass_as_they_came() -> None:
    connection = Connection('drop when method == "notifications/progress"')
    exchange = _exchange()
    faults = ResponseFaults(connection, exchange, sse=True, chunked=True)
    block = _event("notifications/message", level="info", data="hello")
    faults.body(block)
    faults.end()
    assert connection.sent == [chunk(block), LAST_CHUNK]
    assert exchange.remote.seen == [block]
    assert connection.told == []


def test_a_dropped_event_is_recorded_not_delivered_and_the_others_go_on() -> None:
    connection = Connection('drop when method == "notifications/progress"')
    exchange = _exchange()
    faults = ResponseFaults(connection, exchange, sse=True, chunked=False)
    progress = _event("notifications/progress", progressToken=1, progress=1)
    log = _event("notifications/message", level="info", data="after")
    faults.body(progress + log)
    faults.end()
    assert connection.sent == [log]
    assert exchange.remote.seen == [progress, log]
    assert len(connection.told) == 1
    told = connection.told[0]
    assert isinstance(told, ExchangeFault)
    assert told.exchange == 7
    assert told.record["delivered"] is False
    assert told.record["action"] == "drop"


def test_a_duplicated_event_goes_twice_and_is_told_once() -> None:
    connection = Connection('duplicate when method == "notifications/progress"')
    faults = ResponseFaults(connection, _exchange(), sse=True, chunked=False)
    progress = _event("notifications/progress", progressToken=1, progress=1)
    faults.body(progress)
    faults.end()
    assert connection.sent == [progress, progress]
    assert [t.record["action"] for t in connection.told] == ["duplicate"]


def test_a_disconnect_sends_half_the_event_then_cuts() -> None:
    connection = Connection('disconnect when method == "notifications/progress"')
    exchange = _exchange()
    faults = ResponseFaults(connection, exchange, sse=True, chunked=False)
    progress = _event("notifications/progress", progressToken=1, progress=1)
    faults.body(progress)
    faults.end()
    assert connection.sent == [progress[: len(progress) // 2]]
    assert connection.cuts == 1
    # The analysis is told what the server sent, whole.
    assert exchange.remote.seen == [progress]


def test_a_json_body_is_judged_whole_at_its_end() -> None:
    connection = Connection("corrupt truncate when direction == s2c")
    faults = ResponseFaults(connection, _exchange(), sse=False, chunked=True)
    body = _result("x" * 50)
    faults.body(body[:20])
    assert connection.sent == []
    faults.body(body[20:])
    faults.end()
    assert connection.sent[-1] == LAST_CHUNK
    delivered = b"".join(connection.sent[:-1])
    assert delivered != chunk(body)
    assert [t.record["action"] for t in connection.told] == ["corrupt"]


def test_a_body_over_the_judge_limit_passes_unjudged() -> None:
    connection = Connection("drop when direction == s2c")
    faults = ResponseFaults(connection, _exchange(), sse=False, chunked=False)
    big = b"x" * (JUDGE_LIMIT + 1)
    faults.body(big)
    faults.end()
    assert connection.sent == [big]
    assert connection.told == []


def test_passes_only_whole_unmatched_events_after_whole_chunks() -> None:
    connection = Connection('drop when method == "notifications/progress"')
    faults = ResponseFaults(connection, _exchange(), sse=True, chunked=True)
    log = _event("notifications/message", level="info", data="x")
    assert faults.passes(log, framed=True)
    assert not faults.passes(log[:-1], framed=True)  # not whole events
    assert not faults.passes(_event("notifications/progress", progressToken=1), framed=True)
    assert not faults.passes(log, framed=False)  # ends inside a chunk
    assert not faults.passes(log, framed=True)  # the piece before did not end a chunk


def test_a_delay_holds_the_rest_in_order_and_an_end_told_meanwhile_waits() -> None:
    connection = Connection('delay 50ms when method == "notifications/progress"')
    faults = ResponseFaults(connection, _exchange(), sse=True, chunked=False)
    progress = _event("notifications/progress", progressToken=1, progress=1)
    log = _event("notifications/message", level="info", data="after")

    async def run() -> None:
        faults.body(progress + log)
        faults.end()
        assert connection.sent == []
        assert faults.busy
        faults.deferred_end = "complete"
        await asyncio.sleep(0.3)

    asyncio.run(run())
    assert connection.sent == [progress, log]
    assert connection.late == ["complete"]
    (told,) = connection.told
    assert told.record["action"] == "delay"
    assert told.record["held_ms"] >= 50


# --------------------------------------------------------------------------- which responses


def _events(*raw: bytes, method: str = "POST") -> list[Any]:
    parser = ResponseParser()
    for _ in raw:
        parser.expect(method)
    return [event for data in raw for event in parser.feed(data)]


def _request(method: str = "POST", version: str = "1.1", *fields: bytes) -> Any:
    parser = RequestParser()
    lines = b"".join(field + b"\r\n" for field in fields)
    head = b"%s /mcp HTTP/%s\r\nHost: x\r\n%s\r\n" % (method.encode(), version.encode(), lines)
    return SimpleNamespace(head=parser.feed(head)[0], swallow=False)


_JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n"
_SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
_BODY = b'{"jsonrpc":"2.0","id":3,"result":{}}'


def test_a_json_response_whose_body_is_not_all_here_waits_from_its_head() -> None:
    assert unfinished_json(_events(_JSON), [_request()]) == 0
    assert unfinished_json(_events(_JSON + _BODY[:9]), [_request()]) == 0
    # Behind a whole one: from its own head on.
    both = _events(_JSON + _BODY, _JSON + _BODY[:3])
    assert unfinished_json(both, [_request(), _request()]) == 3


@pytest.mark.parametrize(
    ("raw", "exchange"),
    [
        (_JSON + _BODY, _request()),  # whole: nothing to wait for
        (_SSE, _request()),  # a stream's head goes on at once
        (_JSON.replace(b"36", b"%d" % (JUDGE_LIMIT + 1)), _request()),  # too big to judge
        (_JSON.replace(b"200 OK", b"404 Not Found"), _request()),  # not judged
        (_JSON.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"), _request()),
        (_JSON, _request("POST", "1.0")),
        (_JSON, _request("GET")),
    ],
)
def test_a_response_that_would_not_be_judged_whole_never_waits(raw: bytes, exchange: Any) -> None:
    assert unfinished_json(_events(raw, method=exchange.head.method), [exchange]) == -1


def test_a_duplicates_response_never_waits() -> None:
    shadow = _request()
    shadow.swallow = True
    assert unfinished_json(_events(_JSON), [shadow]) == -1


def test_judged_response_takes_a_sessions_get_stream_but_no_stream_with_a_length() -> None:
    sse = _events(_SSE, method="GET")[0]
    assert judged_response(_request("GET", "1.1", b"Mcp-Session-Id: s").head, sse, True)
    assert not judged_response(_request("GET").head, sse, True)
    framed = _events(_SSE.replace(b"Transfer-Encoding: chunked", b"Content-Length: 9"))[0]
    assert not judged_response(_request().head, framed, True)
    assert judged_response(_request().head, _events(_JSON)[0], False)


def test_may_match_clears_only_a_whole_body_without_the_name() -> None:
    engine = FaultEngine(parse_faults(['delay 1s when tool == "echo"']))
    head = ResponseHead(
        headers=[], lines=[], raw=b"", names=[], version="HTTP/1.1", status=200, reason="OK"
    )
    plain, named = Body(b"{}", b"{}"), Body(b'"echo"', b'"echo"')
    assert not may_match(engine, [head, plain, End(b"")], 0)
    assert may_match(engine, [head, named, End(b"")], 0)
    assert may_match(engine, [head, plain], 0)  # its end not read yet
    assert not may_match(engine, [head, End(b"")], 0)  # no body: no message to match


class EarlyTimers(asyncio.SelectorEventLoop):
    """A loop whose timers run 2 ms early, as uvloop's whole-millisecond clock can run one
    up to a millisecond early (a ``delay 300ms`` measured 299 ms)."""

    def call_later(self, delay: float, callback: Any, *args: Any, context: Any = None) -> Any:
        return super().call_later(max(0.0, delay - 0.002), callback, *args, context=context)


def test_call_after_never_runs_before_its_time_on_a_loop_whose_timers_run_early() -> None:
    async def held_seconds(schedule: Callable[[float, Callable[[], None]], None]) -> float:
        done = asyncio.get_running_loop().create_future()
        start = time.monotonic()
        schedule(0.05, lambda: done.set_result(time.monotonic() - start))
        return await done

    def bare(seconds: float, callback: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(seconds, callback)

    with asyncio.Runner(loop_factory=EarlyTimers) as runner:
        assert runner.run(held_seconds(bare)) < 0.0495  # the premise: early
        assert all(runner.run(held_seconds(call_after)) >= 0.05 for _ in range(5))
