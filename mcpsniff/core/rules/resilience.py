"""How a peer coped with a fault mcpsniff injected on purpose (``--fault``): the RESIL-* rules.

A ``fault`` event opens the session's ``FaultLedger`` (core/fault_ledger.py),
which from then on keeps findings off the frames mcpsniff made, damaged or
withheld. At the end of the session these rules judge the *other* peer's
reaction to each fault, from the spec:

* a request or its answer withheld (``drop``): the peer waiting for the answer
  should time out and cancel (basic/lifecycle.mdx § Timeouts);
* a client message delivered as invalid JSON (``corrupt``): the server should
  answer -32700 with a null id (JSON-RPC 2.0 §5, §5.1);
* an injected -32022 (``error -32022``): the client should retry with a
  supported version or stop (2026-07-28 basic/versioning.mdx);
* an injected 404 to a request naming its ``Mcp-Session-Id`` (``status 404``):
  the client must start a new session, never use that id again
  (2025-03-26 to 2025-11-25 basic/transports.mdx § Session Management);
* a response stream cut (``disconnect`` on HTTP): the client should resume it
  (``Last-Event-ID``, before 2026-07-28), or retry or cancel the request.

Each finding names the ``fault`` event (never a frame the fault touched).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.fault_ledger import FaultLedger, FaultNote
from mcpsniff.core.ids import show_id
from mcpsniff.core.model import C2S, OPPOSITE, REQUEST, EventRecord
from mcpsniff.core.rules.registry import EVENT, PAIRING, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session

#: Corruptions after which the bytes are no longer valid JSON (banner, split
#: and pretty leave the message itself parseable on a lenient reader).
NOT_JSON = frozenset({"truncate", "trailing-comma", "invalid-utf8"})
UNSUPPORTED_VERSION = -32022
RULES = (
    "RESIL-DROP-HANG",
    "RESIL-PARSE-NO-REPLY",
    "RESIL-VERSION-NO-RETRY",
    "RESIL-SESSION-REUSED",
    "RESIL-STREAM-NO-RESUME",
)
#: HTTP methods that use a session (a DELETE ending the dead one does no harm).
SESSION_USES = frozenset({"POST", "GET"})
#: The version that removed stream resumability (its changelog: "Remove SSE stream
#: resumability and message redelivery").
NO_RESUME_VERSION = "2026-07-28"
#: What a ``note.reaction`` says when the peer coped.
COPED = "coped"


@rule(*RULES, on=EVENT, keys=("fault",))
def fault(session: Session, record: EventRecord) -> None:
    """Open the ledger and take the fault in; after a kill, the requests in flight are excused."""
    ledger = session.faults
    if ledger is None:
        ledger = session.faults = FaultLedger()
    note = ledger.note(record)
    if note is None:
        return
    if note.action == "kill":
        # The server is gone: nothing it left unanswered is its own doing.
        for pending in session.state.pending[C2S].values():
            ledger.touched.add(pending.seq)
    elif (
        note.action in ("drop", "disconnect") and note.has_id and note.kind in ("response", "error")
    ):
        # The requester never saw this answer: cancelling afterwards is no race.
        asked = session.state.pending[OPPOSITE[note.direction]]
        for pending in asked.values():
            if pending.id == note.id and type(pending.id) is type(note.id):
                ledger.answer_withheld.add(pending.seq)
                break


@rule("RESIL-SESSION-REUSED", "RESIL-STREAM-NO-RESUME", on=EVENT, keys=("http-request",))
def http_request(session: Session, record: EventRecord) -> None:
    """After a fault, note each HTTP request: a resume, a session still in use."""
    ledger = session.faults
    if ledger is not None:
        ledger.http_request(record)


@rule("RESIL-PARSE-NO-REPLY", on=PAIRING, keys=("bad-input-reply", "orphan-bad-input-reply"))
def parse_error_reply(session: Session, msg: Any, culprit: int, *details: Any) -> None:
    """A -32700/-32600 linked to a bad frame: remember which frame was answered."""
    ledger = session.faults
    if ledger is not None:
        ledger.answered_culprits.add(culprit)


@rule(*RULES, on=EVENT, keys=("session-end",))
def reactions(session: Session, record: EventRecord) -> None:
    """Judge, fault by fault, how the other peer reacted."""
    ledger = session.faults
    if ledger is None:
        return
    for note in ledger.notes:
        if note.action == "drop":
            _dropped(session, ledger, note)
        elif note.action == "corrupt":
            _corrupted(session, ledger, note)
        elif note.action == "error" and note.data.get("code") == UNSUPPORTED_VERSION:
            _unsupported_version(session, ledger, note)
        elif note.action == "status" and note.data.get("code") == 404:
            _expired_session(session, ledger, note)
        elif note.action == "disconnect" and note.data.get("transport") == "http":
            _cut_stream(session, ledger, note)


def _dropped(session: Session, ledger: FaultLedger, note: FaultNote) -> None:
    if not note.has_id or note.kind not in (REQUEST, "response", "error"):
        return
    # Who waits for an answer: the sender of a dropped request, the receiver of a dropped reply.
    waiting = note.direction if note.kind == REQUEST else OPPOSITE[note.direction]
    who = "client" if waiting == C2S else "server"
    cancelled_at = ledger.cancelled[waiting].get(repr(note.id))
    if cancelled_at is not None:
        note.reaction = f"{COPED}: the {who} cancelled it {cancelled_at - note.t:.2f} s later"
        return
    again = ledger.answered_after[note.direction].get(repr(note.id))
    if note.kind != REQUEST and again is not None and again >= note.t:
        note.reaction = f"{COPED}: the answer came again {again - note.t:.2f} s later"
        return
    what = "request" if note.kind == REQUEST else "answer"
    # Not ``_not_coped``: this finding's data names the waiting side before the
    # fault, and the trace and ``check --format json`` write the keys in that order.
    note.reaction = f"the {who} never cancelled"
    session.report(
        "RESIL-DROP-HANG",
        f"mcpsniff withheld the {what} of {note.method or 'a request'} id {show_id(note.id)}; "
        f"the {who} never cancelled it (no notifications/cancelled before the session ended)",
        [note.seq],
        waiting=who,
        fault=note.seq,
    )


def _corrupted(session: Session, ledger: FaultLedger, note: FaultNote) -> None:
    if note.direction != C2S or note.data.get("corruption") not in NOT_JSON:
        return
    if any(seq in ledger.answered_culprits for seq in note.frames):
        note.reaction = f"{COPED}: the server answered -32700"
        return
    _not_coped(
        session,
        note,
        "the server did not answer -32700",
        "RESIL-PARSE-NO-REPLY",
        f"mcpsniff delivered a client message as invalid JSON ({note.data.get('corruption')}); "
        "the server never answered it with a -32700 Parse error",
    )


def _unsupported_version(session: Session, ledger: FaultLedger, note: FaultNote) -> None:
    if note.kind != REQUEST or note.method is None:
        return
    asker = note.direction
    later = [method for seq, method in ledger.requested_after[asker] if seq > note.seq]
    if not later or note.method in later:
        # A retry, or a client that stopped there (it may have surfaced the error).
        did = "retried" if later else "stopped there"
        note.reaction = f"{COPED}: the client {did}"
        return
    _not_coped(
        session,
        note,
        "the client went on without retrying",
        "RESIL-VERSION-NO-RETRY",
        f"mcpsniff answered {note.method} id {show_id(note.id)} with -32022; "
        "the client went on with other requests and never retried it",
    )


def _expired_session(session: Session, ledger: FaultLedger, note: FaultNote) -> None:
    if note.direction != C2S or not note.data.get("session_id"):
        return
    later = [
        seq
        for seq, _, sid, method in _requests_after(ledger, note)
        if sid is not None and method in SESSION_USES
    ]
    if not later:
        note.reaction = f"{COPED}: the client stopped using the session"
        return
    _not_coped(
        session,
        note,
        "the client went on with the expired session",
        "RESIL-SESSION-REUSED",
        f"mcpsniff answered 404 to {note.method or 'a request'} as to an expired "
        f"Mcp-Session-Id; the client sent {len(later)} more request(s) with that session id "
        "instead of starting a new session with initialize",
        requests=len(later),
    )


def _cut_stream(session: Session, ledger: FaultLedger, note: FaultNote) -> None:
    if note.direction == C2S or not note.has_id or note.kind not in ("response", "error"):
        return
    again = ledger.answered_after[note.direction].get(repr(note.id))
    if again is not None and again >= note.t:
        note.reaction = f"{COPED}: the answer came again {again - note.t:.2f} s later"
        return
    if any(resumes for _, resumes, _, _ in _requests_after(ledger, note)):
        note.reaction = f"{COPED}: the client resumed the stream (Last-Event-ID)"
        return
    if repr(note.id) in ledger.cancelled[C2S]:
        note.reaction = f"{COPED}: the client cancelled the request"
        return
    if any(seq > note.seq and m == note.method for seq, m in ledger.requested_after[C2S]):
        note.reaction = f"{COPED}: the client sent the request again"
        return
    modern = session.state.version == NO_RESUME_VERSION
    what = (
        "retried nor cancelled it"
        if modern
        else ("resumed the stream (Last-Event-ID), retried nor cancelled it")
    )
    _not_coped(
        session,
        note,
        "the client neither " + ("retried" if modern else "resumed, retried") + " nor cancelled",
        "RESIL-STREAM-NO-RESUME",
        f"mcpsniff cut the stream carrying the answer to {note.method or 'a request'} id "
        f"{show_id(note.id)}; the client neither {what}",
    )


def _not_coped(
    session: Session, note: FaultNote, reaction: str, rule_id: str, message: str, **data: Any
) -> None:
    """Record that the peer did not cope with ``note``'s fault, and report ``rule_id`` on it.

    The finding names the faulted frame (``fault``) ahead of ``data``.
    """
    note.reaction = reaction
    session.report(rule_id, message, [note.seq], fault=note.seq, **data)


def _requests_after(
    ledger: FaultLedger, note: FaultNote
) -> list[tuple[int, bool, str | None, str]]:
    return [entry for entry in ledger.http_requests if entry[0] > note.seq]
