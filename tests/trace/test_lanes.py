"""Reading two-lane traces (trace/lanes.py): derived records back after their inputs."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import orjson
import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.trace.lanes import LaneMerge
from mcpsniff.trace.reader import TraceReader
from tests.lane_layout import lane_line, two_lane

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "recordings").glob("*.jsonl")) + sorted(
    (ROOT / "tests" / "data" / "guard").glob("*.jsonl")
)
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_trace import generate  # noqa: E402

LAYOUTS = [(0, 0, False), (1, 1, False), (2, 4, False), (3, 30, False), (4, 6, True)]


def _read(path: Path) -> tuple[list[Record], list[dict], list[tuple[int, str]]]:
    headers: list[dict] = []
    with TraceReader(path, on_skip=lambda _text: None) as reader:
        reader.on_header = headers.append
        records = list(reader.records())
        return records, headers, reader.skipped


def _inputs(path: Path) -> list[Record]:
    with TraceReader(path, on_skip=lambda _text: None) as reader:
        return list(reader.inputs())


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gen") / "gen.jsonl"
    generate(path, 3000, seed=3)
    return path


def _derived_moved(data: bytes) -> bool:
    """Whether some message record of ``data`` does not directly follow its frame."""
    previous: dict | None = None
    for line in data.splitlines()[1:]:
        obj = orjson.loads(line)
        if obj["type"] == "message" and previous is not None:
            if previous["type"] != "message" and previous.get("seq") != obj["frame"]:
                return True
        previous = obj
    return False


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
@pytest.mark.parametrize(("seed", "lag", "mixed"), LAYOUTS)
def test_records_of_a_two_lane_layout_equal_the_one_lane_trace(
    tmp_path: Path, path: Path, seed: int, lag: int, mixed: bool
) -> None:
    laid = tmp_path / path.name
    laid.write_bytes(two_lane(path.read_bytes(), seed, lag, mixed=mixed))
    expected = _read(path)
    got = _read(laid)
    assert got[0] == expected[0] and got[1] == expected[1]
    assert got[2] == [] and expected[2] == []
    assert _inputs(laid) == _inputs(path)


@pytest.mark.parametrize(("seed", "lag"), [(0, 2), (5, 9), (6, 200)])
def test_records_of_a_generated_trace_in_two_lanes(
    generated: Path, tmp_path: Path, seed: int, lag: int
) -> None:
    data = two_lane(generated.read_bytes(), seed, lag)
    assert _derived_moved(data) == (lag > 0)
    laid = tmp_path / "laid.jsonl"
    laid.write_bytes(data)
    assert _read(laid) == _read(generated)
    assert _inputs(laid) == _inputs(generated)


def test_the_layout_writes_the_markers_of_the_spec(tmp_path: Path) -> None:
    data = two_lane((ROOT / "recordings" / "unanswered-request.jsonl").read_bytes(), 1, 3)
    objs = [orjson.loads(line) for line in data.splitlines()[1:]]
    lanes = [o for o in objs if o["type"] == "lane"]
    assert lanes[0] == {"type": "lane", "session": "unanswered-request", "open": 1}
    assert objs[0] == lanes[0]  # before the session's first input
    throughs = [o["through"] for o in lanes if "through" in o]
    assert throughs == sorted(throughs) and throughs[-1] == max(
        o["seq"] for o in objs if o["type"] in ("frame", "event")
    )
    # The session-end's findings come after an input marker naming it.
    end = next(o["seq"] for o in objs if o.get("event") == "session-end")
    at = objs.index({"type": "lane", "session": "unanswered-request", "input": end})
    assert objs[at + 1]["type"] == "finding"


# ---------------------------------------------------------------------------- the merge


def _frame(seq: int, session: str = "s") -> FrameRecord:
    return FrameRecord(seq, 1.0, session, "c2s", "stdio", b"{}\n")


def _message(frame: int, session: str = "s") -> MessageRecord:
    return MessageRecord(frame, session, "c2s", "request", method="ping")


def _finding(session: str = "s") -> FindingRecord:
    return FindingRecord("R", "error", "m", session, [1])


def _lane(merge: LaneMerge, **mark: object) -> tuple[list, str | None]:
    return merge.lane({"type": "lane", "session": "s", **mark})


def test_an_input_waits_for_its_through_then_comes_with_its_derived_records() -> None:
    merge = LaneMerge()
    assert _lane(merge, open=1) == ([], None)
    one, two = _frame(1), _frame(2)
    other = _frame(7, "plain")
    assert merge.feed(one, one) == []
    assert merge.feed(other, other) == []  # a one-lane session's input keeps its place
    assert merge.feed(two, two) == []
    message, finding = _message(1), _finding()
    assert merge.feed(message, message) == []
    assert merge.feed(finding, finding) == []
    assert _lane(merge, through=1) == ([one, message, finding, other], None)
    assert merge.holding == 1
    assert _lane(merge, input=2) == ([], None)
    late = _finding()
    assert merge.feed(late, late) == []
    assert _lane(merge, through=2) == ([two, late], None)
    assert merge.holding == 0
    # An input the through already covers is not held.
    three = _frame(3)
    assert _lane(merge, through=5) == ([], None)
    assert merge.feed(three, three) == [three]


def test_an_analyzer_error_event_is_derived_and_other_events_are_inputs() -> None:
    merge = LaneMerge()
    _lane(merge, open=1)
    end = EventRecord(4, 1.0, "s", "session-end", {})
    error = EventRecord(4, 1.0, "s", "analyzer-error", {"error": "x"})
    assert merge.feed(end, end) == []
    _lane(merge, input=4)
    assert merge.feed(error, error) == []
    assert _lane(merge, through=4) == ([end, error], None)


def test_lost_releases_the_session_and_the_end_releases_everything() -> None:
    merge = LaneMerge()
    _lane(merge, open=1)
    one, two = _frame(1), _frame(2)
    merge.feed(one, one)
    assert _lane(merge, lost=1) == ([one], None)
    assert merge.feed(two, two) == [two]  # no longer held
    merge = LaneMerge()
    _lane(merge, open=1)
    merge.feed(one, one)
    merge.feed(two, two)
    assert merge.finish() == [one, two] and merge.holding == 0


def test_hostile_lane_records_are_skipped_with_a_reason() -> None:
    merge = LaneMerge()
    assert merge.lane({"type": "lane", "session": "x", "through": 3})[1] == (
        "a lane record of a session no lane record opened"
    )
    _lane(merge, open=1)
    assert _lane(merge, open=1) == ([], None)  # once is enough; again changes nothing
    assert _lane(merge, through=9) == ([], None)
    assert _lane(merge, through=4)[1] == "through 4 goes back from 9"
    # A derived record whose input was never seen is yielded where it is read.
    orphan = _message(50)
    assert merge.feed(orphan, orphan) == [orphan]
    stray = _finding()
    assert merge.feed(stray, stray) == [stray]


def test_what_is_held_is_bounded_and_the_oldest_goes_first() -> None:
    merge = LaneMerge(max_held=3, max_bytes=1000)
    _lane(merge, open=1)
    frames = [_frame(n) for n in range(1, 6)]
    out: list = []
    for frame in frames:
        out += merge.feed(frame, frame, 10)
    assert out == frames[:2] and merge.holding == 3
    # Bytes too: one line of 995 bytes pushes out all but itself.
    big = _frame(9)
    assert merge.feed(big, big, 995) == frames[2:]
    # Its late derived record follows wherever it is read.
    late = _message(1)
    assert merge.feed(late, late) == []  # behind the held frame 9
    assert merge.finish() == [big, late]


def test_a_million_open_records_keep_the_state_bounded() -> None:
    merge = LaneMerge()
    tracemalloc.start()
    try:
        reasons = {
            merge.lane({"type": "lane", "session": f"s{n}", "open": 1})[1] for n in range(30_000)
        }
        size, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reasons == {None, "more than 10000 sessions are opened by lane records"}
    assert [merge.lane({"type": "lane", "session": "t", "open": 1})[1]] == [None]  # said once
    one = _frame(1, "s0")
    beyond = _frame(1, "s20000")
    assert merge.feed(one, one) == [] and merge.feed(beyond, beyond) == []  # behind s0's
    assert merge.finish() == [one, beyond]
    fresh = _frame(2, "s29999")
    assert merge.feed(fresh, fresh) == [fresh]  # a one-lane session's, handed on at once
    assert size < 16 << 20


def test_a_trace_of_hostile_lane_records_reads_without_a_traceback(tmp_path: Path) -> None:
    source = (ROOT / "recordings" / "unanswered-request.jsonl").read_bytes()
    header, *lines = two_lane(source, 3, 4).splitlines(keepends=True)
    hostile = [
        lane_line("unanswered-request", open=1),
        b'{"type":"lane","session":"unanswered-request","through":1000000000000000000000000000000}\n',
        b'{"type":"lane","session":"unanswered-request","through":-1}\n',
        b'{"type":"lane","session":"unanswered-request","through":2.5}\n',
        b'{"type":"lane","session":"unanswered-request"}\n',
        b'{"type":"lane","session":7,"open":1}\n',
        b'{"type":"lane","session":"unanswered-request","open":1,"lost":1}\n',
        b'{"type":"lane","session":"nobody","through":4}\n',
        b'{"type":"lane","session":"unanswered-request","open":[1]}\n',
        b'{"type":"message","frame":99999,"session":"unanswered-request","dir":"c2s","kind":"request"}\n',
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(header + b"".join(hostile) + b"".join(lines))
    records, _headers, skipped = _read(path)
    # The one-lane records, the orphan message first (nothing held yet), in order.
    expected, _, _ = _read(ROOT / "recordings" / "unanswered-request.jsonl")
    assert records[1:] == expected and type(records[0]) is MessageRecord
    reasons = [reason for _number, reason in skipped]
    assert reasons == [
        "through is not a seq (an integer from 0 to 2**63-1)",
        "through is not a seq (an integer from 0 to 2**63-1)",
        "through is not a seq (an integer from 0 to 2**63-1)",
        "a lane record has exactly one of open, input, through and lost",
        "session is not a string",
        "a lane record has exactly one of open, input, through and lost",
        "a lane record of a session no lane record opened",
        "open is not 1",
    ]
    assert [number for number, _reason in skipped] == list(range(3, 11))


def test_a_torn_or_glued_lane_line_is_read_as_any_torn_line(tmp_path: Path) -> None:
    source = ROOT / "recordings" / "unanswered-request.jsonl"
    header, *lines = two_lane(source.read_bytes(), 1, 2).splitlines(keepends=True)
    frame = next(line for line in lines if line.startswith(b'{"type":"frame"'))
    torn = b'{"type":"lane","session":"unanswered-request","thro'
    path = tmp_path / "t.jsonl"
    # A lane line torn by a crash, another writer's frame glued after it; and a torn last line.
    path.write_bytes(header + lines[0] + torn + frame + b"".join(lines[1:]) + torn)
    with TraceReader(path, on_skip=lambda _text: None) as reader:
        records = list(reader.records())
        assert reader.torn is not None and reader.torn.length == len(torn)
        assert [reason for _n, reason in reader.skipped] == [
            f"not a JSON record: its first {len(torn)} bytes are a torn write (probably cut off "
            "by a crash) with another record glued after them, which was read"
        ]
    # The glued frame where it was read (right after the open record), then the one-lane records.
    expected = read_records_of(source)
    assert records[1:] == expected and records[0] == expected[1]
    assert isinstance(records[0], FrameRecord)


def read_records_of(path: Path) -> list[Record]:
    with TraceReader(path) as reader:
        return list(reader.records())
