"""Tests for mcpsniff.core.framing: LineFramer and SseParser."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.core.framing import LineFramer, SseEvent, SseParser

# --------------------------------------------------------------------------- helpers


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """Split ``data`` at the given offsets (any order, duplicates allowed)."""
    points = sorted({min(max(c, 0), len(data)) for c in cuts})
    chunks = []
    prev = 0
    for point in [*points, len(data)]:
        chunks.append(data[prev:point])
        prev = point
    return chunks


def frame_all(chunks: list[bytes]) -> tuple[list[bytes], bytes | None]:
    framer = LineFramer()
    lines: list[bytes] = []
    for chunk in chunks:
        lines += framer.feed(chunk)
    return lines, framer.flush()


def sse_all(chunks: list[bytes]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.flush()


def fields(event: SseEvent) -> tuple[object, ...]:
    """Everything an event says, except its raw bytes."""
    return (event.data, event.event, event.id, event.retry, event.comments, event.incomplete)


def meaningful(events: list[SseEvent]) -> list[tuple[object, ...]]:
    """Drop a flush-time event that only carries stray terminator bytes."""
    return [
        fields(e)
        for e in events
        if not (e.incomplete and fields(e) == (None, None, None, None, [], True))
    ]


# Bytes that matter to the framers, mixed with arbitrary ones.
_SSE_PIECES = st.sampled_from(
    [
        b"\n",
        b"\r",
        b"\r\n",
        b":",
        b" ",
        b"data",
        b"data: ",
        b"id: ",
        b"event: ",
        b"retry: ",
        b"12",
        b"x",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\x00",
        b"\xc3\xa9",
    ]
)
_SSE_STREAMS = st.one_of(st.binary(max_size=300), st.lists(_SSE_PIECES, max_size=60).map(b"".join))
_LINE_STREAMS = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"\n", b"\r", b"{}", b"abc", b"\xff"]), max_size=60).map(b"".join),
)
_CUTS = st.lists(st.integers(min_value=0, max_value=300), max_size=20)


# --------------------------------------------------------------------------- LineFramer


def test_lines_keep_their_terminator() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}\n', b'{"b":2}\n']
    assert framer.pending == 0
    assert framer.flush() is None


def test_crlf_stays_in_the_line() -> None:
    lines, rest = frame_all([b"one\r\ntwo\r\n"])
    assert lines == [b"one\r\n", b"two\r\n"]
    assert rest is None


def test_lone_cr_does_not_end_a_line() -> None:
    lines, rest = frame_all([b"a\rb\n"])
    assert lines == [b"a\rb\n"]
    assert rest is None


def test_missing_final_newline_is_returned_by_flush() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n{"b":') == [b'{"a":1}\n']
    assert framer.pending == 5
    assert framer.flush() == b'{"b":'
    assert framer.pending == 0
    assert framer.flush() is None


def test_partial_line_completed_by_later_chunks() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"jsonrpc"') == []
    assert framer.feed(b':"2.0"') == []
    assert framer.feed(b"}\n{") == [b'{"jsonrpc":"2.0"}\n']
    assert framer.pending == 1


def test_empty_lines_and_empty_feed() -> None:
    framer = LineFramer()
    assert framer.feed(b"") == []
    assert framer.feed(b"\n\n") == [b"\n", b"\n"]


def test_byte_by_byte() -> None:
    data = b'{"a":1}\r\n\n{"b":"\xc3\xa9"}\nrest'
    lines, rest = frame_all([data[i : i + 1] for i in range(len(data))])
    assert lines == [b'{"a":1}\r\n', b"\n", b'{"b":"\xc3\xa9"}\n']
    assert rest == b"rest"


def test_five_megabyte_line_in_64k_chunks() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + b"x" * (5 * 1024 * 1024) + b'"}}'
    data = body + b"\n" + b'{"id":2}\n'
    step = 64 * 1024
    framer = LineFramer()
    lines: list[bytes] = []
    for i in range(0, len(data), step):
        lines += framer.feed(data[i : i + step])
    assert [len(line) for line in lines] == [len(body) + 1, 9]
    assert lines[0] == body + b"\n"
    assert lines[1] == b'{"id":2}\n'
    assert framer.flush() is None


def test_many_small_lines_in_one_feed() -> None:
    data = b"".join(b'{"id":%d}\n' % i for i in range(10_000))
    lines, rest = frame_all([data])
    assert len(lines) == 10_000
    assert lines[1234] == b'{"id":1234}\n'
    assert rest is None


def test_chunks_of_any_buffer_type_and_a_line_returned_without_a_copy() -> None:
    """bytearray and memoryview chunks frame like bytes; lines are always bytes."""
    for kind in (bytes, bytearray, memoryview):
        framer = LineFramer()
        assert framer.feed(kind(b'{"a":1}\n{"b"')) == [b'{"a":1}\n']
        assert framer.pending == 4
        assert framer.feed(kind(b":2}\n{}\n")) == [b'{"b":2}\n', b"{}\n"]
        assert framer.feed(kind(b"tail")) == []
        assert framer.flush() == b"tail"
        assert all(type(line) is bytes for line in framer.feed(kind(b"x\ny\n")))
    whole = b'{"jsonrpc":"2.0","method":"ping"}\n'
    assert LineFramer().feed(whole)[0] is whole  # one whole line: passed on as it is


@settings(max_examples=200)
@given(data=_LINE_STREAMS, cuts=_CUTS)
def test_line_framer_round_trips_any_chunking(data: bytes, cuts: list[int]) -> None:
    lines, rest = frame_all(split_at(data, cuts))
    assert b"".join(lines) + (rest or b"") == data
    for line in lines:
        assert line.endswith(b"\n")
        assert line.count(b"\n") == 1
    if rest is not None:
        assert rest != b""
        assert b"\n" not in rest
    assert lines == frame_all([data])[0]


# --------------------------------------------------------------------------- SseParser


def test_basic_message_event() -> None:
    events = sse_all([b'event: message\ndata: {"jsonrpc":"2.0"}\n\n'])
    assert events == [
        SseEvent(
            data='{"jsonrpc":"2.0"}',
            event="message",
            raw=b'event: message\ndata: {"jsonrpc":"2.0"}\n\n',
        )
    ]


def test_multi_line_data_is_joined_with_newlines() -> None:
    events = sse_all([b"data: first\ndata:second\ndata:  third\n\n"])
    assert len(events) == 1
    # One space after the colon is dropped, any further ones are data.
    assert events[0].data == "first\nsecond\n third"


def test_cr_only_line_endings() -> None:
    parser = SseParser()
    events = parser.feed(b"id: 7\rdata: a\rdata: b\r\r")
    assert [(e.id, e.data) for e in events] == [("7", "a\nb")]
    assert events[0].raw == b"id: 7\rdata: a\rdata: b\r\r"
    assert parser.last_event_id == "7"


def test_crlf_split_across_chunks_is_one_line_ending() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    events = parser.feed(b"\n\r\n")
    assert len(events) == 1
    assert events[0].data == "a\nb"
    assert events[0].raw == b"data: a\r\ndata: b\r\n\r\n"
    assert parser.flush() == []


def test_crlf_split_at_the_dispatching_blank_line() -> None:
    # The event goes out at the CR; the LF that follows is swallowed, not
    # read as a second blank line, and travels in the next event's raw.
    parser = SseParser()
    first = parser.feed(b"data: a\r\n\r")
    assert [(e.data, e.raw) for e in first] == [("a", b"data: a\r\n\r")]
    second = parser.feed(b"\ndata: b\r\n\r\n")
    assert [(e.data, e.raw) for e in second] == [("b", b"\ndata: b\r\n\r\n")]


def test_id_event_and_retry_fields() -> None:
    parser = SseParser()
    events = parser.feed(b"id: 42\nevent: progress\nretry: 1500\ndata: x\n\n")
    assert len(events) == 1
    assert (events[0].id, events[0].event, events[0].retry) == ("42", "progress", 1500)
    assert parser.last_event_id == "42"
    assert parser.reconnection_time == 1500


def test_invalid_retry_values_are_ignored() -> None:
    parser = SseParser()
    events = parser.feed(
        b"retry: 12a\nretry: -5\nretry: 1.5\nretry:\nretry: \xd9\xa3\nretry: "
        + b"9" * 5000
        + b"\ndata: x\n\n"
    )
    assert len(events) == 1
    assert events[0].retry is None
    assert parser.reconnection_time is None


def test_valid_retry_overrides_earlier_one() -> None:
    events = sse_all([b"retry: 100\nretry: 200\n\n"])
    assert [(e.retry, e.data) for e in events] == [(200, None)]


def test_id_with_nul_is_ignored() -> None:
    parser = SseParser()
    events = parser.feed(b"id: 1\n\nid: a\x00b\ndata: x\n\n")
    assert [e.id for e in events] == ["1", None]
    # The NUL id never reached the last-event-id buffer.
    assert parser.last_event_id == "1"


def test_last_event_id_persists_across_events() -> None:
    parser = SseParser()
    events = parser.feed(b"id: 5\ndata: a\n\ndata: b\n\nid:\ndata: c\n\n")
    assert [e.id for e in events] == ["5", None, ""]
    assert parser.last_event_id == ""


def test_comments_are_recorded() -> None:
    events = sse_all([b": keep-alive\n:raw\n\n"])
    assert len(events) == 1
    assert events[0].comments == ["keep-alive", "raw"]
    assert events[0].data is None
    assert events[0].raw == b": keep-alive\n:raw\n\n"


def test_empty_priming_event_is_emitted() -> None:
    parser = SseParser()
    events = parser.feed(b"id: 1\ndata:\n\n")
    assert events == [SseEvent(data="", id="1", raw=b"id: 1\ndata:\n\n")]
    assert parser.last_event_id == "1"


def test_bom_is_stripped_only_at_stream_start() -> None:
    bom = b"\xef\xbb\xbf"
    events = sse_all([bom[:1], bom[1:] + b"data: x\n\n" + bom + b"data: y\n\n"])
    assert [e.data for e in events] == ["x", None]
    assert events[0].raw == bom + b"data: x\n\n"
    # A second BOM is part of a field name ("\ufeffdata"), an unknown field.
    assert events[1].raw == bom + b"data: y\n\n"


def test_field_without_colon_has_empty_value() -> None:
    events = sse_all([b"data\ndata\n\nevent\nid\n\n"])
    assert [(e.data, e.event, e.id) for e in events] == [("\n", None, None), (None, "", "")]


def test_unknown_field_still_produces_an_event() -> None:
    events = sse_all([b"foo: bar\n\n"])
    assert [(e.data, e.raw) for e in events] == [(None, b"foo: bar\n\n")]


def test_blank_lines_alone_attach_to_the_next_event() -> None:
    parser = SseParser()
    assert parser.feed(b"\n\r\n") == []
    events = parser.feed(b"data: x\n\n")
    assert [(e.data, e.raw) for e in events] == [("x", b"\n\r\ndata: x\n\n")]


def test_blank_lines_at_end_are_returned_by_flush() -> None:
    parser = SseParser()
    assert parser.feed(b"data: x\n\n\n\n") != []
    assert parser.flush() == [SseEvent(raw=b"\n\n", incomplete=True)]


def test_incomplete_event_at_end_of_stream() -> None:
    parser = SseParser()
    assert parser.feed(b'id: 9\ndata: {"jsonrpc":') == []
    rest = parser.flush()
    assert rest == [
        SseEvent(data='{"jsonrpc":', id="9", raw=b'id: 9\ndata: {"jsonrpc":', incomplete=True)
    ]
    # A browser never dispatched it, so its id is not the last event id.
    assert parser.last_event_id is None
    assert parser.flush() == []


def test_invalid_utf8_is_replaced() -> None:
    events = sse_all([b"data: caf\xe9\n\n"])
    assert events[0].data == "caf\ufffd"
    assert events[0].raw == b"data: caf\xe9\n\n"


def test_large_data_line_in_chunks() -> None:
    payload = b"y" * (3 * 1024 * 1024)
    data = b"data: " + payload + b"\r\n\r\n"
    parser = SseParser()
    events: list[SseEvent] = []
    for i in range(0, len(data), 65536):
        events += parser.feed(data[i : i + 65536])
    assert len(events) == 1
    assert events[0].data == payload.decode()
    assert events[0].raw == data


def test_byte_by_byte_sse() -> None:
    data = b"\xef\xbb\xbfid: 1\r\ndata:\r\n\r\n: c\revent: e\rdata: d\r\r"
    events = sse_all([data[i : i + 1] for i in range(len(data))])
    assert [fields(e) for e in events] == [
        ("", None, "1", None, [], False),
        ("d", "e", None, None, ["c"], False),
    ]
    assert b"".join(e.raw for e in events) == data


@settings(max_examples=200)
@given(data=_SSE_STREAMS, cuts=_CUTS)
def test_sse_raw_round_trips_any_chunking(data: bytes, cuts: list[int]) -> None:
    events = sse_all(split_at(data, cuts))
    assert b"".join(e.raw for e in events) == data
    assert all(e.raw for e in events)
    assert not any(e.incomplete for e in events[:-1])
    # Chunking changes at most where a swallowed LF is accounted for.
    assert meaningful(events) == meaningful(sse_all([data]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([b"{}", b"ab", b"\n", b"\r", b"x" * 30, b""]), max_size=30),
    st.lists(st.integers(0, 200), max_size=8),
)
def test_split_gives_feeds_lines_without_their_terminator(
    pieces: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(pieces)
    fed, cut = LineFramer(), LineFramer()
    lines: list[bytes] = []
    parts: list[bytes] = []
    for chunk in split_at(data, cuts):
        lines += fed.feed(chunk)
        parts += cut.split(chunk)
        assert cut.pending == fed.pending
    assert parts == [line[:-1] for line in lines]
    assert all(type(part) is bytes for part in parts)
    assert cut.flush() == fed.flush()
