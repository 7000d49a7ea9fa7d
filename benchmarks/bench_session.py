"""Benchmark the analyzer's hot path alone: ``Session.feed`` on tools/call traffic.

The stdio relay's analysis process and ``mcpsniff check`` both spend most of
their analysis time in ``Session`` (framing, parsing, classification,
correlation and the rules). This measures that part alone, on the workload of
``bench_stdio_relay.py`` (1 KiB ``tools/call`` requests answered with ~1 KiB
text results, 16 in flight, after a handshake and a ``tools/list`` with an
input schema), without the trace writer or redaction:

* **CPU time per message** of ``Session.feed`` (best of ``--repeat``), against a
  *floor* measured in the same run: the work no analyzer can skip (cutting the
  lines, ``orjson.loads``, one frame record and one message record per line).
  The ratio floor/session says how close the session is to that floor.
* **Python calls and bytecodes per message**, counted with a profile and a
  trace hook: exact and independent of how busy the machine is, so two commits
  can be compared on a shared machine where times swing by 30%.

Usage::

    python benchmarks/bench_session.py                 # 20,000 calls, 5 repeats
    python benchmarks/bench_session.py --calls 5000 --repeat 3

Informational: the exit status is always 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stdio_relay import (
    ECHO_RESULT,
    INIT_RESULT,
    PROTOCOL,
    TOOLS_RESULT,
    message_line,
    request_line,
    response_line,
)

from mcpsniff.core.framing import LineFramer
from mcpsniff.core.model import C2S, REQUEST, S2C, FrameRecord, MessageRecord
from mcpsniff.core.session import Session

#: Requests in flight: each read carries this many lines, as a relay's does.
IN_FLIGHT = 16


def workload(calls: int) -> list[tuple[bytes, bytes]]:
    """Reads of ``IN_FLIGHT`` requests, each followed by the read of their responses."""
    reads = []
    for start in range(10, 10 + calls, IN_FLIGHT):
        ids = range(start, start + IN_FLIGHT)
        reads.append(
            (
                b"".join(request_line(i) for i in ids),
                b"".join(response_line(i, ECHO_RESULT) for i in ids),
            )
        )
    return reads


def ready_session() -> Session:
    """A session past the handshake, with the echo tool's schema listed."""
    session = Session("bench", "stdio")
    init = {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    session.feed(C2S, "stdio", message_line(1, "initialize", init), 1.0)
    session.feed(S2C, "stdio", response_line(1, INIT_RESULT), 1.0)
    session.feed(C2S, "stdio", message_line(0, "notifications/initialized"), 1.0)
    session.feed(C2S, "stdio", message_line(2, "tools/list", {}), 1.0)
    session.feed(S2C, "stdio", response_line(2, TOOLS_RESULT), 1.0)
    return session


def feed_all(session: Session, reads: list[tuple[bytes, bytes]]) -> None:
    """Every read through ``session``: requests at t=2.0, their responses at t=2.5."""
    feed = session.feed
    for requests, responses in reads:
        feed(C2S, "stdio", requests, 2.0)
        feed(S2C, "stdio", responses, 2.5)


def floor(reads: list[tuple[bytes, bytes]]) -> None:
    """What any analyzer does per line: cut it, parse it, record frame and message."""
    framers = {C2S: LineFramer(), S2C: LineFramer()}
    seq = 0
    for requests, responses in reads:
        for direction, data in ((C2S, requests), (S2C, responses)):
            for line in framers[direction].feed(data):
                seq += 1
                frame = FrameRecord(seq, 2.0, "bench", direction, "stdio", line)
                value = orjson.loads(line)
                MessageRecord(seq, "bench", direction, REQUEST, None, value.get("id"), True)
                del frame


def cpu_per_message(run: Callable[[], Any], messages: int, repeat: int) -> float:
    """The best CPU time of ``run`` over ``repeat`` tries, in microseconds per message."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best / messages * 1e6


def counted(reads: list[tuple[bytes, bytes]]) -> tuple[Counter[str], Counter[str]]:
    """Python calls and bytecodes by function while ``reads`` go through a ready session."""
    session = ready_session()
    calls: Counter[str] = Counter()
    codes: Counter[str] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[frame.f_code.co_qualname] += 1

    def trace(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            codes[frame.f_code.co_qualname] += 1
        return trace

    sys.setprofile(profile)
    try:
        feed_all(session, reads)
    finally:
        sys.setprofile(None)
    session = ready_session()
    sys.settrace(trace)
    try:
        feed_all(session, reads)
    finally:
        sys.settrace(None)
    return calls, codes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="tools/call pairs")
    parser.add_argument("--repeat", type=int, default=5, help="timed tries of each loop")
    args = parser.parse_args()
    calls = max(IN_FLIGHT, args.calls - args.calls % IN_FLIGHT)
    reads = workload(calls)
    messages = 2 * calls
    session_us = cpu_per_message(lambda: feed_all(ready_session(), reads), messages, args.repeat)
    floor_us = cpu_per_message(lambda: floor(reads), messages, args.repeat)
    few = workload(min(calls, 2_000))
    python_calls, bytecodes = counted(few)
    counted_messages = 2 * len(few) * IN_FLIGHT
    print(f"{calls:,} tools/call pairs ({messages:,} messages), CPU time, best of {args.repeat}")
    print(f"  Session.feed       {session_us:6.2f} us/message")
    print(f"  floor              {floor_us:6.2f} us/message (framing, orjson.loads, two records)")
    print(f"  ratio floor/session: {floor_us / session_us:.3f}")
    print(
        f"per message (exact, {counted_messages:,} messages): "
        f"{sum(python_calls.values()) / counted_messages:.2f} Python calls, "
        f"{sum(bytecodes.values()) / counted_messages:.1f} bytecodes"
    )
    print("  bytecodes per message by function:")
    for name, count in bytecodes.most_common(12):
        print(f"    {count / counted_messages:7.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
