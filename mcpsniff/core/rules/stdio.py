"""Frames that are not JSON: JR-PARSE with its cause, and the stdio rules it implies.

A frame that does not parse gets one JR-PARSE finding whose ``data.cause``
says why (``diagnosis.py``). On stdio the same bytes also break
STDIO-STDOUT-CLEAN or STDIO-STDIN-CLEAN, and, for some causes, STDIO-FRAMING
("Messages are delimited by newlines, and MUST NOT contain embedded
newlines", transports.mdx § stdio) or STDIO-UTF8. Those follow from the same
bytes, so they are reported as dependent findings that name their root
(``data.caused_by``: the root's rule and frame), never as causes of their own.

A pretty-printed message is one mistake spread over many lines. Each line is
a frame (it is what a newline-delimited reader gets), but reporting three
findings per line buried the cause under dozens of errors. Its lines are
collected into one run per direction: when the lines so far parse as one JSON
value, or the run is interrupted, the run is reported once, with its line
count, the frames it spans and, when it parses, the message it was (a reply
it carried is linked to its request, which then is not "never answered").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from mcpsniff.core.diagnosis import diagnose
from mcpsniff.core.ids import id_key, show_id
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import C2S, OPPOSITE, S2C, SENDER
from mcpsniff.core.rules.registry import EVENT, FRAME, rule
from mcpsniff.core.state import Answered

if TYPE_CHECKING:
    from mcpsniff.core.diagnosis import ParseDiagnosis
    from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord
    from mcpsniff.core.session import Session

RULES = ("JR-PARSE", "STDIO-STDOUT-CLEAN", "STDIO-STDIN-CLEAN", "STDIO-FRAMING", "STDIO-UTF8")

#: A run stops collecting text beyond this many bytes (it is still counted).
MAX_RUN_BYTES = 1 << 20
#: At most this many frame seqs of a run are listed in its finding (first ones).
MAX_RUN_SEQS = 200
#: Causes whose lines are parts of one message, collected into a run.
RUN_CAUSES = frozenset({"pretty-printed", "split-string"})
#: Causes that break the newline framing itself (STDIO-FRAMING).
FRAMING_CAUSES = frozenset({"pretty-printed", "split-string", "concatenated"})
#: Causes that are bytes no UTF-8 decoder accepts (STDIO-UTF8).
UTF8_CAUSES = frozenset({"invalid-utf8", "utf16", "utf16-no-bom", "lone-surrogate"})


@dataclass(slots=True)
class LineRun:
    """Consecutive lines of one pretty-printed message, in one direction."""

    direction: str
    first_seq: int
    offset: int
    #: "pretty-printed" (newlines between tokens) or "split-string" (a raw newline
    #: inside a string value), from the run's first line.
    kind: str
    #: The first line's diagnosis, for a run that turns out to be one cut line.
    first: ParseDiagnosis
    seqs: list[int] = field(default_factory=list)
    last_seq: int = 0
    lines: int = 0
    text: bytearray = field(default_factory=bytearray)
    overflow: bool = False


_STDIO_IDS = ("JR-PARSE", "STDIO-STDOUT-CLEAN", "STDIO-STDIN-CLEAN", "STDIO-FRAMING", "STDIO-UTF8")


@rule("JR-PARSE", on=FRAME, keys=("blank",))
def blank_line(session: Session, frame: FrameRecord, offset: int) -> None:
    """A blank line between messages: harmless to lenient readers, but not a message.

    Catalogue STDIO-STDOUT-CLEAN: "Blank lines: HEUR/INFO".
    """
    sender = SENDER[frame.direction]
    session.report(
        "JR-PARSE",
        f"{sender} sent an empty line; it is not a JSON-RPC message",
        [frame.seq],
        severity="info",
        cause="empty",
        sender=sender,
        offset=offset,
    )


@rule(*_STDIO_IDS, on=FRAME, keys=("unparseable",))
def unparseable(session: Session, frame: FrameRecord, offset: int) -> None:
    """Report a frame that is not JSON: its root finding and what follows from it."""
    raw = frame.raw
    line_framed = frame.transport == "stdio"
    at_eof = line_framed and not raw.endswith(b"\n")
    diag = diagnose(raw, at_eof=at_eof, framing="line" if line_framed else "body")
    # Inside an open run every bad line is part of it, whatever it looks like
    # alone: `    1,` of an indented array diagnoses as a trailing comma.
    if line_framed and (diag.cause in RUN_CAUSES or frame.direction in session.state.line_runs):
        _fragment(session, frame, offset, diag)
        return
    linked = _link_unreadable_reply(session, frame)
    _report_one(session, frame.direction, frame.seq, offset, diag, diag.cause, line_framed, linked)


#: A response's id near its start, as JSON spells it: an integer or a simple string.
_REPLY_ID = lazy(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")')


def _link_unreadable_reply(session: Session, frame: FrameRecord) -> dict[str, Any] | None:
    """An unparseable frame that reads like the reply to a pending request answers it.

    The request was answered, only unreadably: linking it keeps it from being
    reported as never answered, and tells the reader which call got the bad reply.
    """
    head = frame.raw[:4096]
    if b'"result"' not in head and b'"error"' not in head:
        return None
    match = _REPLY_ID.search(head)
    if match is None:
        return None
    token = match.group(1)
    ident: Any = int(token) if token[:1] != b'"' else token[1:-1].decode("utf-8", "replace")
    key = ident if type(ident) is int else id_key(ident)
    request_direction = OPPOSITE[frame.direction]
    request = session.state.pending[request_direction].pop(key, None)
    if request is None:
        return None
    session.state.answered[request_direction].put(
        request.key, Answered(request.seq, request.index, request.method, frame.seq)
    )
    return {"answers": request.seq, "request_method": request.method, "id": ident}


def _report_one(
    session: Session,
    direction: str,
    seq: int,
    offset: int,
    diag: ParseDiagnosis,
    cause: str,
    line_framed: bool = True,
    linked: dict[str, Any] | None = None,
) -> None:
    """JR-PARSE for one frame, and on stdio the rules it implies."""
    sender = SENDER[direction]
    where = f"at byte {offset} of the stream" if line_framed else "in its body"
    explanation = diag.explanation if cause == diag.cause else _CUT_LINE
    data: dict[str, Any] = {
        "cause": cause,
        "sender": sender,
        "excerpt": diag.excerpt,
        "offset": offset,
        "explanation": explanation,
    }
    if diag.error_offset is not None:
        # error_offset counts from the start of this frame; offset is the frame's
        # own position in its stream: two numbers on two bases, named apart.
        data["error_offset"] = diag.error_offset
    if diag.parser_error:
        data["parser_error"] = diag.parser_error
    reply = ""
    if linked is not None:
        data.update(linked)
        reply = (
            f" (its reply to {linked['request_method']}, id {show_id(linked['id'])}, seq "
            f"{linked['answers']})"
        )
    session.report(
        "JR-PARSE",
        f"{sender} sent a frame that is not valid JSON {where}{reply} ({cause}): {explanation}",
        [seq],
        **data,
    )
    if line_framed:
        _dependents(session, direction, [seq], cause, diag.excerpt)


_CUT_LINE = (
    "the line ends inside a JSON string and no continuation followed: the message was cut off "
    "(the writer crashed, or a buffer was flushed mid-message)"
)


def _dependents(
    session: Session, direction: str, seqs: list[int], cause: str, excerpt: str, lines: int = 1
) -> None:
    """The stdio rules the root JR-PARSE finding at ``seqs[0]`` implies."""
    sender = SENDER[direction]
    root = {"rule": "JR-PARSE", "seq": seqs[0]}
    if direction == S2C:
        session.report(
            "STDIO-STDOUT-CLEAN",
            f"the server wrote something that is not an MCP message to stdout: {excerpt}",
            seqs,
            cause=cause,
            caused_by=root,
        )
    else:
        session.report(
            "STDIO-STDIN-CLEAN",
            f"the client wrote something that is not an MCP message to the server's stdin: "
            f"{excerpt}",
            seqs,
            cause=cause,
            caused_by=root,
        )
    if cause in FRAMING_CAUSES:
        spread = f" over {lines} lines" if lines > 1 else ""
        session.report(
            "STDIO-FRAMING",
            f"{sender} put raw newlines inside one JSON message{spread}; stdio messages are "
            "newline-delimited and must not contain embedded newlines",
            seqs,
            cause=cause,
            caused_by=root,
        )
    elif cause in UTF8_CAUSES:
        session.report(
            "STDIO-UTF8",
            f"{sender} sent bytes that are not valid UTF-8 ({cause})",
            seqs,
            cause=cause,
            caused_by=root,
        )


# --------------------------------------------------------------------------- pretty-printed runs


def _fragment(
    session: Session, frame: FrameRecord, offset: int, diag: ParseDiagnosis | None
) -> None:
    """One line of a message spread over several: add it to its direction's run."""
    runs = session.state.line_runs
    direction = frame.direction
    run = runs.get(direction)
    if run is None:
        if diag is None:
            return
        run = runs[direction] = LineRun(direction, frame.seq, offset, diag.cause, diag)
    run.lines += 1
    run.last_seq = frame.seq
    if len(run.seqs) < MAX_RUN_SEQS:
        run.seqs.append(frame.seq)
    if run.overflow or len(run.text) + len(frame.raw) > MAX_RUN_BYTES:
        run.overflow = True
        return
    run.text += frame.raw
    stripped = frame.raw.strip()
    # Only a closing line can complete the value: don't re-parse after every line.
    if stripped[-1:] not in (b"}", b"]") and stripped[-2:] not in (b"},", b"],"):
        return
    text = bytes(run.text)
    if run.kind == "split-string":
        # The newlines that split it were inside strings: as JSON spells them.
        text = text.rstrip(b"\r\n").replace(b"\r\n", b"\\n").replace(b"\n", b"\\n")
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    finish(session, direction, value)


@rule(*_STDIO_IDS, on=FRAME, keys=("not-object",))
def continues_run(session: Session, frame: FrameRecord, value: Any) -> bool:
    """Whether a line that parsed alone (``"x"``, ``42``) is the inside of an open run.

    True claims the frame: it is a piece of the run's one root finding, not a
    JR-TOPLEVEL of its own.
    """
    run = session.state.line_runs.get(frame.direction)
    if run is None or frame.transport != "stdio" or isinstance(value, dict | list):
        return False
    _fragment(session, frame, 0, None)
    return True


@rule(*_STDIO_IDS, on=FRAME, keys=("parsed",))
def run_ends(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """A pretty-printed run ends at the first line that is not part of it."""
    if session.state.line_runs:
        flush(session, frame.direction, frame.seq)


def flush(session: Session, direction: str, seq: int | None = None) -> None:
    """Report the open run of ``direction``, if any, unless frame ``seq`` belongs to it."""
    run = session.state.line_runs.get(direction)
    if run is not None and seq != run.last_seq:
        finish(session, direction, _UNFINISHED)


@rule(*_STDIO_IDS, on=EVENT, keys=("session-end",))
def flush_all(session: Session, event: EventRecord | None = None) -> None:
    """Report every open run (the session ends)."""
    for direction in (C2S, S2C):
        flush(session, direction)


_UNFINISHED = object()


def finish(session: Session, direction: str, value: Any) -> None:
    """Report a run once: its root JR-PARSE finding and its dependents."""
    run = session.state.line_runs.pop(direction)
    if value is _UNFINISHED and run.kind == "split-string" and run.lines == 1:
        # Nothing continued the line: it was cut off, not split.
        _report_one(session, direction, run.first_seq, run.offset, run.first, "truncated")
        return
    sender = SENDER[direction]
    seqs = run.seqs
    span = f"seq {seqs[0]}" if run.lines == 1 else f"seq {seqs[0]}..{run.last_seq}"
    data: dict[str, Any] = {
        "cause": run.kind,
        "sender": sender,
        "lines": run.lines,
        "offset": run.offset,
        "excerpt": _excerpt(run.text),
    }
    if value is _UNFINISHED:
        what = "an indented JSON value that never closed"
        data["complete"] = False
    else:
        data["complete"] = True
        what = _describe(session, direction, value, data, run.last_seq)
    how = (
        f"pretty-printed {what}"
        if run.kind == "pretty-printed"
        else f"put a raw newline inside a JSON string of {what}, splitting it"
    )
    session.report(
        "JR-PARSE",
        f"{sender} {how} over {run.lines} lines ({span}); a newline-delimited reader gets "
        f"{run.lines} unparseable lines instead of one message",
        seqs,
        **data,
    )
    _dependents(session, direction, seqs, run.kind, data["excerpt"], run.lines)


def _describe(
    session: Session, direction: str, value: Any, data: dict[str, Any], run_seq: int
) -> str:
    """Name the message a completed run was; link a reply to its request."""
    if not isinstance(value, dict):
        return "a JSON " + type(value).__name__
    method = value.get("method")
    if isinstance(method, str):
        data["method"] = method[:200]
        kind = "request" if "id" in value else "notification"
        return f"a {method[:80]} {kind}"
    if "id" not in value or ("result" not in value and "error" not in value):
        return "a JSON object"
    ident = value["id"]
    data["id"] = ident
    pending = session.state.pending[OPPOSITE[direction]]
    # stdio ids are never scoped per client (core/session/scoping.py): the id's own key.
    key = ident if type(ident) is int else id_key(ident)
    request = pending.pop(key, None) if ident is not None else None
    if request is None:
        return f"a response with id {show_id(ident)}"
    # The reply came, unreadable: the request is answered (by this run), not lost.
    data["answers"] = request.seq
    data["request_method"] = request.method
    session.state.answered[OPPOSITE[direction]].put(
        request.key, Answered(request.seq, request.index, request.method, run_seq)
    )
    return f"its reply to {request.method} (id {show_id(ident)}, seq {request.seq})"


def _excerpt(text: bytearray) -> str:
    first = bytes(text[:80]).decode("utf-8", "replace").replace("\n", "\\n").replace("\r", "\\r")
    return first + ("..." if len(text) > 80 else "")
