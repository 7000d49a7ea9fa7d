"""The inputs of the Session differential test, and the digests of the general path.

The plain-envelope and inline-pairing shortcuts of ``core/session/`` must find
exactly what was recorded for each generated sequence: ``data/session_digests.json``
holds a digest of the findings (rule, severity, frames) and the message records
(kind, id, pairing, latency). The digests were first those of the general path
at ``1c5b6d6``; they were recorded again when the 2026-07-28 verdicts changed on
purpose (an ``initialize`` offered on a stateless connection pairs as a stateless
request until the server accepts it; removed features are flagged in every
position). ``python -m tests.core.session_reference > FILE`` rebuilds them; a
change to them must be a verdict changed on purpose, said in the commit.
``tests/core/session/test_session.py`` compares. Sequences: ids of
every JSON type (1, 1.0, "1", true, null, huge ints, floats), duplicates,
batches, out-of-order and unknown replies, cancellations, notifications with
ids, the stateless era's ``_meta`` version, hostile envelopes.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from mcpsniff.core.model import FindingRecord, MessageRecord
from mcpsniff.core.session import Session

FIXTURE = Path(__file__).parent / "data" / "session_digests.json"
META = "io.modelcontextprotocol/protocolVersion"
IDS: list[Any] = [1, 1.0, "1", True, 2, "2", 0, -1, 2**63, 2**64 + 1, 10**30, None]
IDS += [[1], {"a": 1}, 1.5, "", "xxx", 3, 4]
METHODS = ["ping", "tools/list", "tools/call", "initialize", "notifications/cancelled"]
METHODS += ["notifications/initialized", "rpc.x", "resources/read", "notifications/progress"]
METHODS += ["prompts/get", "x/y"]
PARAMS: list[Any] = [{}, {"name": "t"}, {"_meta": {"progressToken": 1}}, {"uri": "a://b"}, []]
PARAMS += [{"_meta": {META: "2026-06-30"}}, {"_meta": {META: "2025-06-18"}, "name": "t"}]
PARAMS += [{"arguments": {}, "name": "t"}]
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"%s",'
    b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n'
)
INITIALIZED = (
    b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n'
)


def _encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def _hostile_message(r: random.Random, ids: list[Any]) -> dict[str, Any]:
    k = r.random()
    if k < 0.35:
        ident = r.choice(IDS)
        ids.append(ident)
        m: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": r.choice(METHODS)}
        if r.random() < 0.8:
            m["params"] = r.choice([*PARAMS, {"requestId": r.choice(IDS)}])
        return m
    if k < 0.7:
        ident = r.choice(ids) if ids and r.random() < 0.8 else r.choice(IDS)
        result = r.choice([{}, {"tools": []}, {"content": []}, [], 1, {"task": {}}])
        return {"jsonrpc": "2.0", "id": ident, "result": result}
    if k < 0.8:
        ident = r.choice(ids) if ids and r.random() < 0.8 else r.choice(IDS)
        errors = [{"code": -32601, "message": "x"}, {"code": -32700, "message": "p"}]
        return {"jsonrpc": "2.0", "id": ident, "error": r.choice([*errors, {"code": 1.0}, "bad"])}
    if k < 0.9:
        m = {"jsonrpc": "2.0", "method": r.choice(METHODS)}
        if r.random() < 0.5:
            m["params"] = {"requestId": r.choice(ids) if ids else 1}
        if r.random() < 0.2:
            m["id"] = r.choice(IDS)
        return m
    m = {"jsonrpc": r.choice(["2.0", "1.0", None]), "id": r.choice(IDS), "method": "ping"}
    if r.random() < 0.5:
        m["extra"] = 1
    if r.random() < 0.3:
        del m["jsonrpc"]
    return m


def hostile(seed: int) -> list[tuple[str, bytes]]:
    """A short sequence of mostly broken or unusual messages."""
    r = random.Random(seed)
    frames: list[tuple[str, bytes]] = []
    if r.random() < 0.5:
        version = r.choice([b"2025-06-18", b"2024-11-05", b"2025-03-26"])
        frames += [("c2s", INITIALIZE % version), ("s2c", INITIALIZED)]
    ids: list[Any] = []
    previous = b"{}"
    for _ in range(r.randint(1, 25)):
        direction = r.choice(["c2s", "s2c"])
        if r.random() < 0.15:
            count = r.randint(0, 3)
            line = b"[" + b",".join(_encode(_hostile_message(r, ids)) for _ in range(count)) + b"]"
        else:
            line = _encode(_hostile_message(r, ids))
            if r.random() < 0.05:
                line = line.replace(b'"id":1,', b'"id":1.0,')
            if r.random() < 0.05:
                line = line.replace(b'"id":1,', b'"id":100000000000000000000001,')
            if r.random() < 0.1:
                line = previous
            previous = line
        frames.append((direction, line + b"\n"))
    return frames


def usual(seed: int) -> list[tuple[str, bytes]]:
    """A longer, mostly well-behaved session: the fast paths' own ground."""
    r = random.Random(seed)
    frames = [("c2s", INITIALIZE % b"2025-06-18"), ("s2c", INITIALIZED)]
    frames.append(("c2s", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'))

    def send(direction: str, message: Any) -> None:
        raw = message if isinstance(message, bytes) else _encode(message)
        frames.append((direction, raw + b"\n"))

    inflight: list[tuple[Any, str]] = []
    n = 0
    for _ in range(r.randint(5, 400)):
        k = r.random()
        if k < 0.45:
            n += 1
            ident = r.choice([n, str(n), n, n]) if r.random() < 0.9 else r.choice(IDS[:12])
            method = r.choice(["ping", "tools/list", "tools/call"])
            params = {} if method != "tools/call" else {"name": "echo", "arguments": {"x": n}}
            message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
            if method == "ping" and r.random() < 0.5:
                del message["params"]
            send("c2s", message)
            inflight.append((ident, method))
        elif k < 0.85 and inflight:
            j = r.randrange(len(inflight)) if r.random() < 0.3 else 0
            ident, method = inflight.pop(j) if r.random() < 0.9 else inflight[j]
            if r.random() < 0.05:
                ident = r.choice(IDS[:12])
            if r.random() < 0.1:
                failure = {"code": -32603, "message": "x"}
                send("s2c", {"jsonrpc": "2.0", "id": ident, "error": failure})
            else:
                result: dict[str, Any] = {}
                if method == "tools/list":
                    result = {"tools": []}
                elif method == "tools/call":
                    result = {"content": [{"type": "text", "text": "y"}]}
                send("s2c", {"jsonrpc": "2.0", "id": ident, "result": result})
        elif k < 0.9 and inflight:
            ident, _ = r.choice(inflight)
            cancel = {"requestId": ident}
            send("c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        elif k < 0.95:
            items = []
            for _ in range(r.randint(1, 3)):
                n += 1
                items.append(_encode({"jsonrpc": "2.0", "id": n, "method": "ping"}))
                inflight.append((n, "ping"))
            send("c2s", b"[" + b",".join(items) + b"]")
        else:
            progress = {"progressToken": 1, "progress": 1}
            message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}
            send(r.choice(["c2s", "s2c"]), message)
    return frames


#: Rules whose checks came after 1c5b6d6 (issue 25, 2026-07-28 HTTP and negotiation).
_LATER_RULES = frozenset(
    {
        "MOD-LOGLEVEL-INVALID",
        "MOD-LIST-STABLE",
        "MOD-HTTP-SSE",
        "MOD-HTTP-404-METHOD",
        "MOD-HTTP-BASE64",
        "MOD-HTTP-PARAM-HEADERS",
        # rules/cancellation_2026.py: an answer long after its cancellation (info).
        "CANCEL-NO-RESPONSE",
        # rules/latency.py: a ping answered late (info; generated time runs 0.25 s a frame).
        "PING-PROMPT",
    }
)


def _later_check(rec: FindingRecord) -> bool:
    """A finding 1c5b6d6 could not make: a check added since, also under an older rule id.

    The comparison is about the fast paths' pairing and findings, not about
    checks written later: the server's side of MOD-META-REQUIRED and the
    header rules (``data.blame``), MOD-UNSUPPORTED-VERSION's answers and
    retries (any ``data``), MOD-LOG-OPTIN's levels and streams,
    and MSG-META-KEYS on trace context values.
    """
    data = rec.data or {}
    if rec.rule in _LATER_RULES or data.get("blame") in ("server", "client"):
        return True
    if rec.rule == "MOD-UNSUPPORTED-VERSION":
        return bool(data)  # 1c5b6d6's (a -32022 without data.supported) has none
    if rec.rule == "MOD-LOG-OPTIN":
        return data.get("cause") in ("below-level", "listen-stream")
    return rec.rule == "MSG-META-KEYS" and data.get("key") in (
        "traceparent",
        "tracestate",
        "baggage",
    )


def digest(frames: list[tuple[str, bytes]]) -> str:
    """What a Session finds in ``frames``: findings and pairing, as a short digest."""
    session = Session()
    out = []
    t = 0.0
    for direction, raw in frames:
        t += 0.25
        out += session.feed(direction, "stdio", raw, t)
    out += session.close(t + 1)
    summary: list[Any] = []
    for rec in out:
        if isinstance(rec, FindingRecord):
            if not _later_check(rec):
                summary.append(("F", rec.rule, rec.severity, rec.seq))
        elif isinstance(rec, MessageRecord):
            pairing = (rec.answers, rec.request_index, rec.latency_ms, rec.note)
            kind = (rec.frame, rec.kind, rec.index, repr(rec.id), rec.has_id, rec.method)
            summary.append(("M", *kind, *pairing))
    return hashlib.sha256(json.dumps(summary).encode()).hexdigest()[:16]


GENERATORS = {"hostile": hostile, "usual": usual}
SEEDS = range(300)


def expected() -> dict[str, list[str]]:
    """The recorded digests, per generator, in seed order."""
    return json.loads(FIXTURE.read_text())


if __name__ == "__main__":
    print(json.dumps({k: [digest(g(seed)) for seed in SEEDS] for k, g in GENERATORS.items()}))
