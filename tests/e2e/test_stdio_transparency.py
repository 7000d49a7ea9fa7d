"""The relay is transparent: arbitrary bytes pass both ways unchanged, and are recorded exactly.

Property tests (hypothesis) run the real ``mcpsniff stdio --no-redact`` process
in front of a real child for every example: invalid UTF-8, CR and CRLF,
multi-megabyte lines, no final newline, and random chunking of what goes into
the relay. The relay's output must equal its input byte for byte, and the raw
frames the trace holds for each direction must concatenate to exactly the
bytes of that direction. Example counts are small because each one spawns
processes.
"""

from __future__ import annotations

import tempfile
from itertools import cycle
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpsniff.core.model import C2S, S2C, FrameRecord
from tests.relay.stdio_support import peer, read_trace, relay, stream

#: Byte sequences that stress framing and decoding.
SPECIAL = [
    b"\n",
    b"\r\n",
    b"\r",
    b"\r\r\n",
    b"\xff",
    b"\xc3",  # a truncated two-byte sequence
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b"\xef\xbb\xbf",  # a BOM
    b"\x00",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"\xff","result":{}}\r\n',
    '{"jsonrpc":"2.0","method":"é"}\n'.encode(),
]
#: Largest repeated run one example may hold, so that runs of several MB occur.
BIG_RUN = 3 << 20


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A byte stream: random bytes, special sequences, many short lines, now and then a huge line.

    Huge runs hold no "\n", so they make lines of several MB rather than
    millions of empty lines (which only measure the analyzer's speed).
    """
    parts: list[bytes] = []
    budget = 6 << 20
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["random", "random", "special", "special", "lines", "run"]))
        if kind == "random":
            parts.append(draw(st.binary(max_size=300)))
        elif kind == "special":
            parts.append(draw(st.sampled_from(SPECIAL)))
        elif kind == "lines":
            line = draw(st.binary(max_size=40)).replace(b"\n", b"") + b"\n"
            parts.append(line * draw(st.integers(1, 2000)))
        else:
            pattern = draw(st.binary(min_size=1, max_size=8).map(lambda b: b.replace(b"\n", b"\r")))
            count = draw(st.integers(0, BIG_RUN // len(pattern)))
            run = pattern * min(count, budget // len(pattern))
            budget -= len(run)
            parts.append(run)
    return b"".join(parts)


chunk_sizes = st.lists(st.integers(1, 1 << 20), min_size=1, max_size=6)
#: Pieces cut by the drawn sizes; the rest of a big input goes in 64 KiB writes,
#: so that size 1 does not mean millions of writes.
MAX_PIECES = 5000


def chunked(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` cut into pieces whose sizes cycle through ``sizes``."""
    pieces = []
    pos = 0
    for size in cycle(sizes):
        if pos >= len(data):
            break
        if len(pieces) >= MAX_PIECES:
            size = 1 << 16
        pieces.append(data[pos : pos + size])
        pos += size
    return pieces


def check_frames(path: Path, c2s: bytes, s2c: bytes) -> None:
    records = read_trace(path)
    assert stream(records, C2S) == c2s
    assert stream(records, S2C) == s2c
    # Frames are split at "\n" only: every frame but a direction's last ends with one.
    for direction in (C2S, S2C):
        frames = [r.raw for r in records if isinstance(r, FrameRecord) and r.direction == direction]
        assert all(raw.endswith(b"\n") for raw in frames[:-1])
        assert all(raw.count(b"\n") <= 1 for raw in frames)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=streams(), sizes=chunk_sizes)
def test_echo_child_round_trip_is_byte_exact(data: bytes, sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "t.jsonl"
        with relay(peer("echo"), "--trace", str(trace), "--no-redact") as r:
            r.send_chunks(chunked(data, sizes))
            assert r.wait() == 0
        assert r.write_error is None
        assert r.stdout.data == data
        check_frames(trace, data, data)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(c2s=streams(), s2c=streams(), in_sizes=chunk_sizes, out_sizes=chunk_sizes)
def test_scripted_peer_both_directions_are_byte_exact(
    c2s: bytes, s2c: bytes, in_sizes: list[int], out_sizes: list[int]
) -> None:
    # The child writes its own script (in its own chunking) while it reads
    # ours: the two directions are independent streams.
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "t.jsonl"
        script = Path(folder) / "out.bin"
        received = Path(folder) / "received.bin"
        script.write_bytes(s2c)
        sizes = ",".join(map(str, out_sizes))
        command = peer("scripted", str(script), str(received), sizes)
        with relay(command, "--trace", str(trace), "--no-redact") as r:
            r.send_chunks(chunked(c2s, in_sizes))
            assert r.wait() == 0
        assert r.write_error is None
        assert received.read_bytes() == c2s  # what the child got
        assert r.stdout.data == s2c  # what the client got
        check_frames(trace, c2s, s2c)


def test_five_megabyte_line_passes_whole_and_is_one_frame(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    # 5 MiB with every byte value but "\n" (so not UTF-8 either).
    body = bytes(range(256)).replace(b"\n", b"N") * (5 * 4096)
    data = b'{"jsonrpc":"2.0","id":7,"method":"x","params":"' + body + b'"}\n' + b"tail \xff"
    with relay(peer("echo"), "--trace", str(trace), "--no-redact") as r:
        r.send_chunks(chunked(data, [1, 65535, 1 << 20, 3]))
        assert r.wait() == 0
    assert r.stdout.data == data
    check_frames(trace, data, data)
    records = read_trace(trace)
    frames = [x.raw for x in records if isinstance(x, FrameRecord) and x.direction == C2S]
    assert frames == [data[: -len(b"tail \xff")], b"tail \xff"]
