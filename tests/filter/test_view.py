"""``ViewBuilder`` (filter/view.py): what a builder kept for a growing trace holds on to."""

from __future__ import annotations

import sys

from mcpsniff.core.model import C2S, FrameRecord, MessageRecord
from mcpsniff.filter.view import ViewBuilder


def test_a_completed_frame_is_not_held_by_the_builder() -> None:
    """The UI keeps one builder per trace for as long as it runs: a batch frame of
    100,000 elements (its bytes and its parsed body) must not live on in it."""
    raw = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]\n'
    frame = FrameRecord(1, 1.0, "s", C2S, "stdio", raw)
    before = sys.getrefcount(frame)
    builder = ViewBuilder({})
    builder.feed(frame)
    for index in (0, 1):
        message = MessageRecord(1, "s", C2S, "request", index=index, id=index + 1, has_id=True)
        builder.feed(message)
    views = builder.flush()
    assert [v.index for v in views] == [0, 1] and all(v.frame is frame for v in views)
    del views
    assert sys.getrefcount(frame) == before


def _answered(result_raw: bytes) -> tuple[object, FrameRecord]:
    """The view of a tools/call result in ``result_raw``, answering a request in frame 1."""
    from mcpsniff.core.model import S2C

    request = FrameRecord(1, 1.0, "s", C2S, "stdio", b"{}\n")
    result = FrameRecord(2, 2.0, "s", S2C, "stdio", result_raw)
    builder = ViewBuilder({})
    builder.feed(request)
    builder.feed(MessageRecord(1, "s", C2S, "request", id=1, has_id=True, method="tools/call"))
    builder.feed(result)
    answer = MessageRecord(2, "s", S2C, "response", id=1, has_id=True, answers=1)
    builder.feed(answer)
    (view,) = builder.flush()
    return view, result


def test_a_tool_error_is_found_however_the_key_is_spelt() -> None:
    plain, _ = _answered(b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}\n')
    escaped, _ = _answered(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"is\\u0045rror":true}}\n'
    )
    assert plain.is_error and escaped.is_error  # type: ignore[attr-defined]


def test_a_result_without_the_key_is_not_parsed_to_learn_it_is_no_error() -> None:
    from mcpsniff.core.model import UNPARSED

    view, frame = _answered(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n')
    assert not view.is_error  # type: ignore[attr-defined]
    assert frame.value is UNPARSED  # nothing asked for the body yet
    assert view.body == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}  # type: ignore[attr-defined]


def test_views_streamed_with_an_index_are_those_built_frame_by_frame() -> None:
    """``build_views`` returns each view when its record is read (a batch's 100,000 views
    are not held together): the same views, in the same order, as a frame at a time."""
    from pathlib import Path

    from mcpsniff.filter.view import build_views, index_findings
    from mcpsniff.trace.reader import TraceReader

    gallery = Path(__file__).resolve().parents[2] / "recordings"
    batches = 0
    for trace in sorted(gallery.glob("*.jsonl")):
        with TraceReader(trace) as reader:
            records = list(reader.records())
        index = index_findings(records)
        streamed = list(build_views(records, index))
        builder = ViewBuilder(index)
        whole = [view for record in records for view in builder.feed(record)]
        whole += builder.flush()
        assert [repr(v) for v in streamed] == [repr(v) for v in whole], trace.name
        batches += sum(v.index is not None for v in streamed)
    assert batches > 0  # the gallery has batches: their elements were streamed
