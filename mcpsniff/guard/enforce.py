"""``--guard enforce``: the relays' decision on each ``tools/call`` before it is forwarded.

Off by default: the relays are transparent recorders (docs/architecture.md,
invariant 1). With ``--guard enforce`` a ``tools/call`` to a tool that
``--forbid-tool`` forbids, or whose definition differs from its pin in the
lock file (``--pins``), is answered by mcpsniff with a JSON-RPC error saying
why and never reaches the server. To know the definitions, the gate reads a
copy of the server's ``initialize`` and ``tools/list`` replies as they pass.

A ``Gate`` is one session's: the stdio relay has one (fed whole lines,
``client_line`` and ``server_line``), the HTTP relay one per session
(``Gates``, fed whole request bodies with ``judge`` and the replies its
exchanges expected with ``learn``). Both relays share every decision here;
they only forward, write the answer and record what happened (the event
``guard-answered``). A gate does no I/O.

A JSON-RPC batch (JSON-RPC 2.0 §6) with one refused call in it is refused
whole: every request in it is answered with an error (the refused calls with
their reason, the others saying that their batch was refused), since
forwarding part of it would change the bytes the client sent.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpsniff.core.guard.diff import Listed, diff_offers
from mcpsniff.core.guard.fingerprint import definitions
from mcpsniff.core.observations import GuardAnswered
from mcpsniff.guard.lockfile import Lock

#: The JSON-RPC error code of a call mcpsniff refused: in the range JSON-RPC
#: 2.0 §5.1 leaves to implementations (-32000 to -32099).
REFUSED = -32001
#: The event the relay records before the reply it wrote itself.
EVENT = GuardAnswered.name
#: At most this many requests are remembered while their reply is awaited.
MAX_PENDING = 4096
#: The longest message the gate judges; a longer one is forwarded unjudged (a
#: tools/call is never that long, and holding more would let any peer take the
#: relay's memory).
MAX_JUDGED = 16 << 20
#: Most sessions the HTTP relay keeps a gate for (the oldest goes first).
MAX_SESSIONS = 4096
#: Most distinct definitions the HTTP relay's gates share (then the sharing starts afresh).
MAX_SHARED = 1 << 16
#: The requests whose replies the gate reads: the server's name, its tools.
_LEARNED = frozenset({"initialize", "tools/list"})


@dataclass(frozen=True)
class EnforcePolicy:
    """What ``--guard enforce`` refuses."""

    #: The server's label: ``stdio:LABEL`` or ``http:URL`` (the lock file's keys add
    #: ``[serverInfo.name]``).
    label: str
    pins: Lock | None = None
    forbid_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """One call the gate refused: what to record."""

    tool: str
    reason: str
    request_id: Any


@dataclass(frozen=True)
class Answer:
    """mcpsniff's reply to a message it refused: the JSON-RPC body, and the calls refused."""

    #: The reply, one JSON document (an object, or an array for a batch), no newline;
    #: empty when nothing is to be answered (notifications only, JSON-RPC 2.0 §4.1).
    body: bytes
    refusals: tuple[Refusal, ...]


#: What a request expects of its reply: the method, and whether it asked for a later page.
Expected = tuple[str, bool]


@dataclass(frozen=True)
class Verdict:
    """The gate's decision on one client message."""

    #: Not None: answer this instead of forwarding.
    answer: Answer | None = None
    #: The forwarded requests whose replies the gate reads, by their id (as JSON).
    expects: dict[bytes, Expected] = field(default_factory=dict)


_FORWARD = Verdict()


class Gate:
    """One session's gate: decides which client requests mcpsniff answers itself."""

    def __init__(self, policy: EnforcePolicy, shared: dict[str, Listed] | None = None) -> None:
        self.policy = policy
        #: Definitions by fingerprint, shared by the sessions of one server, so that
        #: many sessions listing the same tools hold them once.
        self._shared: dict[str, Listed] = {} if shared is None else shared
        self.server_name: str | None = None
        #: The tools listed in this session: name -> fingerprint; None until listed.
        self.listed: dict[str, Listed] | None = None
        #: A paginated tools/list collected page by page.
        self._pages: dict[str, Listed] = {}
        #: The stdio relay's requests awaiting their reply (``client_line``).
        self._pending: dict[bytes, Expected] = {}

    # ------------------------------------------------------------------ the stdio relay

    def client_line(self, line: bytes) -> Answer | None:
        """None: forward ``line``; an ``Answer``: write it instead (never forwarded)."""
        verdict = self.judge(line)
        if verdict.expects and len(self._pending) < MAX_PENDING:
            self._pending.update(verdict.expects)
        return verdict.answer

    def server_line(self, line: bytes) -> None:
        """Learn the server's name and its tools from a reply the client asked for."""
        if self._pending and b'"result"' in line:
            self.read_replies(line, self._pending)

    # ------------------------------------------------------------------ both relays

    def judge(self, body: bytes) -> Verdict:
        """The decision on one client message (a line, or an HTTP request body)."""
        if len(body) > MAX_JUDGED:
            return _FORWARD
        body = _utf8(body)
        if not _marked(body):
            return _FORWARD
        value = _parsed(body)
        batch = type(value) is list
        messages = _messages(value)
        refusals: list[Refusal] = []
        expects: dict[bytes, Expected] = {}
        for message in messages:
            method = message.get("method")
            params = message.get("params")
            if method in _LEARNED and "id" in message:
                paged = type(params) is dict and "cursor" in params
                expects[_key(message["id"])] = (method, paged)
            elif method == "tools/call":
                name = params.get("name") if type(params) is dict else None
                reason = self.reason(name) if type(name) is str else None
                if reason is not None:
                    # Sent as a notification (no id), it gets no answer (JSON-RPC 2.0
                    # §4.1), but a lenient server might still run it: not forwarded.
                    refusals.append(Refusal(name, reason, message.get("id")))  # type: ignore[arg-type]
        if not refusals:
            return Verdict(None, expects) if expects else _FORWARD
        if not batch:
            (refusal,) = refusals
            if "id" not in messages[0]:
                return Verdict(Answer(b"", (refusal,)))
            body = _error(refusal.request_id, refusal.reason, refusal.tool)
            return Verdict(Answer(orjson.dumps(body), (refusal,)))
        return Verdict(Answer(_batch_reply(messages, refusals), tuple(refusals)))

    def read_replies(self, data: bytes, expects: dict[bytes, Expected]) -> None:
        """Learn from the replies in ``data`` (one or a batch) to requests ``expects`` awaits.

        Each reply found is taken out of ``expects``.
        """
        for message in _messages(_parsed(data)):
            if "id" in message and "method" not in message:
                expected = expects.pop(_key(message["id"]), None)
                if expected is not None:
                    self.learn(expected, message.get("result"))

    def learn(self, expected: Expected, result: Any) -> None:
        """Take what a reply to an expected request says: the server's name, its tools."""
        if type(result) is not dict:
            return
        method, paged = expected
        info = result.get("serverInfo")
        if type(info) is dict and type(info.get("name")) is str:
            self.server_name = info["name"][:200]
        if method != "tools/list":
            return
        shared = self._shared
        if len(shared) > MAX_SHARED:
            shared.clear()
        page = {
            d.key: shared.setdefault(d.fingerprint, Listed(d.kind, d.name, d.fingerprint, d.body))
            for d in definitions("tools/list", result)
        }
        if paged:
            page = {**self._pages, **page}
        if type(result.get("nextCursor")) is str:
            self._pages = page
            return
        self._pages = {}
        self.listed = page

    @property
    def identity(self) -> str:
        """The server as the lock file names it."""
        if self.server_name:
            return f"{self.policy.label} [{self.server_name}]"
        return self.policy.label

    def reason(self, tool: str) -> str | None:
        """Why a call to ``tool`` is refused, or None."""
        for pattern in self.policy.forbid_tools:
            if fnmatch.fnmatchcase(tool, pattern):
                return f"mcpsniff guard refused {tool!r}: forbidden by --forbid-tool {pattern!r}"
        lock = self.policy.pins
        if lock is None:
            return None
        pinned = lock.servers.get(self.identity)
        if pinned is None:
            return f"mcpsniff guard refused {tool!r}: server {self.identity!r} is not pinned"
        key = f"tool:{tool}"
        if key not in pinned:
            return f"mcpsniff guard refused {tool!r}: the tool is not pinned"
        if self.listed is None or key not in self.listed:
            return (
                f"mcpsniff guard refused {tool!r}: its definition was not listed in this "
                "session, so it cannot be checked against the pin"
            )
        if pinned[key].fingerprint == self.listed[key].fingerprint:
            return None  # unchanged (the fingerprint covers every member the diff reads)
        changes = diff_offers({key: pinned[key]}, {key: self.listed[key]})
        if changes:
            return (
                f"mcpsniff guard refused {tool!r}: its definition drifted from the pin "
                f"({changes[0].describe()[:300]})"
            )
        return None


class Gates:
    """The HTTP relay's gates, one a session (its ``Mcp-Session-Id``; ``""``: none)."""

    def __init__(self, policy: EnforcePolicy) -> None:
        self.policy = policy
        self._gates: dict[str, Gate] = {}
        self._shared: dict[str, Listed] = {}

    def gate(self, session: str) -> Gate:
        """The gate of ``session``, made at its first use (the oldest goes past the bound)."""
        gate = self._gates.get(session)
        if gate is None:
            if len(self._gates) >= MAX_SESSIONS:
                del self._gates[next(iter(self._gates))]
            gate = self._gates[session] = Gate(self.policy, self._shared)
        return gate


def refused_unread(reason: str) -> Answer:
    """The answer to a request the gate cannot read (its id unknown: null, JSON-RPC 2.0 §5)."""
    text = f"mcpsniff guard refused a request it cannot read: {reason}"
    return Answer(orjson.dumps(_error(None, text)), (Refusal("", text, None),))


def _error(request_id: Any, reason: str, tool: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"refusedBy": "mcpsniff guard"}
    if tool is not None:
        data["tool"] = tool
    error = {"code": REFUSED, "message": reason, "data": data}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _batch_reply(messages: list[dict[str, Any]], refusals: list[Refusal]) -> bytes:
    """One error for each request of a refused batch, in its order (notifications get none)."""
    refused = {_key(r.request_id): r for r in refusals if r.request_id is not None}
    tools = ", ".join(repr(r.tool) for r in refusals)
    others = f"mcpsniff guard refused this batch: it calls {tools[:300]}"
    replies = []
    for message in messages:
        if "id" not in message or "method" not in message:
            continue
        refusal = refused.get(_key(message["id"]))
        if refusal is None:
            replies.append(_error(message["id"], others))
        else:
            replies.append(_error(refusal.request_id, refusal.reason, refusal.tool))
    # A batch of notifications only is answered with nothing at all (JSON-RPC 2.0 §6).
    return orjson.dumps(replies) if replies else b""


def _utf8(body: bytes) -> bytes:
    """A message in UTF-16 or UTF-32, or with a BOM, as UTF-8 (else as it is).

    Python's ``json.loads`` reads those encodings from bytes (RFC 8259 §8.1
    allows only UTF-8 between systems, but a server built on it takes them),
    so a call must not pass unjudged for being encoded another way.
    """
    if body[:1] not in (b"\xef", b"\xfe", b"\xff", b"\x00") and b"\x00" not in body[:4]:
        return body  # the usual case, at the cost of two byte tests
    try:
        return body.decode(json.detect_encoding(body)).encode("utf-8", "surrogatepass")
    except (UnicodeError, LookupError):
        return body


def _marked(body: bytes) -> bool:
    """Whether a message may be a request the gate acts on (else it is not parsed).

    The method names as they appear unescaped, or any escape: ``"tools\\/call"``
    and ``\\u0063`` decode to the same name, so an escaped call must not slip
    past this pre-test.
    """
    return (
        b'"tools/call"' in body
        or b'"tools/list"' in body
        or b'"initialize"' in body
        or b"\\u" in body
        or b"\\/" in body
    )


def _parsed(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _messages(value: Any) -> list[dict[str, Any]]:
    """The JSON-RPC objects of a message or a batch (anything else: none)."""
    if type(value) is dict:
        return [value]
    if type(value) is list:
        return [item for item in value if type(item) is dict]
    return []


def _key(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return b"?"
