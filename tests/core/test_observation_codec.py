"""The observation codec: every kind round-trips, and hostile bytes give CodecError, never more."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.core.observation_codec import (
    HEADER_SIZE,
    CodecError,
    decode_all,
    decode_prefix,
    encode,
    encode_bytes,
)
from mcpsniff.core.observations import (
    KINDS,
    CaptureEnd,
    CaptureGap,
    ChildExited,
    ChildSpawned,
    EndpointRewritten,
    ExchangeEnd,
    ExchangeFault,
    FaultInjected,
    GuardAnswered,
    HttpGuardAnswered,
    HttpRefused,
    NoFirstEvent,
    RequestBegin,
    RequestBody,
    RequestCut,
    RequestGap,
    ResponseBegin,
    ResponseBody,
    ResponseGap,
    SignalForwarded,
    SpawnFailed,
    Stderr,
    StdioStart,
    StreamData,
    StreamEnd,
    StreamGap,
    Unreachable,
)

TEXT_HEADERS = (("Content-Type", "application/json"), ("X-É", "vâlue ☃"))
BYTES_HEADERS = ((b"Content-Type", b"text/event-stream"), (b"X-Raw", b"\xff\x00\xc3("))

EXAMPLES = [
    RequestBegin(1, 1.5, "POST", "/mcp?x=1", TEXT_HEADERS, "h:1", "127.0.0.1:5", 7, b'{"a":1}'),
    RequestBegin(2, 1.5, "GET", "/sse", BYTES_HEADERS, None, None, 0, b""),
    RequestBody(3, 2.0, 262144, b"\x00\xff" * 10),
    RequestGap(3, 2.5, 1 << 40),
    ResponseBegin(1, 3.0, 200, TEXT_HEADERS),
    ResponseBegin(2, 3.0, 404, BYTES_HEADERS),
    ResponseBody(1, 3.5, False, b"data: {}\n\n"),
    ResponseBody(1, 3.5, True, b""),
    ResponseGap(1, 4.0, 12345),
    NoFirstEvent(2, 4.5),
    EndpointRewritten(1, 5.0, "http://up:1/m?sessionId=a", "http://127.0.0.1:6280/m?sessionId=a"),
    RequestCut(1, 5.2, 1 << 20),
    ExchangeEnd(1, 5.5, "complete", True),
    Unreachable(4, 6.0, "http://x/mcp", "Connection refused"),
    StdioStart(6.4, ["server", "--token", "[REDACTED]"], 4242),
    ChildSpawned(6.5, 7, "/bin/x"),
    SpawnFailed(6.5, ["nope"], "command not found"),
    SignalForwarded(6.5, "SIGTERM"),
    ChildExited(6.5, -15, 143, "SIGTERM", ["SIGTERM"]),
    ChildExited(6.5, 0, 0, None, []),
    FaultInjected(6.56, {"fault_version": 1, "action": "drop", "marks": {"s2c": 1}}),
    ExchangeFault(4, 6.57, {"fault_version": 1, "action": "status", "code": 404}),
    GuardAnswered(6.55, "delete_all", "forbidden by --forbid-tool 'delete_*'", 7),
    HttpGuardAnswered(2, 6.58, "add", "drifted", "call-1"),
    HttpRefused(6.6, "bad-request", "bare LF", "127.0.0.1:5"),
    HttpRefused(6.7, "head-timeout", "no whole head in 30s", None),
    CaptureGap(7.0, 3, 300),
    CaptureEnd(7.5),
    StreamData("c2s", 8.0, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'),
    StreamData("s2c", 8.5, b"\xff\x00 not utf-8"),
    StreamEnd("c2s", 9.0),
    StreamGap("s2c", 9.5, 1 << 33),
    Stderr(10.0, b"log line\n"),
    Stderr(10.5, b""),
]


def test_every_kind_has_an_example() -> None:
    assert {type(e) for e in EXAMPLES} == set(KINDS)


@pytest.mark.parametrize("observation", EXAMPLES, ids=lambda o: type(o).__name__)
def test_each_kind_round_trips(observation: object) -> None:
    (back,) = decode_all(encode_bytes(observation))
    assert back == observation
    assert type(back) is type(observation)


def test_frames_concatenate_and_bytes_travel_apart_uncopied() -> None:
    big = b"x" * (1 << 20)
    observation = ResponseBody(9, 1.0, False, big)
    head, payload = encode(observation)
    assert payload is big  # written with writev, never copied into the frame
    data = b"".join(encode_bytes(o) for o in EXAMPLES) + head + payload
    assert decode_all(data) == [*EXAMPLES, observation]


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",  # a header cut short
        encode_bytes(EXAMPLES[0])[:-1],  # a frame cut short
        bytes([150]) + b"\x00" * (HEADER_SIZE - 1),  # an unknown tag
        encode_bytes(CaptureEnd(1.0)).replace(b"[1.0]", b"[1.0,2]"),  # metadata of another shape
        encode_bytes(CaptureEnd(1.0)).replace(b"[1.0]", b"{1.0}"),  # no JSON
    ],
)
def test_bad_frames_are_codec_errors(data: bytes) -> None:
    with pytest.raises(CodecError):
        decode_all(data)


def test_only_registered_classes_encode() -> None:
    with pytest.raises(TypeError):
        encode(object())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_codec_error(data: bytes) -> None:
    try:
        result = decode_all(data)
    except CodecError:
        return
    assert all(type(o) in KINDS or type(o).__name__ in ("Sync", "Show") for o in result)


def test_a_prefix_decodes_its_whole_frames_and_leaves_a_cut_one() -> None:
    """A pipe's reader gets frames cut anywhere: whole ones come out, the rest waits."""
    data = b"".join(encode_bytes(o) for o in EXAMPLES)
    for cut in range(len(data) + 1):
        first, used = decode_prefix(data[:cut])
        rest = decode_all(data[used:])
        assert first + rest == EXAMPLES
        assert used <= cut


def test_stream_data_has_a_direction_of_a_stream() -> None:
    with pytest.raises(ValueError):
        encode(StreamData("sideways", 1.0, b""))
    frame = bytearray(encode_bytes(StreamData("c2s", 1.0, b"x")))
    frame[HEADER_SIZE] = 7  # no such direction code
    with pytest.raises(CodecError):
        decode_all(bytes(frame))


def test_a_bad_frame_after_good_ones_ends_the_prefix_and_raises_once_it_comes_first() -> None:
    good = encode_bytes(CaptureEnd(1.0))
    bad = bytes([150]) + b"\x00" * (HEADER_SIZE - 1)
    out, used = decode_prefix(good + bad)
    assert (out, used) == ([CaptureEnd(1.0)], len(good))
    with pytest.raises(CodecError, match="unknown tag"):
        decode_prefix(bad)
    with pytest.raises(CodecError, match="unknown tag"):
        decode_all(good + bad)


def test_bytes_bytearray_and_views_decode_alike_into_bytes_bodies() -> None:
    """The bodies are cut from bytes directly and copied out of anything else: same values."""
    data = b"".join(encode_bytes(o) for o in EXAMPLES)
    for cut in range(0, len(data) + 1, 7):
        expected = decode_prefix(data[:cut])
        for form in (bytearray(data[:cut]), memoryview(data[:cut]), memoryview(data)[:cut]):
            got = decode_prefix(form)
            assert got == expected
            for observation in got[0]:
                body = getattr(observation, "body", b"")
                assert type(body) is bytes
