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
  supported version or stop (2026-07-28 basic/versioning.mdx).

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
RULES = ("RESIL-DROP-HANG", "RESIL-PARSE-NO-REPLY", "RESIL-VERSION-NO-RETRY")
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
    elif note.action == "drop" and note.has_id and note.kind in ("response", "error"):
        # The requester never saw this answer: cancelling afterwards is no race.
        asked = session.state.pending[OPPOSITE[note.direction]]
        for pending in asked.values():
            if pending.id == note.id and type(pending.id) is type(note.id):
                ledger.answer_withheld.add(pending.seq)
                break


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
    what = "request" if note.kind == REQUEST else "answer"
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
    note.reaction = "the server did not answer -32700"
    session.report(
        "RESIL-PARSE-NO-REPLY",
        f"mcpsniff delivered a client message as invalid JSON ({note.data.get('corruption')}); "
        "the server never answered it with a -32700 Parse error",
        [note.seq],
        fault=note.seq,
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
    note.reaction = "the client went on without retrying"
    session.report(
        "RESIL-VERSION-NO-RETRY",
        f"mcpsniff answered {note.method} id {show_id(note.id)} with -32022; "
        "the client went on with other requests and never retried it",
        [note.seq],
        fault=note.seq,
    )
