"""The sans-I/O HTTP-to-MCP adapter: observations in, records out, however the bytes are cut.

Every case is fed three ways: each body whole, split at every position (two
pieces), and byte by byte. The records must be the same, field for field
(frames, messages, findings, transport events, sequence numbers).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.core.observations import (
    CaptureEnd,
    CaptureGap,
    EndpointRewritten,
    ExchangeEnd,
    ExchangeFault,
    HttpGuardAnswered,
    HttpRefused,
    Observation,
    RequestBegin,
    RequestBody,
    RequestCut,
    ResponseBegin,
    ResponseBody,
)
from tests.core.http.adapter_streams import observations, removed_event, stream

DATA = Path(__file__).parents[2] / "data"

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INIT_RESULT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    },
}
LOG = {
    "jsonrpc": "2.0",
    "method": "notifications/message",
    "params": {"level": "info", "data": "x"},
}
POST_HEADERS = (
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
)


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def sse(*events: Any) -> bytes:
    return b"".join(b"event: message\ndata: " + _json(e) + b"\n\n" for e in events)


Cut = Callable[[bytes], list[bytes]]


def whole(data: bytes) -> list[bytes]:
    return [data]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def halves(at: int) -> Cut:
    return lambda data: [data[:at], data[at:]]


def response(number: int, status: int, headers: Any, body: bytes, cut: Cut) -> list[Observation]:
    out: list[Observation] = [ResponseBegin(number, 2.0, status, headers)]
    out += [ResponseBody(number, 2.5, False, piece) for piece in cut(body) if piece]
    out.append(ExchangeEnd(number, 3.0, "complete", True))
    return out


def request(number: int, body: bytes, cut: Cut, headers: Any = POST_HEADERS) -> list[Observation]:
    """A POST whose body is streamed in ``cut`` pieces, the last one with its begin."""
    pieces = cut(body) or [b""]
    out: list[Observation] = []
    offset = 0
    for piece in pieces[:-1]:
        out.append(RequestBody(number, 1.0, offset, piece))
        offset += len(piece)
    out.append(
        RequestBegin(number, 1.0, "POST", "/mcp", headers, None, "c:1", len(body), pieces[-1])
    )
    return out


def run(observations: list[Observation]) -> list[Any]:
    records: list[Record] = []
    recorder = TraceRecorder(None, "http")
    recorder.listeners.append(records.append)
    adapter = ObservationAdapter(recorder, mcp_path="/mcp")
    for observation in [*observations, CaptureEnd(9.0)]:
        adapter.apply(observation)
    return [summary(r) for r in records]


def summary(record: Record) -> Any:
    if isinstance(record, FrameRecord):
        return ("frame", record.seq, record.session, record.direction, record.raw)
    if isinstance(record, MessageRecord):
        return ("message", record.frame, record.kind, record.method, record.id)
    if isinstance(record, FindingRecord):
        return ("finding", record.rule, tuple(record.seq))
    if isinstance(record, EventRecord):
        return ("event", record.seq, record.session, record.event, json.dumps(record.data))
    return (type(record).__name__,)


def cuts(body: bytes) -> Iterator[Cut]:
    yield whole
    yield bytewise
    for at in range(1, len(body), max(1, len(body) // 40)):
        yield halves(at)


SID = ("Mcp-Session-Id", "s-1")


def sse_case(cut: Cut) -> list[Observation]:
    body = sse(LOG, INIT_RESULT)
    headers = (("Content-Type", "text/event-stream"), SID)
    return request(1, _json(INIT), cut) + response(1, 200, headers, body, cut)


def json_case(cut: Cut) -> list[Observation]:
    headers = (("Content-Type", "application/json"), SID)
    return request(1, _json(INIT), cut) + response(1, 200, headers, _json(INIT_RESULT), cut)


def gzip_case(cut: Cut) -> list[Observation]:
    body = gzip.compress(_json(INIT_RESULT))
    headers = (("Content-Type", "application/json"), ("Content-Encoding", "gzip"), SID)
    return request(1, _json(INIT), cut) + response(1, 200, headers, body, cut)


def bad_json_case(cut: Cut) -> list[Observation]:
    headers = (("Content-Type", "application/json"), SID)
    body = b'{"jsonrpc":"2.0","id":1,"result":{},}'  # a trailing comma: JR-PARSE
    return request(1, _json(INIT), cut) + response(1, 200, headers, body, cut)


CASES = {"sse": sse_case, "json": json_case, "gzip": gzip_case, "bad-json": bad_json_case}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_records_however_the_bodies_are_cut(case: str) -> None:
    build = CASES[case]
    expected = run(build(whole))
    assert any(s[0] == "frame" for s in expected)
    body_sizes = {len(o.body) for o in build(whole) if isinstance(o, ResponseBody)}
    for cut in cuts(b"x" * max(body_sizes)):
        assert run(build(cut)) == expected


def test_sse_events_become_frames_and_pair_with_their_request() -> None:
    records = run(sse_case(whole))
    frames = [r for r in records if r[0] == "frame"]
    assert [f[3] for f in frames] == ["c2s", "s2c", "s2c"]
    assert frames[1][4] == _json(LOG) and frames[2][4] == _json(INIT_RESULT)
    messages = [(r[2], r[3]) for r in records if r[0] == "message"]
    assert messages == [("request", "initialize"), ("notification", "notifications/message"),
                        ("response", None)]  # fmt: skip
    assert {f[2] for f in frames} == {"s-1"}


def test_a_gzip_body_is_analyzed_decoded() -> None:
    frames = [r for r in run(gzip_case(whole)) if r[0] == "frame"]
    assert frames[-1][4] == _json(INIT_RESULT)


def test_a_bad_body_is_one_finding_with_the_frame() -> None:
    records = run(bad_json_case(whole))
    assert "JR-PARSE" in [r[1] for r in records if r[0] == "finding"]


def test_the_channel_s_gaps_say_whether_they_may_hide_any_session_s_traffic() -> None:
    """Body pieces are also a gap of their exchange; dropped begins, heads or ends are not."""
    records = run([CaptureGap(1.0, 2, 512), CaptureGap(2.0, 3, 0)])
    gaps = [json.loads(r[4]) for r in records if r[0] == "event" and r[3] == "capture-gap"]
    assert gaps == [
        {"lost_calls": 2, "lost_bytes": 512, "scope": "bodies"},
        {"lost_calls": 3, "lost_bytes": 0, "scope": "capture"},
    ]


def _answer_after_a_lost_begin(gap: list[Observation]) -> list[Any]:
    """A session's GET stream carries the answer to a POST whose begin the channel dropped."""
    sid = (("Mcp-Session-Id", "s1"),)
    get_headers = (("Accept", "text/event-stream"), *sid)
    stream_headers = (("Content-Type", "text/event-stream"), *sid)
    answer = {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}}
    return run(
        [
            *request(1, _json(INIT), whole),
            *response(
                1, 200, (("Content-Type", "application/json"), *sid), _json(INIT_RESULT), whole
            ),
            RequestBegin(2, 1.0, "GET", "/mcp", get_headers, None, "c:1", 0, b""),
            ResponseBegin(2, 2.0, 200, stream_headers),
            *gap,  # here the channel dropped exchange 3's begin (a tools/list, id 5)
            ResponseBody(2, 2.5, False, sse(answer)),
            ExchangeEnd(2, 3.0, "complete", True),
        ]
    )


def test_an_answer_after_the_channel_dropped_its_request_is_not_judged_unknown() -> None:
    """The channel's gap without bytes may hold any exchange's begin (scope "capture")."""
    unknown = [r for r in _answer_after_a_lost_begin([]) if r[:2] == ("finding", "JR-RESP-ID")]
    assert len(unknown) == 1  # without the gap: an id nobody sent
    records = _answer_after_a_lost_begin([CaptureGap(2.2, 1, 0)])
    assert [r for r in records if r[:2] == ("finding", "JR-RESP-ID")] == []


def test_what_the_shell_tells_itself_is_recorded_as_the_trace_always_had_it() -> None:
    """Typed observations (a refusal, an endpoint rewrite, a cut request) become the
    same transport events they were when they travelled as a name and a dict."""
    begin = RequestBegin(1, 1.0, "GET", "/sse", (), None, None, 0, b"")
    records = run(
        [
            HttpRefused(0.5, "bad-request", "bare LF", "127.0.0.1:9"),
            begin,
            ResponseBegin(1, 2.0, 200, (("Content-Type", "text/event-stream"),)),
            EndpointRewritten(1, 2.1, "http://up/m?sessionId=1", "http://me/m?sessionId=1"),
            RequestCut(1, 2.2, 0),
            ExchangeEnd(1, 3.0, "client-disconnected", False),
        ]
    )
    events = [(r[2], r[3], json.loads(r[4])) for r in records if r[0] == "event"]
    assert events[0] == (
        "http",
        "http-refused",
        {"kind": "bad-request", "reason": "bare LF", "client": "127.0.0.1:9"},
    )
    names = [name for _, name, _ in events]
    assert names.index("endpoint-rewrite") < names.index("http-request-cut")
    rewrite = next(data for _, name, data in events if name == "endpoint-rewrite")
    assert rewrite == {
        "exchange": 1,
        "from": "http://up/m?sessionId=1",
        "to": "http://me/m?sessionId=1",
    }


def test_a_guard_answer_is_recorded_in_its_exchange_s_session_after_its_request() -> None:
    body = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}'
    headers = (("Mcp-Session-Id", "s9"), ("Content-Type", "application/json"))
    answer = b'{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"no"}}'
    records = run(
        [
            RequestBegin(1, 1.0, "POST", "/mcp", headers, None, None, len(body), body),
            ResponseBegin(1, 2.0, 200, (("Content-Type", "application/json"),)),
            HttpGuardAnswered(1, 2.0, "x", "forbidden", 4),
            ResponseBody(1, 2.0, True, answer),
            ExchangeEnd(1, 2.0, "complete", True),
        ]
    )
    names = [(r[2], r[3]) for r in records if r[0] == "event"]
    assert names[:3] == [("s9", "http-request"), ("s9", "http-response"), ("s9", "guard-answered")]
    (data,) = [json.loads(r[4]) for r in records if r[0] == "event" and r[3] == "guard-answered"]
    assert data == {"exchange": 1, "tool": "x", "reason": "forbidden", "id": 4}


def test_a_fault_lands_in_its_exchanges_session_before_the_request_frame() -> None:
    """``ExchangeFault`` (mcpsniff http --fault): told after the request began, recorded
    before the frames it marks, in the session the response names."""
    record = {"fault_version": 1, "action": "error", "marks": {"c2s": 1, "s2c": 1}}
    answer = _json({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}})
    headers = (("Content-Type", "application/json"), ("Mcp-Session-Id", "s-1"))
    records = run(
        [
            *request(1, _json(INIT), whole),
            ExchangeFault(1, 1.5, record),
            *response(1, 200, headers, answer, whole),
        ]
    )
    kinds = [(r[0], r[3]) for r in records if r[0] in ("event", "frame")]
    fault_at = kinds.index(("event", "fault"))
    first_frame = next(i for i, k in enumerate(kinds) if k[0] == "frame")
    assert fault_at < first_frame
    fault = next(r for r in records if r[0] == "event" and r[3] == "fault")
    frame = next(r for r in records if r[0] == "frame")
    assert fault[2] == frame[2] and json.loads(fault[4]) == record


class _Log:
    """A recorder that keeps every call, as the recorded outputs have them."""

    def __init__(self) -> None:
        self.out: list[Any] = []

    def event(self, session: str, name: str, t: float, data: Any = None) -> None:
        self.out.append(["event", session, name, t, data])

    def feed_frame(
        self,
        session: str,
        direction: str,
        raw: bytes,
        t: float,
        transport: str | None = None,
        meta: Any = None,
    ) -> None:
        self.out.append(["frame", session, direction, raw.decode("latin-1"), t, transport, meta])

    def close(self, t: float) -> None:
        self.out.append(["close", t])


def test_the_adapter_records_what_it_recorded_before_the_sweep() -> None:
    """A differential test against recorded outputs: 400 random captures (each with
    redaction on and off), replayed now, give the very records the adapter gave before
    issue 24's split (``tests/data/http_adapter_records.jsonl.gz``)."""
    recorded = gzip.decompress((DATA / "http_adapter_records.jsonl.gz").read_bytes())
    lines = recorded.decode().splitlines()
    assert len(lines) == 800
    for on, off in zip(lines[::2], lines[1::2], strict=True):
        seed = json.loads(on)[0]
        plain, rng = stream(seed)
        # The generator picked each mode's settings after the stream, redaction on first.
        for line in (on, off):
            line_seed, redact, expected = json.loads(line)
            assert line_seed == seed and redact is (line is on)
            key_by_host, mcp_path = rng.random() < 0.3, rng.choice([None, "/mcp"])
            log = _Log()
            adapter = ObservationAdapter(
                log, redact=redact, key_by_host=key_by_host, mcp_path=mcp_path
            )
            for observation in observations(plain):
                adapter.apply(observation)
            expected = [entry for entry in expected if not removed_event(entry)]
            assert json.loads(json.dumps(log.out, default=repr)) == expected, (seed, redact)
