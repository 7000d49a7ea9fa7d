"""Hostile traces: the reader validates record shapes once, and no command ends in a traceback.

The property tests generate well-formed records and then break one field with
a value of a wrong type (hypothesis); the reader must skip that record with a
warning naming its line, and yield only records whose types downstream code
can trust. The command tests run every trace-reading command on the hostile
traces found by hand (issue 13) and on generated ones.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import KINDS, SEVERITIES, EventRecord, FindingRecord, FrameRecord
from mcpsniff.core.model import MessageRecord as Message
from mcpsniff.terminal.render import Style, Timeline, report_lines
from mcpsniff.trace.codec import header
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail
from mcpsniff.trace.validate import checked_record, problem

GOOD: dict[str, dict[str, Any]] = {
    "frame": {
        "type": "frame",
        "seq": 1,
        "t": 1767225600.5,
        "session": "s",
        "dir": "c2s",
        "transport": "stdio",
        "text": '{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    },
    "event": {
        "type": "event",
        "seq": 2,
        "t": 1767225600.6,
        "session": "s",
        "event": "http-response",
        "data": {"exchange": 1, "status": 200, "headers": [["Content-Type", "text/plain"]]},
    },
    "message": {
        "type": "message",
        "frame": 1,
        "session": "s",
        "dir": "s2c",
        "kind": "response",
        "id": 1,
        "answers": 1,
        "latency_ms": 1.5,
    },
    "finding": {
        "type": "finding",
        "rule": "JR-PARSE",
        "severity": "error",
        "message": "m",
        "session": "s",
        "seq": [1],
        "data": {},
    },
}
#: The fields of each record type that the format gives a type.
FIELDS = {
    "frame": ["seq", "t", "session", "dir", "transport", "text", "meta"],
    "event": ["seq", "t", "session", "event", "data"],
    "message": ["frame", "session", "dir", "kind", "index", "answers", "latency_ms", "method"],
    "finding": ["rule", "severity", "message", "session", "seq", "data"],
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e300, -1.0, math.nan])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


def _write(path: Path, objects: list[dict[str, Any]]) -> Path:
    lines = [json.dumps(header(), separators=(",", ":"))]
    lines += [json.dumps(obj, separators=(",", ":"), allow_nan=True) for obj in objects]
    path.write_text("\n".join(lines) + "\n")
    return path


def _trusted(record: object) -> None:
    """The record has the types the format promises."""
    if isinstance(record, FrameRecord | EventRecord):
        assert type(record.seq) is int and type(record.session) is str
        assert type(record.t) in (int, float) and math.isfinite(record.t)
    if isinstance(record, FrameRecord):
        assert record.direction in ("c2s", "s2c") and type(record.raw) is bytes
    if isinstance(record, EventRecord):
        assert type(record.event) is str and type(record.data) is dict
    if isinstance(record, Message):
        assert record.kind in KINDS and type(record.frame) is int
        assert record.latency_ms is None or math.isfinite(record.latency_ms)
    if isinstance(record, FindingRecord):
        assert record.severity in SEVERITIES and all(type(q) is int for q in record.seq)


def _consume(path: Path) -> list[str]:
    """Read the trace every way the commands do; return the warnings."""
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        records = list(reader.records())
    for record in records:
        _trusted(record)
    with TraceReader(path, on_skip=lambda _: None) as reader:
        inputs = list(reader.inputs())
        derived = list(replay(inputs))
    tail = TraceTail(path, on_skip=lambda _: None)
    try:
        tail_records = tail.poll(final=True)
    finally:
        tail.close()
    assert tail_records == records
    for colour in (False, True):
        timeline = Timeline(Style(colour))
        for record in records:
            timeline.feed(record)
        timeline.flush()
        findings = [r for r in derived if isinstance(r, FindingRecord)]
        list(report_lines({"s": findings}, Style(colour)))
    return warnings


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(sorted(GOOD)),
    data=st.data(),
    value=json_values,
)
def test_a_record_with_a_wrong_field_is_skipped_or_trusted(
    tmp_path: Path, kind: str, data: st.DataObject, value: Any
) -> None:
    field = data.draw(st.sampled_from(FIELDS[kind]))
    broken = dict(GOOD[kind], **{field: value})
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], broken, GOOD["event"]])
    warnings = _consume(path)
    if problem(json.loads(json.dumps(broken, allow_nan=True))) is None:
        assert warnings == [] or "line 3" in warnings[0]
    else:
        assert len(warnings) == 1 and f"{path}: line 3: " in warnings[0]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    objects=st.lists(
        st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "seq",
                    "t",
                    "session",
                    "dir",
                    "transport",
                    "text",
                    "event",
                    "data",
                    "kind",
                    "frame",
                ]
            ),
            json_values,
        ),
        max_size=4,
    )
)
def test_arbitrary_objects_never_break_the_reader(
    tmp_path: Path, objects: list[dict[str, Any]]
) -> None:
    for obj in objects:
        obj.setdefault("type", "frame")
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], *objects])
    _consume(path)


def _hostile(**changes: Any) -> tuple[dict[str, Any], ...]:
    kind = changes.pop("kind_of")
    return (dict(GOOD[kind], **changes),)


#: The hostile traces of issue 13, one broken record each.
HOSTILE = {
    "session as a list": _hostile(kind_of="frame", session=["a"]),
    "event session as a list": _hostile(kind_of="event", session=["a"]),
    "string seq": _hostile(kind_of="frame", seq="3"),
    "string t": _hostile(kind_of="event", t="now"),
    "t NaN": _hostile(kind_of="frame", t=math.nan),
    "t 1e300": _hostile(kind_of="frame", t=1e300),
    "event data a list": _hostile(kind_of="event", data=[1, 2]),
    "event data a string": _hostile(kind_of="event", data="x"),
    "bad http-response headers": _hostile(kind_of="event", data={"headers": [["a"], 5]}),
    "message kind null": _hostile(kind_of="message", kind=None),
    "message kind a list": _hostile(kind_of="message", kind=["request"]),
    "latency_ms a string": _hostile(kind_of="message", latency_ms="fast"),
    "unknown severity": _hostile(kind_of="finding", severity="critical"),
    "unknown direction": _hostile(kind_of="frame", dir="sideways"),
    "deeply nested text frame": _hostile(kind_of="frame", text="[" * 100_000 + "\n"),
}

COMMANDS = {
    "check": ["check"],
    "check json": ["check", "--format", "json"],
    "show": ["show"],
    "show -vv": ["show", "-vv"],
    "show json": ["show", "--format", "json"],
    "show filtered": ["show", "--filter", "kind == request"],
    "stats": ["stats"],
    "stats filtered": ["stats", "--filter", "kind == request"],
    "redact": ["redact", "-o", "{out}"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_command_ends_in_a_traceback_on_a_hostile_trace(
    tmp_path: Path, name: str, command: str
) -> None:
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], *HOSTILE[name], GOOD["event"]])
    args = [a.replace("{out}", str(tmp_path / "out.jsonl")) for a in COMMANDS[command]]
    result = CliRunner().invoke(main, [*args[:1], str(path), *args[1:]])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1, 2)
    assert "Traceback" not in result.output


def test_a_skipped_record_is_named_once_on_stderr(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], *HOSTILE["session as a list"]])
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 1  # the good frame: a ping before initialize
    assert result.stderr.count("line 3: session is not a string; the record was skipped") == 1
    assert result.stderr.startswith("mcpsniff check: warning: ")


def test_a_header_with_a_bad_meta_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(dict(header(), meta=[1])) + "\n")
    result = CliRunner().invoke(main, ["show", str(path)])
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"mcpsniff show: {path}: the header is malformed: its meta is not an object\n"
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", ["string seq", "event data a list", "t NaN"])
def test_one_bad_record_is_skipped_and_the_rest_is_read(
    tmp_path: Path, name: str, command: str
) -> None:
    """A broken record costs that record only: no exit 2, its line named on stderr."""
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], *HOSTILE[name], GOOD["event"]])
    args = [a.replace("{out}", str(tmp_path / "out.jsonl")) for a in COMMANDS[command]]
    result = CliRunner().invoke(main, [*args[:1], str(path), *args[1:]])
    assert result.exit_code in (0, 1), result.output
    assert "line 3: " in result.stderr and "the record was skipped" in result.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_line_that_is_not_json_mid_trace_is_skipped(tmp_path: Path, command: str) -> None:
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], GOOD["event"]])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], b"[[[[ not json\n", *lines[2:]]))
    args = [a.replace("{out}", str(tmp_path / "out.jsonl")) for a in COMMANDS[command]]
    result = CliRunner().invoke(main, [*args[:1], str(path), *args[1:]])
    assert result.exit_code in (0, 1), result.output
    assert "line 3: not a JSON record; the record was skipped" in result.stderr


_EMBEDDED_HEAD = {
    "type": "frame",
    "seq": 1,
    "t": 1767225600.5,
    "session": "s",
    "dir": "c2s",
    "transport": "stdio",
    "eol": "\n",
    "len": 40,
}
_PAYLOAD = '{"jsonrpc":"2.0","id":1,"method":"ping"}'


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(["seq", "t", "session", "dir", "transport", "meta", "len", "eol"]),
    value=json_values,
)
def test_an_embedded_frame_with_a_wrong_field_is_skipped_with_the_validators_reason(
    tmp_path: Path, field: str, value: Any
) -> None:
    """The reader's inline check of embedded frames agrees with ``frame_problem`` exactly."""
    from mcpsniff.trace.validate import frame_problem

    broken = dict(_EMBEDDED_HEAD, **{field: value})
    head = json.dumps(broken, separators=(",", ":"), allow_nan=True)
    line = head[:-1] + ',"json":' + _PAYLOAD + "}"
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(header(), separators=(",", ":")) + "\n" + line + "\n")
    reason = frame_problem(json.loads(json.dumps(dict(broken, json=1), allow_nan=True)))
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        frames = list(reader.inputs())
    if reason is not None:
        assert frames == [] and len(warnings) == 1 and reason in warnings[0]
    elif frames:
        assert (
            frames[0].raw
            == _PAYLOAD.encode()
            + {"": b"", "\n": b"\n", "\r\n": b"\r\n"}[value if field == "eol" else "\n"]
        )
        assert warnings == []
    else:  # a len that does not point at the payload: named as such
        assert field == "len" and len(warnings) == 1 and "len says" in warnings[0]


def test_checked_record_gives_the_record_or_why_there_is_none() -> None:
    record, reason = checked_record(GOOD["frame"])
    assert reason is None and isinstance(record, FrameRecord) and record.seq == 1
    assert checked_record(["not", "an", "object"]) == (None, "not a JSON object")
    assert checked_record({**GOOD["frame"], "seq": "3"}) == (None, "seq is not an integer")
    # The fields are right but the payload does not decode: the decoder's reason.
    broken = {k: v for k, v in GOOD["frame"].items() if k not in ("text", "json")}
    record, reason = checked_record({**broken, "b64": "***"})
    assert record is None and reason is not None and reason.startswith("malformed frame record")


ONE_MARK = "a lane record has exactly one of open, input, through and lost"
NOT_A_SEQ = " is not a seq (an integer from 0 to 2**63-1)"


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"type": "lane", "session": "s", "open": 1}, None),
        ({"type": "lane", "session": "s", "input": 0}, None),
        ({"type": "lane", "session": "s", "through": 2**63 - 1}, None),
        ({"type": "lane", "session": "s", "lost": 1}, None),
        ({"type": "lane", "session": "s", "open": 1, "extra": [1]}, None),
        ({"type": "lane", "open": 1}, "session is not a string"),
        ({"type": "lane", "session": None, "open": 1}, "session is not a string"),
        (
            {"type": "lane", "session": "s"},
            ONE_MARK,
        ),
        (
            {"type": "lane", "session": "s", "through": 1, "lost": 1},
            ONE_MARK,
        ),
        ({"type": "lane", "session": "s", "open": 2}, "open is not 1"),
        ({"type": "lane", "session": "s", "open": True}, "open is not 1"),
        ({"type": "lane", "session": "s", "lost": "1"}, "lost is not 1"),
        (
            {"type": "lane", "session": "s", "through": -1},
            "through" + NOT_A_SEQ,
        ),
        (
            {"type": "lane", "session": "s", "through": 2**63},
            "through" + NOT_A_SEQ,
        ),
        (
            {"type": "lane", "session": "s", "input": 1.0},
            "input" + NOT_A_SEQ,
        ),
        (
            {"type": "lane", "session": "s", "input": False},
            "input" + NOT_A_SEQ,
        ),
    ],
)
def test_a_lane_record_is_valid_when_well_formed(
    record: dict[str, Any], reason: str | None
) -> None:
    assert problem(record) == reason
    decoded, why = checked_record(record)
    assert why == reason and (decoded == record if reason is None else decoded is None)
