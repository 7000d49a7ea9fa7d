"""Shared test helpers: a scripted conversation driving a Session."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import settings

from mcpsniff.core.model import FindingRecord, MessageRecord, Record
from mcpsniff.core.session import Session

# CI must give the same verdict on the same commit: a property test that
# draws new examples on every run can fail a merge for a bug the change did
# not touch. So the default profile is derandomized (examples derived from
# each test's name); `--hypothesis-profile=hunt` draws fresh examples, for
# looking for new bugs (for example `--hypothesis-seed=$RANDOM` in a loop).
settings.register_profile("ci", derandomize=True)
settings.register_profile("hunt", derandomize=False)
settings.load_profile("ci")


class Conversation:
    """Feeds scripted stdio lines to a Session and keeps every record."""

    def __init__(self, transport: str = "stdio") -> None:
        self.session = Session("test", transport)
        self.transport = transport
        self.records: list[Record] = []
        self.t = 1000.0

    def _feed(self, direction: str, payload: Any) -> list[Record]:
        self.t += 0.001
        raw = payload if isinstance(payload, bytes) else orjson.dumps(payload) + b"\n"
        if self.transport == "stdio":
            out = self.session.feed(direction, "stdio", raw, self.t)
        else:
            out = self.session.feed_frame(direction, self.transport, raw, self.t)
        self.records.extend(out)
        return out

    def client(self, payload: Any) -> list[Record]:
        return self._feed("c2s", payload)

    def server(self, payload: Any) -> list[Record]:
        return self._feed("s2c", payload)

    def close(self) -> list[Record]:
        out = self.session.close(self.t + 1)
        self.records.extend(out)
        return out

    def handshake(self, version: str = "2025-11-25", server_caps: Any = None) -> None:
        caps = {"tools": {}, "resources": {}, "prompts": {}, "logging": {}}
        self.client(
            request(
                0,
                "initialize",
                {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            )
        )
        self.server(
            result(
                0,
                {
                    "protocolVersion": version,
                    "capabilities": caps if server_caps is None else server_caps,
                    "serverInfo": {"name": "s", "version": "1"},
                },
            )
        )
        self.client(notification("notifications/initialized"))

    @property
    def findings(self) -> list[FindingRecord]:
        return [r for r in self.records if isinstance(r, FindingRecord)]

    def rules(self) -> list[str]:
        return [f.rule for f in self.findings]

    def find(self, rule: str) -> list[FindingRecord]:
        return [f for f in self.findings if f.rule == rule]

    @property
    def messages(self) -> list[MessageRecord]:
        return [r for r in self.records if isinstance(r, MessageRecord)]


def request(id_: Any, method: str, params: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        obj["params"] = params
    return obj


def notification(method: str, params: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        obj["params"] = params
    return obj


def result(id_: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def error(id_: Any, code: int, message: str = "oops") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


@pytest.fixture
def convo() -> Conversation:
    return Conversation()
