"""``replay drive``: re-send a recording's client side to a live server and compare.

Each recorded session is driven as a session of its own: its own link (a
spawned process, or an HTTP client with its own ``Mcp-Session-Id``), its own
id space. The client frames of all sessions go out in recorded order, and a
frame recorded after a response waits until the live server has sent that
response (causal order across the whole recording, so concurrent sessions
interleave as they did). Client ids are sent as recorded; live responses are
paired with requests the way recorded ones are (see ``pairing``). The
server's own requests get the recorded client answer, with the live id.

Every recorded response is either compared with its live counterpart or
reported as not compared, with the reason (no answer in time, the server
exited, the request could not be sent). A drive passes only when every
recorded response was compared and matched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpsniff.core.model import C2S, S2C
from mcpsniff.replay import safejson
from mcpsniff.replay.compare import Difference, PathPart, diff, match_key
from mcpsniff.replay.pairing import Pairer, RequestRef, recorded_responses, ref_of
from mcpsniff.replay.script import REQUEST, RESPONSE, Frame, Message, Script, id_key
from mcpsniff.replay.serve import encode, target_of

#: How long a request waits for its live response before it counts as missing.
RESPONSE_TIMEOUT = 30.0


class Link(Protocol):
    """A connection to the live server for one recorded session.

    It hands what the server sends to its ``LinkSink``; ``gone`` is set (with
    the reason) once the server can no longer answer on it.
    """

    gone: str | None
    lost: asyncio.Event

    async def send(self, raw: bytes, frame: Frame | None) -> None: ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class Mismatch:
    """One recorded response that the live server did not reproduce."""

    method: str
    target: str | None
    request_id: Any
    differences: list[Difference] = field(default_factory=list)
    #: Why there is nothing to compare (no live response), when that is the problem.
    problem: str | None = None
    #: The recorded session, when the recording holds more than one.
    session: str | None = None
    #: The trace seq of the recorded request's frame (tells apart equal ids of two clients).
    seq: int | None = None


@dataclass(slots=True)
class ServerEnd:
    """A live server that went away during the drive."""

    #: One line, e.g. "the live server exited with code 3"; the problem of every
    #: request it left unanswered.
    reason: str
    #: Its last stderr lines, when it had any.
    stderr: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DriveResult:
    """What a drive found."""

    #: Responses in the recording that answered a client request.
    recorded: int = 0
    #: Of those, how many had a live counterpart to compare with.
    compared: int = 0
    #: Compared, and different.
    mismatches: list[Mismatch] = field(default_factory=list)
    #: Recorded responses with no live counterpart, each with the reason.
    not_compared: list[Mismatch] = field(default_factory=list)
    #: Server-initiated requests the recording had no answer for.
    unanswered_server_requests: list[str] = field(default_factory=list)
    #: How each live server ended, when it ended on its own.
    server_ends: list[ServerEnd] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.recorded > 0
            and self.compared == self.recorded
            and not self.mismatches
            and not self.not_compared
            and not self.unanswered_server_requests
        )


@dataclass(slots=True)
class Step:
    """A client frame to send, and the responses that must have arrived before it."""

    frame: Frame
    session: int
    after: list[RequestRef]


def plan_steps(script: Script) -> tuple[list[Step], dict[int, list[Message]]]:
    """The client frames to send in order, and each session's recorded client answers.

    Frames that only answer server-initiated requests are not sent in order:
    they go out when the live server asks.
    """
    index = {name: i for i, name in enumerate(script.sessions)}
    recorded = recorded_responses(script)
    answering = {ref_of(response): ref for ref, response in recorded.items()}
    steps: list[Step] = []
    answers: dict[int, list[Message]] = {}
    arrived: list[RequestRef] = []
    for frame in script.frames:
        session = index.get(frame.session, 0)
        if frame.direction == C2S:
            if frame.messages and all(m.kind == RESPONSE for m in frame.messages):
                answers.setdefault(session, []).extend(frame.messages)
                continue
            steps.append(Step(frame, session, arrived))
            arrived = []
        elif frame.direction == S2C:
            for message in frame.messages:
                ref = answering.get(ref_of(message))
                if ref is not None:
                    arrived.append(ref)
    return steps, answers


class LinkSink:
    """What a link calls with what the live server did on one session."""

    def __init__(self, driver: Driver, session: int) -> None:
        self._driver = driver
        self._session = session

    def receive(self, raw: bytes, post: int | None = None) -> None:
        """A frame from the server (``post``: the recorded frame whose POST it answered)."""
        self._driver.receive(self._session, raw, post)

    def finished(self, post: int, why: str) -> None:
        """The POST of recorded frame ``post`` ended; requests it left unanswered never will be."""
        self._driver.finished(self._session, post, why)

    def lost(self, reason: str, stderr: list[str] | None = None) -> None:
        """The server can no longer answer on this session (``stderr``: its last lines)."""
        self._driver.lost(self._session, reason, stderr)


LinkFactory = Callable[[int, LinkSink], Awaitable[Link]]


class Driver:
    """Runs one drive over one link per recorded session and collects the comparison."""

    def __init__(
        self,
        script: Script,
        ignores: list[tuple[PathPart, ...]] | None = None,
        timeout: float = RESPONSE_TIMEOUT,
    ) -> None:
        self.script = script
        self.ignores = ignores or []
        self.timeout = timeout
        self.steps, answers = plan_steps(script)
        self._recorded = recorded_responses(script)
        self._http = script.transport != "stdio"
        #: Per session: recorded server requests, the client's recorded answer, whether used.
        self._server_requests: dict[int, list[list[Any]]] = {}
        index = {name: i for i, name in enumerate(script.sessions)}
        for frame in script.frames:
            if frame.direction != S2C:
                continue
            session = index.get(frame.session, 0)
            by_id = {id_key(m.id): m for m in answers.get(session, [])}
            for message in frame.messages:
                if message.kind == REQUEST:
                    answer = by_id.get(id_key(message.id))
                    self._server_requests.setdefault(session, []).append([message, answer, False])
        self._pairers = [Pairer() for _ in script.sessions] or [Pairer()]
        self._links: dict[int, Link] = {}
        self._requests: dict[RequestRef, tuple[Message, int]] = {}
        self._live: dict[RequestRef, asyncio.Future[dict[str, Any] | None]] = {}
        self._deadline: dict[RequestRef, float] = {}
        self._problems: dict[RequestRef, str] = {}
        #: Recorded frame seq -> the requests it carried (an HTTP POST's requests).
        self._sent_in: dict[int, list[RequestRef]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.result = DriveResult(recorded=len(self._recorded))

    async def run(self, connect: LinkFactory) -> DriveResult:
        """Send every step, wait for the responses, compare; links are closed by the caller."""
        loop = asyncio.get_running_loop()
        for step in self.steps:
            for ref in step.after:
                await self._wait(ref)
            link = self._links.get(step.session)
            if link is None:
                link = self._links[step.session] = await connect(
                    step.session, LinkSink(self, step.session)
                )
            requests = [m for m in step.frame.messages if m.kind == REQUEST]
            for message in requests:
                ref = ref_of(message)
                self._requests[ref] = (message, step.session)
                self._live[ref] = loop.create_future()
                self._deadline[ref] = loop.time() + self.timeout
                post = step.frame.seq if self._http else None
                self._pairers[step.session].opened(message.id, ref, post)
                self._sent_in.setdefault(step.frame.seq, []).append(ref)
            if link.gone is not None:
                # Nothing more can be sent on it: say so once per request, do not try.
                for message in requests:
                    self._fail(ref_of(message), link.gone)
                continue
            await link.send(step.frame.raw, step.frame)
        for ref in list(self._requests):
            await self._wait(ref)
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=self.timeout)
        self._compare_all()
        return self.result

    @property
    def links(self) -> list[Link]:
        """The links opened so far."""
        return list(self._links.values())

    async def _wait(self, ref: RequestRef) -> None:
        if ref not in self._recorded:
            return  # never answered in the recording either: nothing to wait for
        future = self._live.get(ref)
        if future is None or future.done():
            return
        _message, session = self._requests[ref]
        link = self._links.get(session)
        if link is None:
            return
        if link.gone is not None:
            self._fail(ref, link.gone)
            return
        remaining = self._deadline[ref] - asyncio.get_running_loop().time()
        lost = asyncio.ensure_future(link.lost.wait())
        try:
            await asyncio.wait(
                {future, lost}, timeout=max(remaining, 0), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            lost.cancel()
        if future.done():
            return
        if link.gone is not None:
            self._fail(ref, link.gone)
            return
        message, _ = self._requests[ref]
        # One silent request is enough to stop waiting on the rest of the session:
        # the drive has failed already, and N more timeouts would only make it slow.
        self.lost(
            session,
            f"the live server stopped answering (no response to {message.method or '?'} "
            f"within {self.timeout:g} s)",
        )

    def _fail(self, ref: RequestRef, reason: str) -> None:
        future = self._live.get(ref)
        if future is not None and not future.done():
            self._problems[ref] = reason
            future.set_result(None)

    def lost(self, session: int, reason: str, stderr: list[str] | None = None) -> None:
        """A link's server has gone: every request still waiting on it fails with ``reason``."""
        link = self._links.get(session)
        if link is not None and link.gone is None:
            link.gone = reason
            link.lost.set()
            if not any(end.reason == reason for end in self.result.server_ends):
                self.result.server_ends.append(ServerEnd(reason, list(stderr or [])))
        for ref, (_message, owner) in self._requests.items():
            if owner == session:
                self._fail(ref, reason)

    def finished(self, session: int, post: int, why: str) -> None:
        """A POST ended; the requests it carried that got no answer on it fail."""
        for ref in self._sent_in.get(post, []):
            self._fail(ref, why)

    def receive(self, session: int, raw: bytes, post: int | None) -> None:
        """A frame from the live server (one message or a batch)."""
        try:
            value = safejson.loads(raw)
        except ValueError:
            return  # not JSON-RPC: the request it should have answered is reported unanswered
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                continue
            message = Message(0, None, S2C, item)
            if message.kind == RESPONSE:
                ref = self._pairers[session].answer(message.id, post)
                future = self._live.get(ref) if ref is not None else None
                if future is not None and not future.done():
                    future.set_result(item)
            elif message.kind == REQUEST:
                task = asyncio.get_running_loop().create_task(self._answer(session, item))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _answer(self, session: int, request: dict[str, Any]) -> None:
        """Answer a live server request with the recorded client answer to its counterpart."""
        key = match_key(request)
        chosen = None
        candidates = self._server_requests.get(session, [])
        for exact in (True, False):
            for entry in candidates:
                recorded, answer, used = entry
                if used or recorded.method != request.get("method"):
                    continue
                if exact and match_key(recorded.body) != key:
                    continue
                chosen = answer
                entry[2] = True
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
        link = self._links.get(session)
        if link is not None and link.gone is None:
            await link.send(encode(body) + (b"" if self._http else b"\n"), None)

    def _compare_all(self) -> None:
        several = len(self.script.sessions) > 1
        for ref, recorded in sorted(self._recorded.items()):
            if ref not in self._requests:
                continue
            request, session = self._requests[ref]
            mismatch = Mismatch(
                request.method or "?",
                target_of(request.body),
                request.id,
                session=self.script.sessions[session] if several else None,
                seq=ref[0],
            )
            future = self._live[ref]
            live_body = future.result() if future.done() else None
            if live_body is None:
                mismatch.problem = self._problems.get(ref) or (
                    f"no response from the live server within {self.timeout:g} s"
                )
                self.result.not_compared.append(mismatch)
                continue
            self.result.compared += 1
            live = {k: v for k, v in live_body.items() if k != "id"}
            expected = {k: v for k, v in recorded.body.items() if k != "id"}
            mismatch.differences = diff(expected, live, self.ignores)
            if mismatch.differences:
                self.result.mismatches.append(mismatch)
