"""Random but reproducible observation streams for the HTTP adapter's differential test.

``stream(seed)`` makes a capture's observations (requests on and off the MCP
path, legacy and Streamable HTTP streams, compressed bodies, gaps, cut and
unreachable exchanges, endpoint rewrites) from a seeded generator, as plain
lists; ``observations`` builds the typed observations. The adapter's records
for the first seeds were recorded from the code before the sweep of issue 24
(``tests/data/http_adapter_records.jsonl.gz``), so that any later change to
what the adapter records shows up as a difference.
"""

from __future__ import annotations

import gzip
import random
from typing import Any

from mcpsniff.core import observations as ob
from mcpsniff.core.observations import EndpointRewritten, RequestCut

RESP_HEAD = "ResponseBegin"


def stream(seed: int) -> tuple[list[list[Any]], random.Random]:
    """The observations of seed ``seed``, and the generator (it picks the adapter's settings)."""
    rng = random.Random(seed)
    return gen(rng), rng


def gen(rng):
    obs = []
    t = 0.0
    n = rng.randint(1, 6)
    for number in range(1, n + 1):
        t += 1
        method = rng.choice(["GET", "GET", "POST", "POST", "DELETE"])
        path = rng.choice(
            [
                "/mcp",
                "/sse",
                "/messages?sessionId=abc",
                "/other",
                "/.well-known/x",
                "/mcp?session_id=q",
            ]
        )
        headers = []
        if rng.random() < 0.4:
            headers.append(("Mcp-Session-Id", rng.choice(["s1", "s2"])))
        if rng.random() < 0.5:
            headers.append(("Accept", rng.choice(["text/event-stream", "application/json"])))
        if rng.random() < 0.3:
            headers.append(("MCP-Protocol-Version", rng.choice(["2025-06-18", "2026-07-28"])))
        if rng.random() < 0.1:
            headers.append(("Connection", "close, X-Drop"))
        if rng.random() < 0.1:
            headers.append(("X-Drop", "y"))
        if rng.random() < 0.2:
            headers.append(("Authorization", "Bearer sekrit123456789"))
        body = b""
        if method == "POST":
            body = rng.choice(
                [
                    b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                    b'{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}',
                    b"not json",
                    b"",
                ]
            )
            if rng.random() < 0.15:
                body = gzip.compress(body, mtime=0)
                headers.append(("Content-Encoding", "gzip"))
            elif rng.random() < 0.05:
                headers.append(("Content-Encoding", "zstd"))
        if rng.random() < 0.1 and body:
            obs.append(["RequestBody", number, t, 0, body[:3]])
            obs.append(
                [
                    "RequestBegin",
                    number,
                    t,
                    method,
                    path,
                    headers,
                    rng.choice([None, "h:1"]),
                    "127.0.0.1:5",
                    len(body) + rng.choice([0, 0, 4]),
                    body[3:],
                ]
            )
        else:
            obs.append(
                [
                    "RequestBegin",
                    number,
                    t,
                    method,
                    path,
                    headers,
                    rng.choice([None, "h:1"]),
                    rng.choice([None, "[::1]:7"]),
                    len(body),
                    body,
                ]
            )
        if rng.random() < 0.1:
            obs.append(["Unreachable", number, t + 0.1, "http://up/x?token=abc", "refused"])
            continue
        if rng.random() < 0.1:
            obs.append(["ExchangeEnd", number, t + 0.1, "client-disconnected", False])
            continue
        status = rng.choice([200, 200, 200, 202, 404, 500])
        ctype = rng.choice(
            [
                "application/json",
                "text/event-stream",
                "text/event-stream; charset=utf-8",
                "text/html",
                "",
            ]
        )
        rh = [("Content-Type", ctype)] if ctype else []
        if rng.random() < 0.3:
            rh.append(("Mcp-Session-Id", rng.choice(["s1", "s9"])))
        sse = ctype.startswith("text/event-stream")
        gz = rng.random() < 0.15
        if gz:
            rh.append(("Content-Encoding", rng.choice(["gzip", "gzip", "br", "zstd"])))
        obs.append([RESP_HEAD, number, t + 0.2, status, rh])
        if sse:
            parts = []
            if rng.random() < 0.3:
                parts.append(b": pad\n\n")
            if rng.random() < 0.5:
                parts.append(
                    rng.choice(
                        [
                            b"event: endpoint\ndata: /messages?sessionId=abc\n\n",
                            b"event: endpoint\ndata: http://up:1/messages?sessionId=zz&token=x\n\n",
                            b"event: endpoint\ndata: /m\n\n",
                        ]
                    )
                )
            for _ in range(rng.randint(0, 3)):
                parts.append(
                    rng.choice(
                        [
                            b'id: 1\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
                            b"retry: 10\n\n",
                            b'data: {"jsonrpc":"2.0","method":"n"}\n\n',
                            b"event: endpoint\ndata: /messages?sessionId=late\n\n",
                            b"data: partial",
                        ]
                    )
                )
            raw = b"".join(parts)
            if gz:
                raw = gzip.compress(raw, mtime=0)
            if rng.random() < 0.2 and method == "GET":
                obs.append(["NoFirstEvent", number, t + 0.3])
            cut = rng.randint(0, len(raw))
            for piece in (raw[:cut], raw[cut:]):
                if piece:
                    obs.append(["ResponseBody", number, t + 0.4, False, piece])
                if rng.random() < 0.05:
                    obs.append(["ResponseGap", number, t + 0.45, 7])
        else:
            raw = rng.choice(
                [
                    b'{"jsonrpc":"2.0","id":1,"result":{}}',
                    b"<html>Not Found token=abc</html>",
                    b"Accepted",
                    b"",
                ]
            )
            if gz:
                raw = gzip.compress(raw, mtime=0)
            if rng.random() < 0.5:
                obs.append(["ResponseBody", number, t + 0.4, True, raw])
            else:
                for i in range(0, len(raw), 5):
                    obs.append(["ResponseBody", number, t + 0.4, False, raw[i : i + 5]])
        if rng.random() < 0.1:
            obs.append(["Rewrite", number, t + 0.5, "http://up:1/m", "http://me/m"])
        if rng.random() < 0.05:
            obs.append(["Cut", number, t + 0.5, 12])
        obs.append(
            [
                "ExchangeEnd",
                number,
                t + 0.6,
                rng.choice(["complete", "upstream-error: x"]),
                rng.random() < 0.9,
            ]
        )
    if rng.random() < 0.2:
        obs.append(["CaptureGap", t + 1, 2, 30])
    if rng.random() < 0.1:
        # A generic transport event, which no HTTP shell sends any more (the
        # observations are typed now): still drawn, so that the streams stay as
        # recorded, but not replayed (``observations``), and its one record is
        # left out of the recorded outputs (``removed_event``).
        obs.append(["TransportEvent", "http", "http-refused", t + 1, {"kind": "x"}])
    obs.append(["CaptureEnd", t + 2])
    return obs


def removed_event(entry: list[Any]) -> bool:
    """Whether a recorded output is the record of the generic event no longer replayed."""
    return entry[:3] == ["event", "http", "http-refused"] and entry[4] == {"kind": "x"}


def observations(plain: list[list[Any]]) -> list[Any]:
    """The typed observations of a stream."""
    out: list[Any] = []
    for kind, *args in plain:
        if kind == "TransportEvent":
            continue
        if kind == "RequestBegin":
            args[4] = tuple(map(tuple, args[4]))
        if kind == "ResponseBegin":
            args[3] = tuple(map(tuple, args[3]))
        if kind == "Rewrite":
            out.append(EndpointRewritten(*args))
        elif kind == "Cut":
            out.append(RequestCut(*args))
        else:
            out.append(getattr(ob, kind)(*args))
    return out
