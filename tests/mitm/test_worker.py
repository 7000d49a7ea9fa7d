"""The addon's analysis process: syncs answered with findings; spawned, it records the channel."""

from __future__ import annotations

import asyncio
import os
import struct
from pathlib import Path

from mcpsniff.capture.analysis_process import AnalysisProcess
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.core.observations import ExchangeEnd, RequestBegin, ResponseBegin, ResponseBody
from mcpsniff.mitm.link import Reply, Show, Sync, create_trace
from mcpsniff.mitm.worker import FlowReplies
from mcpsniff.trace.reader import TraceReader

JSON = (("Content-Type", "application/json"),)


def test_a_sync_is_answered_with_the_findings_of_its_exchange() -> None:
    recorder = TraceRecorder(None, "http")
    adapter = ObservationAdapter(recorder, key_by_host=True)
    read_fd, write_fd = os.pipe()
    replies = FlowReplies(recorder, adapter.apply, write_fd, show=False)
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"'  # cut short: JR-PARSE
    for observation in (
        Show(True),
        RequestBegin(1, 1.0, "POST", "/mcp", JSON, "h:80", None, len(body), body),
        ResponseBegin(1, 2.0, 200, JSON),
        ResponseBody(
            1,
            2.5,
            True,
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        ),
        ExchangeEnd(1, 3.0, "complete", True),
        Sync(1),
    ):
        replies.apply(observation)
    replies.send_reply()
    os.close(write_fd)
    data = os.read(read_fd, 1 << 20)
    os.close(read_fd)
    (length,) = struct.unpack_from("<I", data)
    reply = Reply.decode(data[4 : 4 + length])
    assert reply.synced == [1]
    assert "JR-PARSE" in {f.rule for f in reply.findings}
    assert {f.exchanges for f in reply.findings if f.rule == "JR-PARSE"} == {(1,)}
    assert reply.lines  # Show(True) started them


def test_a_spawned_worker_records_what_the_channel_carries(tmp_path: Path) -> None:
    """The addon's way: a fresh interpreter runs the same worker on the channel."""

    trace = tmp_path / "t.jsonl"
    fd = create_trace(str(trace))
    headers = (("Content-Type", "application/json"),)
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'

    async def scenario() -> int:
        arguments = ["--trace-fd", str(fd), "--trace-path", str(trace), "--created", "1.0"]
        process = AnalysisProcess.spawn("mcpsniff.mitm.worker", arguments, 1 << 20, pass_fds=(fd,))
        channel = process.channel
        channel.attach(asyncio.get_running_loop())
        channel.send(RequestBegin(1, 2.0, "POST", "/mcp", headers, "h:1", None, len(body), body))
        channel.send(ResponseBegin(1, 3.0, 200, headers))
        channel.send(ResponseBody(1, 3.5, True, b'{"jsonrpc":"2.0","id":1,"result":{}}'))
        channel.send(ExchangeEnd(1, 4.0, "complete", True))
        channel.end(5.0)
        return await process.finish()

    assert asyncio.run(scenario()) == 0
    with TraceReader(trace) as reader:
        records = list(reader.records())
    assert [r.raw for r in records if isinstance(r, FrameRecord)] == [
        body,
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
    ]
    events = [r.event for r in records if isinstance(r, EventRecord)]
    assert "http-request" in events and events[-1] == "session-end"
