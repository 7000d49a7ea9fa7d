"""Runs ``StdioRelay`` alone (no analysis process) and prints what it captured.

``python -m tests.relay.stdio_relay_alone OUT -- COMMAND...``: the relay owns this
process's stdin, stdout and stderr, as under ``mcpsniff stdio``; every observation
it sends, every ``end`` and ``finish`` go to OUT as JSON lines, then the exit
status is the relay's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import fields
from typing import Any

from mcpsniff.core.observations import StdioEvent
from mcpsniff.relay.stdio import StdioOptions, StdioRelay


class CapturingChannel:
    """What the relay uses of a ``Channel``: observations kept in order."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.on_broken: Any = None
        self.broken = False

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.seen.append({"kind": "attach"})

    def send(self, observation: Any) -> None:
        row = {f.name: getattr(observation, f.name) for f in fields(observation)}
        for key, value in row.items():
            if isinstance(value, bytes):
                row[key] = value.decode("latin-1")
        if isinstance(observation, StdioEvent):
            # As the trace will have it: the event's name and its object.
            row.update(name=observation.name, data=observation.data())
        self.seen.append({"kind": type(observation).__name__, **row})

    def send_data(self, direction: str, t: float, chunk: bytes) -> None:
        self.seen.append({"kind": "StreamData", "direction": direction, "t": t,
                          "body": chunk.decode("latin-1")})  # fmt: skip

    def end(self, t: float) -> None:
        self.seen.append({"kind": "end", "t": t})


class NoAnalysis:
    """Stands for the forked analysis process."""

    def __init__(self) -> None:
        self.channel = CapturingChannel()

    async def finish(self, warn: Any = None) -> int:
        self.channel.seen.append({"kind": "finish"})
        return 0


def main() -> int:
    out, separator, *command = sys.argv[1:]
    assert separator == "--"
    analysis = NoAnalysis()
    relay = StdioRelay(StdioOptions(command=command, grace=2.0), analysis, warn=None)  # type: ignore[arg-type]
    status = asyncio.run(relay.run())
    with open(out, "w") as file:
        for row in analysis.channel.seen:
            file.write(json.dumps(row) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
