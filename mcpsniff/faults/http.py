"""What a fault puts on an HTTP wire: SSE events taken apart and put back, answers in
the server's place.

Shared by the HTTP relay (``mcpsniff.intercept.http_faults``) and the mitmproxy addon
(``mcpsniff.mitm.flow_faults``): pure functions of bytes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.observations import ExchangeFault
from mcpsniff.faults.damage import answer
from mcpsniff.faults.engine import FaultEngine, Injection, fault_record
from mcpsniff.faults.spec import STATUS, Fault

#: Statuses sent with ``Retry-After`` (RFC 9110 §10.2.3), in seconds.
RETRY_AFTER = {429: b"1", 503: b"1"}
#: The end of an SSE event: an empty line (HTML Living Standard § 9.2.5: CRLF, LF or CR).
EVENT_END = re.compile(rb"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))")
_LINE = re.compile(rb"\r\n|\n|\r")
_PHRASES = {200: b"OK", 202: b"Accepted", 404: b"Not Found", 500: b"Internal Server Error"}
#: The header fields of an answer mcpsniff gives in the server's place.
FAULT_FIELD = ("X-Mcpsniff", "fault")


class ExchangeFaults:
    """The fault engine of one HTTP shell run, and how its faults reach the analysis."""

    def __init__(self, faults: list[Fault], *, verbatim: bool = False) -> None:
        self.engine = FaultEngine(faults)
        #: Whether fault records may copy a damaged message's original bytes (no redaction).
        self.verbatim = verbatim
        #: Responses a relay took over to judge them (read piece by piece, maybe
        #: re-chunked) rather than forwarded as they came: for tests and diagnostics.
        self.taken_over = 0

    def judge(self, direction: str, body: bytes) -> Injection | None:
        """The fault for the one message ``body`` carries, if any (batches pass)."""
        engine = self.engine
        if not body or not engine.could_match(body, direction):
            return None
        return engine.judge(engine.read(direction, body))

    def tell(
        self,
        sink: Callable[[Any], None],
        number: int,
        injection: Injection,
        marks: dict[str, int | str],
        *,
        delivered: bool,
        **extra: Any,
    ) -> None:
        """Record ``injection`` in exchange ``number``'s session, through the shell's ``sink``."""
        record = fault_record(
            self.engine, injection, marks=marks, delivered=delivered, transport="http", **extra
        )
        sink(ExchangeFault(number, time.time(), record))


def status_text(code: int) -> bytes:
    """The body of an injected HTTP status."""
    return f"mcpsniff: injected HTTP {code}\n".encode()


@dataclass(frozen=True, slots=True)
class ServerAnswer:
    """The response an ``error``, ``tool-error`` or ``status`` fault sends in the server's place."""

    status: int
    body: bytes
    content_type: str
    #: The fault record's marks: the request, and the JSON-RPC answer when there is one.
    marks: dict[str, int | str]


def server_answer(injection: Injection) -> ServerAnswer:
    """What ``injection`` (an action in ``spec.ANSWERS``) answers, for the relay and the addon."""
    fault = injection.fault
    if fault.action == STATUS:
        # A bare HTTP status carries no JSON-RPC message: only the request is marked.
        text = status_text(fault.code)
        return ServerAnswer(fault.code, text, "text/plain; charset=utf-8", {C2S: 1})
    return ServerAnswer(200, answer(injection), "application/json", {C2S: 1, S2C: 1})


def answer_fields(status: int, content_type: str) -> list[tuple[str, str]]:
    """The header fields of an answer in the server's place (``Retry-After`` where it helps)."""
    headers = [("Content-Type", content_type), FAULT_FIELD]
    retry = RETRY_AFTER.get(status)
    if retry is not None:
        headers.append(("Retry-After", retry.decode()))
    return headers


def split_events(buffer: bytearray) -> list[bytes]:
    """Take the whole SSE events (each with its end) off the front of ``buffer``."""
    blocks = []
    start = 0
    for match in EVENT_END.finditer(buffer):
        blocks.append(bytes(buffer[start : match.end()]))
        start = match.end()
    if start:
        del buffer[:start]
    return blocks


def response_bytes(
    status: int, body: bytes, content_type: bytes, *, close: bool = False
) -> tuple[bytes, list[tuple[str, str]]]:
    """A whole response mcpsniff sends in the server's place, and its header fields."""
    headers = answer_fields(status, content_type.decode())
    if close:
        headers.append(("Connection", "close"))
    headers.append(("Content-Length", str(len(body))))
    phrase = _PHRASES.get(status, b"Fault")
    head = b"HTTP/1.1 %d %s\r\n" % (status, phrase)
    head += b"".join(f"{k}: {v}\r\n".encode() for k, v in headers)
    return head + b"\r\n" + body, headers


def event_data(block: bytes) -> bytes | None:
    """The data of one SSE event (its ``data`` lines joined by LF), or None without any."""
    values = []
    for line in _LINE.split(block):
        if line.startswith(b"data:"):
            value = line[5:]
            values.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(values) if values else None


def with_data(block: bytes, data: bytes) -> bytes:
    """``block`` (an SSE event and its end) carrying ``data`` instead of its own."""
    lines = [line for line in _LINE.split(block) if line]
    out: list[bytes] = []
    placed = False
    for line in lines:
        if line.startswith(b"data:"):
            if not placed:
                out.extend(b"data: " + piece for piece in data.split(b"\n"))
                placed = True
            continue
        out.append(line)
    return b"\n".join(out) + b"\n\n"
