"""Bad traffic is data, not an exception (docs/architecture.md, invariant 3).

Hypothesis streams arbitrary bytes and arbitrary JSON values, in arbitrary
chunkings, through a Session. Nothing may escape as an exception, no analyzer
error may be recorded, and every byte must come back in a frame record.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.core.session import Session

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                [
                    "jsonrpc",
                    "id",
                    "method",
                    "params",
                    "result",
                    "error",
                    "code",
                    "message",
                    "_meta",
                    "progressToken",
                    "requestId",
                    "protocolVersion",
                    "capabilities",
                    "tools",
                    "name",
                    "arguments",
                    "inputSchema",
                    "x",
                ]
            )
            | st.text(max_size=8),
            children,
            max_size=6,
        )
    ),
    max_leaves=25,
)

methods = st.sampled_from(
    [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "ping",
        "notifications/cancelled",
        "notifications/progress",
        "resources/read",
        "server/discover",
        "sampling/createMessage",
        "logging/setLevel",
        "completion/complete",
        "weird",
    ]
)

messages = st.builds(
    lambda method, id_, params, kind: (
        {"jsonrpc": "2.0", "method": method, "id": id_, "params": params}
        if kind == 0
        else {"jsonrpc": "2.0", "method": method, "params": params}
        if kind == 1
        else {"jsonrpc": "2.0", "id": id_, "result": params}
        if kind == 2
        else {"jsonrpc": "2.0", "id": id_, "error": params}
    ),
    methods,
    st.one_of(st.integers(0, 5), st.sampled_from(["1", "2", None, 1.5, True])),
    json_values,
    st.integers(0, 3),
)


def _run(chunks: list[tuple[str, bytes]]) -> list[Any]:
    session = Session("fuzz")
    out: list[Any] = []
    t = 0.0
    for direction, data in chunks:
        t += 0.001
        out.extend(session.feed(direction, "stdio", data, t))
    out.extend(session.close(t + 1))
    return out


def _assert_lossless(chunks: list[tuple[str, bytes]], out: list[Any]) -> None:
    errors = [r for r in out if isinstance(r, EventRecord) and r.event == "analyzer-error"]
    assert errors == [], errors[0].data["traceback"] if errors else ""
    for direction in ("c2s", "s2c"):
        sent = b"".join(data for d, data in chunks if d == direction)
        framed = b"".join(
            r.raw for r in out if isinstance(r, FrameRecord) and r.direction == direction
        )
        assert framed == sent


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["c2s", "s2c"]), st.binary(max_size=200)), max_size=20))
def test_arbitrary_bytes_never_raise_and_lose_nothing(chunks: list[tuple[str, bytes]]) -> None:
    _assert_lossless(chunks, _run(chunks))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(["c2s", "s2c"]), json_values | messages), max_size=25),
    st.data(),
)
def test_arbitrary_json_in_arbitrary_chunks(values: list[tuple[str, Any]], data: Any) -> None:
    chunks: list[tuple[str, bytes]] = []
    for direction, value in values:
        line = orjson.dumps(value) + b"\n"
        cut = data.draw(st.integers(0, len(line)))
        chunks.append((direction, line[:cut]))
        chunks.append((direction, line[cut:]))
    _assert_lossless(chunks, _run(chunks))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["c2s", "s2c"]), json_values | messages), max_size=15))
def test_arbitrary_json_as_whole_frames(values: list[tuple[str, Any]]) -> None:
    session = Session("fuzz", "http")
    for i, (direction, value) in enumerate(values):
        raw = orjson.dumps(value)
        out = session.feed_frame(direction, "http", raw, float(i))
        assert out[0].raw == raw
        assert not [r for r in out if isinstance(r, EventRecord) and r.event == "analyzer-error"]
    session.close(100.0)
