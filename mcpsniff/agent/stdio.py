"""``mcpsniff mcp`` over stdio: newline-delimited JSON-RPC on stdin and stdout.

MCP basic/transports (stdio): "Messages are delimited by newlines, and MUST
NOT contain embedded newlines", and "The server MUST NOT write anything to
its stdout that is not a valid MCP message". So replies go out as compact
JSON lines and nothing else is printed on stdout; diagnostics go to stderr.
Lines are split with the core's ``LineFramer``, the same framing the relay
records with.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from mcpsniff.agent.server import TraceServer
from mcpsniff.core.framing import LineFramer

_CHUNK = 1 << 16
#: The longest request line read; a longer one is answered -32700 and skipped.
LINE_LIMIT = 4 << 20
_TOO_LONG = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: line too long"}}\n'
)


def serve_stdio(
    server: TraceServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Answer messages from ``stdin`` on ``stdout`` until end of input."""
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    framer = LineFramer()
    fd = source.fileno()
    skipping = False
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        if skipping:
            # The rest of a line too long to read: dropped up to its newline.
            end = chunk.find(b"\n")
            if end < 0:
                continue
            chunk, skipping = chunk[end + 1 :], False
        for line in framer.feed(chunk):
            _answer(server, line, sink)
        if framer.pending > LINE_LIMIT:
            framer, skipping = LineFramer(), True
            sink.write(_TOO_LONG)
            sink.flush()


def _answer(server: TraceServer, line: bytes, sink: BinaryIO) -> None:
    text = line.strip()
    if not text:
        return
    reply = server.handle_bytes(text)
    if reply is not None:
        sink.write(reply + b"\n")
        sink.flush()
