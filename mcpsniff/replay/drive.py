"""``replay drive``: re-send a recording's client side to a live server and compare.

The client frames go out in recorded order, and a frame recorded after a
response waits until the live server has sent that response (causal order).
Client ids are sent as recorded, so live responses are found by id; the
server's own requests get the recorded client answer, with the live id.
Every live response is compared with the recorded one (see ``compare``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpsniff.core.model import C2S, S2C
from mcpsniff.replay.compare import Difference, PathPart, diff, match_key
from mcpsniff.replay.script import REQUEST, RESPONSE, Frame, Message, Script, id_key
from mcpsniff.replay.serve import encode, target_of

#: How long a request waits for its live response before it counts as missing.
RESPONSE_TIMEOUT = 30.0


class Link(Protocol):
    """A connection to the live server; it calls the driver's ``receive`` per frame."""

    async def send(self, raw: bytes, frame: Frame | None) -> None: ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class Mismatch:
    """One recorded request whose live response differs from the recorded one."""

    method: str
    target: str | None
    request_id: Any
    differences: list[Difference] = field(default_factory=list)
    #: Why there is nothing to compare (no live response), when that is the problem.
    problem: str | None = None


@dataclass(slots=True)
class DriveResult:
    """What a drive found."""

    compared: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    #: Server-initiated requests the recording had no answer for.
    unanswered_server_requests: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


@dataclass(slots=True)
class Step:
    """A client frame to send, and the responses that must have arrived before it."""

    frame: Frame
    after: list[str]


def plan_steps(script: Script) -> tuple[list[Step], list[Message]]:
    """The client frames to send in order, and the recorded client answers kept aside.

    Frames that only answer server-initiated requests are not sent in order:
    they go out when the live server asks.
    """
    steps: list[Step] = []
    answers: list[Message] = []
    asked: set[str] = set()
    answered: list[str] = []
    for frame in script.frames:
        if frame.direction == C2S:
            if frame.messages and all(m.kind == RESPONSE for m in frame.messages):
                answers.extend(frame.messages)
                continue
            steps.append(Step(frame, list(answered)))
            asked.update(id_key(m.id) for m in frame.messages if m.kind == REQUEST)
        elif frame.direction == S2C:
            for message in frame.messages:
                key = id_key(message.id)
                if message.kind == RESPONSE and key in asked:
                    answered.append(key)
    return steps, answers


class Driver:
    """Runs one drive over a ``Link`` and collects the comparison."""

    def __init__(
        self,
        script: Script,
        ignores: list[tuple[PathPart, ...]] | None = None,
        timeout: float = RESPONSE_TIMEOUT,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.script = script
        self.ignores = ignores or []
        self.timeout = timeout
        self._log = log
        self.steps, answers = plan_steps(script)
        requests = [m for m in script.messages(S2C) if m.kind == REQUEST]
        by_id = {id_key(m.id): m for m in answers}
        #: Recorded server requests, each with the client's recorded answer (or None).
        self._server_requests: list[tuple[Message, Message | None, bool]] = [
            (m, by_id.get(id_key(m.id)), False) for m in requests
        ]
        self._recorded = script.responses_by_request()
        self._live: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._requests: dict[str, Message] = {}
        self.result = DriveResult()
        self._link: Link | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: Set by the link when the live server's output has ended.
        self.gone = asyncio.Event()

    def _future(self, key: str) -> asyncio.Future[dict[str, Any]]:
        future = self._live.get(key)
        if future is None:
            future = self._live[key] = asyncio.get_running_loop().create_future()
        return future

    async def run(self, link: Link) -> DriveResult:
        """Send every step, wait for the responses, compare."""
        self._link = link
        for step in self.steps:
            for key in step.after:
                await self._wait(key)
            for message in step.frame.messages:
                if message.kind == REQUEST:
                    self._requests[id_key(message.id)] = message
                    self._future(id_key(message.id))
            await link.send(step.frame.raw, step.frame)
        for key in list(self._requests):
            await self._wait(key)
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=self.timeout)
        self._compare_all()
        return self.result

    async def _wait(self, key: str) -> None:
        if (C2S, key) not in self._recorded:
            return  # never answered in the recording either: nothing to wait for
        future = self._future(key)
        if future.done():
            return
        if self.gone.is_set():
            return
        # A server that has gone will not answer: stop waiting at once, not after the timeout.
        gone = asyncio.ensure_future(self.gone.wait())
        await asyncio.wait(
            {future, gone}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        gone.cancel()

    def receive(self, raw: bytes) -> None:
        """A frame from the live server (one message or a batch)."""
        try:
            value = json.loads(raw)
        except ValueError:
            return
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                continue
            message = Message(0, None, S2C, item)
            if message.kind == RESPONSE:
                future = self._future(id_key(message.id))
                if not future.done():
                    future.set_result(item)
            elif message.kind == REQUEST:
                task = asyncio.get_running_loop().create_task(self._answer(item))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _answer(self, request: dict[str, Any]) -> None:
        """Answer a live server request with the recorded client answer to its counterpart."""
        key = match_key(request)
        chosen = None
        for exact in (True, False):
            for i, (recorded, answer, used) in enumerate(self._server_requests):
                if used or recorded.method != request.get("method"):
                    continue
                if exact and match_key(recorded.body) != key:
                    continue
                chosen = answer
                self._server_requests[i] = (recorded, answer, True)
                break
            if chosen is not None:
                break
        if chosen is None:
            method = request.get("method")
            self.result.unanswered_server_requests.append(str(method))
            body: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": request.get("id"),
                "error": {"code": -32601, "message": f"replay: no answer to {method} was recorded"},
            }
        else:
            body = dict(chosen.body)
            body["id"] = request.get("id")
        if self._link is not None:
            await self._link.send(encode(body) + self._terminator(), None)

    def _terminator(self) -> bytes:
        return b"\n" if self.script.transport == "stdio" else b""

    def _compare_all(self) -> None:
        for key, request in self._requests.items():
            recorded = self._recorded.get((C2S, key))
            if recorded is None:
                continue
            self.result.compared += 1
            mismatch = Mismatch(request.method or "?", target_of(request.body), request.id)
            future = self._live.get(key)
            if future is None or not future.done():
                mismatch.problem = (
                    "the live server ended without responding"
                    if self.gone.is_set()
                    else f"no response from the live server within {self.timeout:g} s"
                )
                self.result.mismatches.append(mismatch)
                continue
            live = {k: v for k, v in future.result().items() if k != "id"}
            expected = {k: v for k, v in recorded.body.items() if k != "id"}
            mismatch.differences = diff(expected, live, self.ignores)
            if mismatch.differences:
                self.result.mismatches.append(mismatch)
