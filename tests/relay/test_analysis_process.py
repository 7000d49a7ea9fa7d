"""The one launcher: a forked analysis process gets every observation and its status comes back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.observations import CaptureEnd, StreamData, StreamEnd
from mcpsniff.relay.analysis_process import AnalysisProcess
from mcpsniff.relay.channel import read_batches


def test_the_forked_process_gets_everything_and_its_exit_status_comes_back(
    tmp_path: Path,
) -> None:
    out = tmp_path / "seen.json"

    def work(fd: int) -> int:
        seen = [repr(o) for batch in read_batches(fd) for o in batch]
        out.write_bytes(orjson.dumps(seen))
        return 5

    async def scenario() -> int:
        process = AnalysisProcess.fork(work, limit=1 << 20)
        process.channel.attach(asyncio.get_running_loop())
        process.channel.send(StreamData(C2S, 1.0, b"hello\n"))
        process.channel.send(StreamEnd(S2C, 2.0))
        process.channel.end(3.0)
        return await process.finish()

    assert asyncio.run(scenario()) == 5
    assert orjson.loads(out.read_bytes()) == [
        repr(StreamData(C2S, 1.0, b"hello\n")),
        repr(StreamEnd(S2C, 2.0)),
        repr(CaptureEnd(3.0)),
    ]


def test_the_status_of_a_reaped_process_stays_known() -> None:
    async def scenario() -> tuple[int, int | None]:
        process = AnalysisProcess.fork(lambda fd: 7, limit=1 << 20)
        process.channel.attach(asyncio.get_running_loop())
        first = await process.finish()
        return first, process.poll()

    assert asyncio.run(scenario()) == (7, 7)


def test_a_spawned_worker_records_what_the_channel_carries(tmp_path: Path) -> None:
    """The addon's way: a fresh interpreter runs the same worker on the channel."""
    from mcpsniff.core.model import EventRecord, FrameRecord
    from mcpsniff.core.observations import ExchangeEnd, RequestBegin, ResponseBody, ResponseHead
    from mcpsniff.relay.addon_link import create_trace
    from mcpsniff.trace.reader import TraceReader

    trace = tmp_path / "t.jsonl"
    fd = create_trace(str(trace))
    headers = (("Content-Type", "application/json"),)
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'

    async def scenario() -> int:
        arguments = ["--trace-fd", str(fd), "--trace-path", str(trace), "--created", "1.0"]
        process = AnalysisProcess.spawn(arguments, 1 << 20, pass_fds=(fd,))
        channel = process.channel
        channel.attach(asyncio.get_running_loop())
        channel.send(RequestBegin(1, 2.0, "POST", "/mcp", headers, "h:1", None, len(body), body))
        channel.send(ResponseHead(1, 3.0, 200, headers))
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
