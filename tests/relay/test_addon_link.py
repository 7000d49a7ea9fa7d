"""The addon's link: replies round-trip as JSON, and the worker side answers syncs with findings."""

from __future__ import annotations

import os
import struct

import pytest

from mcpsniff.core.http.adapter import ObservationAdapter
from mcpsniff.core.observations import ExchangeEnd, RequestBegin, ResponseBegin, ResponseBody
from mcpsniff.relay.addon_link import FlowFinding, FlowReplies, Reply, Show, Sync
from mcpsniff.relay.recorder import Recorder

JSON = (("Content-Type", "application/json"),)


def test_a_reply_round_trips_and_anything_else_is_refused() -> None:
    reply = Reply([FlowFinding((1, -1), "JR-PARSE", "error", "bad \x1b json")], ["a line"], [1])
    assert Reply.decode(reply.encode()) == reply
    assert not Reply()
    for bad in (b"[]", b'{"findings": 1}', b"not json"):
        with pytest.raises((ValueError, KeyError, TypeError)):
            Reply.decode(bad)


def test_a_sync_is_answered_with_the_findings_of_its_exchange() -> None:
    recorder = Recorder(None, "http")
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
