"""A tiny language of message sequences, to prove each rule fires and its near miss does not.

A ``Proof`` names a catalogue rule and two scripts: ``fire``, traffic that breaks
the rule exactly once in the way the rule describes, and ``miss``, the closest
correct traffic, which must not raise it. A script is a list of steps, each a
direction and a JSON-RPC payload::

    Proof(
        "TASK-CREATE-RESULT",
        fire=[c(req(1, "tools/call", {"name": "t", "task": {}})), s(res(1, {"task": {...}}))],
        miss=[...],
        server_caps={"tasks": {...}},
    )

Unless ``version`` is None, every script starts with a complete handshake at
``version`` (default 2025-11-25) with the given capabilities. ``c``/``s`` are
client and server frames; ``end`` closes the session; ``wait(seconds)`` moves the
clock. Payloads given as ``bytes`` are fed raw (for unparseable frames).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from tests.conftest import Conversation, error, notification, request, result

C2S, S2C = "c2s", "s2c"

req = request
res = result
note = notification
err = error

#: Server capabilities of a handshake when a proof gives none.
DEFAULT_SERVER_CAPS: dict[str, Any] = {
    "tools": {},
    "resources": {"subscribe": True},
    "prompts": {},
    "logging": {},
    "completions": {},
}


def c(payload: Any) -> tuple[str, Any]:
    """A frame the client sends."""
    return (C2S, payload)


def s(payload: Any) -> tuple[str, Any]:
    """A frame the server sends."""
    return (S2C, payload)


def end() -> tuple[str, Any]:
    """Close the session (unanswered requests are reported then)."""
    return ("end", None)


def in_other_session(*steps: Step) -> Step:
    """Play client/server ``steps`` in a second session of the same capture."""
    return ("other", list(steps))


def wait(seconds: float) -> tuple[str, Any]:
    """Let ``seconds`` pass before the next step."""
    return ("wait", seconds)


Step = tuple[str, Any]


# --------------------------------------------------------------------------- HTTP


def http(
    number: int, method: str, path: str = "/mcp", transport: str = "streamable", **headers: str
) -> Step:
    """The shell saw HTTP request ``number`` (headers by name, ``_`` for ``-``)."""
    pairs = [[name.replace("_", "-"), value] for name, value in headers.items()]
    data = {"exchange": number, "method": method, "path": path, "headers": pairs}
    return ("event", ("http-request", {**data, "transport": transport}))


def http_response(number: int, status: int, **headers: str) -> Step:
    """The server's status line and headers for exchange ``number``."""
    pairs = [[name.replace("_", "-"), value] for name, value in headers.items()]
    return ("event", ("http-response", {"exchange": number, "status": status, "headers": pairs}))


def body(number: int, payload: Any, direction: str = C2S, **meta: Any) -> Step:
    """A JSON-RPC body (or SSE data) carried by exchange ``number``."""
    return ("frame", (direction, payload, {"exchange": number, **meta}))


def sse(
    number: int, event: str | None = None, id: str | None = None, endpoint: str | None = None
) -> Step:
    """An SSE event on exchange ``number``'s stream (``endpoint``: a legacy endpoint's URI)."""
    data = {"exchange": number, "event": event, "id": id, "index": 0}
    if endpoint is not None:
        data["endpoint"] = endpoint
    return ("event", ("sse-event", data))


ACCEPT_BOTH = "application/json, text/event-stream"
STREAM = "text/event-stream"


@dataclass
class Proof:
    """A rule's firing script and its near miss."""

    rule: str
    fire: Sequence[Step]
    miss: Sequence[Step]
    version: str | None = "2025-11-25"
    client_caps: dict[str, Any] = field(default_factory=dict)
    server_caps: dict[str, Any] | None = None
    transport: str = "stdio"
    #: Capabilities of the near miss's handshake, when they are what makes it correct.
    miss_client_caps: dict[str, Any] | None = None
    miss_server_caps: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.rule


def play(proof: Proof, steps: Sequence[Step], *, near: bool = False) -> Conversation:
    """Run the handshake (unless ``version`` is None) and then ``steps``; the conversation.

    ``near`` uses the near miss's capabilities where the proof gives them.
    """
    convo = Conversation(proof.transport)
    client_caps, server_caps = proof.client_caps, proof.server_caps
    if near:
        if proof.miss_client_caps is not None:
            client_caps = proof.miss_client_caps
        if proof.miss_server_caps is not None:
            server_caps = proof.miss_server_caps
    if proof.version is not None:
        convo.client(
            request(
                0,
                "initialize",
                {
                    "protocolVersion": proof.version,
                    "capabilities": client_caps,
                    "clientInfo": {"name": "proof", "version": "1"},
                },
            )
        )
        caps = DEFAULT_SERVER_CAPS if server_caps is None else server_caps
        convo.server(
            result(
                0,
                {
                    "protocolVersion": proof.version,
                    "capabilities": caps,
                    "serverInfo": {"name": "proof", "version": "1"},
                },
            )
        )
        convo.client(notification("notifications/initialized"))
    for kind, payload in steps:
        if kind == C2S:
            convo.client(payload)
        elif kind == S2C:
            convo.server(payload)
        elif kind == "wait":
            convo.t += payload
        elif kind == "end":
            convo.close()
        elif kind == "event":
            name, data = payload
            convo.t += 0.001
            convo.records.extend(convo.session.event(name, convo.t, data))
        elif kind == "other":
            # Another session of the same capture (it shares ``Session.shared``).
            other = Conversation(proof.transport)
            other.session.key = "other"
            other.session.shared = convo.session.shared
            for direction, message in payload:
                (other.client if direction == C2S else other.server)(message)
            convo.records.extend(other.records)
        elif kind == "frame":
            direction, body, meta = payload
            convo.t += 0.001
            raw = body if isinstance(body, bytes) else orjson.dumps(body)
            out = convo.session.feed_frame(direction, proof.transport, raw, convo.t, meta)
            convo.records.extend(out)
        else:
            raise ValueError(f"unknown step {kind!r}")
    return convo


def assert_cause(proof: Proof, fragment: str) -> None:
    """The rule fires on ``fire`` with a message holding ``fragment``, and not on ``miss``.

    For the causes a rule's description names beyond the one its proof fires.
    """
    fired = play(proof, proof.fire)
    messages = [f.message for f in fired.find(proof.rule)]
    assert any(fragment in m for m in messages), (proof.rule, fragment, messages)
    missed = play(proof, proof.miss, near=True)
    assert not missed.find(proof.rule), [f.message for f in missed.find(proof.rule)]


def assert_proof(proof: Proof) -> None:
    """The rule fires on ``fire`` and stays silent on ``miss``."""
    fired = play(proof, proof.fire)
    assert fired.find(proof.rule), (
        f"{proof.rule} did not fire; findings: {[(f.rule, f.message) for f in fired.findings]}"
    )
    missed = play(proof, proof.miss, near=True)
    assert not missed.find(proof.rule), [f.message for f in missed.find(proof.rule)]
