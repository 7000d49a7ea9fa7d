"""The heads a faulted HTTP exchange sends instead of the ones it received.

A fault may change a message's length (``corrupt``, ``duplicate``, a JSON body
judged whole), so ``mcpsniff http --fault`` (``http_faults.py``) re-frames
what it forwards: a request held whole goes on with a Content-Length of its
new body, a response it takes over goes on chunked (HTTP/1.1, RFC 9112 §7.1:
"A sender MUST NOT send a Content-Length header field in any message that
contains a Transfer-Encoding header field"), and the response to a duplicate
nobody asked for goes nowhere. Every other line of a head is kept as it came.
An answer mcpsniff gives in the server's place is read back for the trace
(``answer_parts``).
"""

from __future__ import annotations

from dataclasses import replace

from mcpsniff.http1.events import ResponseHead


def with_length(head: bytes, length: int) -> bytes:
    """A forwarded request head framing a body of ``length`` bytes with Content-Length."""
    lines = head[:-4].split(b"\r\n")
    kept = [
        line
        for line in lines[1:]
        if line.split(b":", 1)[0].strip().lower() not in (b"content-length", b"transfer-encoding")
    ]
    return b"\r\n".join([lines[0], *kept, b"Content-Length: %d" % length]) + b"\r\n\r\n"


def chunked_head(head: ResponseHead) -> ResponseHead:
    """``head`` with chunked framing instead of a Content-Length (the body may change)."""
    pairs = [
        (name, line, pair)
        for name, line, pair in zip(head.names, head.lines, head.headers, strict=True)
        if name != "content-length"
    ]
    lines = [line for _, line, _ in pairs] + [b"Transfer-Encoding: chunked"]
    start = head.raw.split(b"\r\n", 1)[0]
    return replace(
        head,
        headers=[pair for _, _, pair in pairs] + [("Transfer-Encoding", "chunked")],
        names=[name for name, _, _ in pairs] + ["transfer-encoding"],
        lines=lines,
        raw=b"\r\n".join([start, *lines]) + b"\r\n\r\n",
    )


def silent_head(head: ResponseHead) -> ResponseHead:
    """``head`` forwarded as nothing: the response of a duplicate nobody asked for."""
    return replace(head, lines=[], names=[], raw=b"")


def answer_parts(data: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """The status, fields and body of an answer mcpsniff made (``faults.http.response_bytes``)."""
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    fields = []
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.decode().partition(":")
        fields.append((name.strip(), value.strip()))
    return status, fields, body
