"""Classification: what one JSON-RPC object is, and the rules for what it is.

A parsed object is a request (``method`` and ``id``), a notification
(``method``, no ``id``), a response (``result``), an error (``error``) or
invalid. ``message`` decides which, builds its ``MessageRecord`` (also the
rules' working view of the message), registers a request in flight, pairs a
reply with its request, and runs the rules registered for it.

This is the hot path: every message of a live capture and of ``mcpsniff
check`` goes through ``message``, so it is written for speed (``check``'s
speed is benchmarked: benchmarks/bench_check.py). Each shortcut does what the
plain code it replaces does (tests/core/test_fast_paths.py holds them to it):

* the plain envelope: the structural (MESSAGE) rules run only for an envelope
  that is not the plain one of its kind;
* the record and the ``Pending`` are built slot by slot (``_new_record``);
* the usual reply's latency is ``correlation.round_ms``'s usual case, inlined;
* a request's id history, fingerprint and registration are inlined, and so is
  the pairing of the usual reply (``correlation.match_response`` and
  ``correlation.pair`` do the rest);
* a legacy session (handshake era, a version before 2026-07-28) reads the
  legacy dispatch tables, without the rules that are silent there
  (``registry.py``: ``modern``), and a session no rule armed leaves out the
  rules ``armed_by`` a rule-state key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import id_key
from mcpsniff.core.model import (
    C2S,
    ERROR,
    INVALID,
    NOTIFICATION,
    OPPOSITE,
    REQUEST,
    RESPONSE,
    MessageRecord,
)
from mcpsniff.core.protocol import NOTIFICATION_PREFIX, RESERVED_PREFIX, STATELESS
from mcpsniff.core.rules import registry
from mcpsniff.core.session.correlation import match_response, note_bad, reused
from mcpsniff.core.session.dispatch import (
    LEGACY_NOTIFICATION_HANDLERS,
    LEGACY_REPLY_HANDLERS,
    LEGACY_REQUEST_HANDLERS,
    LEGACY_RESPONSE_HANDLERS,
    LEGACY_RESULT_HANDLERS,
    MESSAGE_HANDLERS,
    NOTIFICATION_HANDLERS,
    REPLY_HANDLERS,
    REQUEST_HANDLERS,
    RESPONSE_HANDLERS,
    RESULT_HANDLERS,
)
from mcpsniff.core.session.scoping import note_era, scoped
from mcpsniff.core.state import BAD_INVALID, INLINE_PRINT, Answered, Pending

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.session.base import SessionBase
    from mcpsniff.core.state import Msg

#: A record without its ``__init__``, for ``message`` to fill slot by slot: a
#: dataclass's ``__init__`` is reached through ``type.__call__`` and
#: ``slot_tp_init``, a call CPython 3.11 does not inline, which costs more than
#: the slot stores themselves (about 40% of a MessageRecord's construction), and
#: every message builds one to three records. ``message`` sets every field of
#: the dataclass (tests/core/test_fast_paths.py holds it to that).
_new_record = object.__new__
#: Request methods that JR-METHOD-RPC-RESERVED or MSG-NOTIF-NO-ID report: such a
#: request's envelope is never plain.
FLAGGED_REQUEST_PREFIXES = (RESERVED_PREFIX, NOTIFICATION_PREFIX)
#: tasks/* requests answer with their own results, never a CreateTaskResult.
_TASK_RESULT_FREE = frozenset({"tasks/get", "tasks/list", "tasks/cancel"})
#: The progressToken types of a plain _meta (``type`` is exact: a bool is no int).
_TOKEN = (int, str)


def message(
    session: SessionBase, obj: dict[str, Any], frame: FrameRecord, index: int | None
) -> Msg:
    """Classify, record, correlate and check one JSON-RPC object."""
    direction = frame.direction
    seq = frame.seq
    # Classify first and build the record (which is also the rules' working
    # view) once, whole: this runs for every message.
    kind = INVALID
    ident: Any = None
    has_id = False
    method: str | None = None
    params: dict[str, Any] | None = None
    target: str | None = None
    error_code: Any = None
    plain = False
    if "method" in obj:
        if "id" in obj:
            kind = REQUEST
            ident = obj["id"]
            has_id = True
        else:
            kind = NOTIFICATION
        name = obj["method"]
        if isinstance(name, str):
            method = name
        value = obj.get("params")
        if isinstance(value, dict):
            params = value
            shown = value.get("name") or value.get("uri") or value.get("level")
            if isinstance(shown, str):
                target = shown[:200]
        if "result" in obj or "error" in obj:
            kind = INVALID
        elif method is not None:
            # The plain envelope (see below): a request of exactly jsonrpc, id,
            # method and maybe params, a notification of jsonrpc, method and
            # maybe params; params an object without _meta (or, in a request,
            # a _meta of one well-typed progressToken); the id a string or
            # an integer; a method name not reserved ("rpc.", JSON-RPC §4) and
            # no request named like a notification (MSG-NOTIF-NO-ID).
            size = len(obj)
            if kind == REQUEST:
                plain = (
                    (
                        (
                            size == 4
                            and params is not None
                            # A _meta the structural rules pass (MSG-META-PROGRESS,
                            # MSG-META-KEYS), the usual one: {"progressToken": <string
                            # or integer>}, asked here rather than in a call (one a
                            # request with progress).
                            and (
                                "_meta" not in params
                                or (
                                    type(meta := params["_meta"]) is dict
                                    and len(meta) == 1
                                    and type(meta.get("progressToken")) in _TOKEN
                                )
                            )
                        )
                        or (size == 3 and "params" not in obj)
                    )
                    and (type(ident) is int or type(ident) is str)
                    and not method.startswith(FLAGGED_REQUEST_PREFIXES)
                )
            else:
                plain = (
                    size == 2 or (size == 3 and params is not None and "_meta" not in params)
                ) and not method.startswith(RESERVED_PREFIX)
    elif "result" in obj:
        kind = RESPONSE
        if "id" in obj:
            ident = obj["id"]
            has_id = True
            # The plain envelope: exactly jsonrpc, id and an object result.
            plain = len(obj) == 3 and type(obj["result"]) is dict
    elif "error" in obj:
        kind = ERROR
        if "id" in obj:
            ident = obj["id"]
            has_id = True
        error = obj["error"]
        if isinstance(error, dict):
            error_code = error.get("code")
    # The record, built slot by slot (``_new_record``: every message pays this).
    msg = _new_record(MessageRecord)
    msg.frame = seq
    msg.session = session.key
    msg.direction = direction
    msg.kind = kind
    msg.index = index
    msg.id = ident
    msg.has_id = has_id
    msg.method = method
    msg.answers = None
    msg.request_index = None
    msg.latency_ms = None
    msg.note = None
    msg.size = None
    msg.error_code = error_code
    msg.target = target
    msg.obj = obj
    msg.params = params
    msg.source = frame
    msg.sent_at = frame.t
    msg.request = None
    msg.key = None
    session.output.append(msg)

    # The rules, by what the message is (registry.py). Each lookup below is
    # one dict access; the tables are built once per method. The structural
    # (MESSAGE) rules judge an envelope that is not the plain one of its kind:
    # in a plain one, with "jsonrpc": "2.0", no member is missing, extra or
    # mistyped, so none of them has anything to say.
    if not plain or obj.get("jsonrpc") != "2.0":
        for handler in MESSAGE_HANDLERS.get("") or registry.handlers(registry.MESSAGE, ""):
            handler(session, msg)
    if kind == REQUEST:
        if method is None:
            invalid(session, msg)
            return msg
        state = session.state
        era = state.era
        if era is None and direction == C2S:
            # The era decides how the id is keyed (``scoping``): known before it is.
            note_era(state, msg)
            era = state.era
        # Registration: keyed by its id (``scoping.pairing_key``, inlined: only the
        # stateless era scopes ids), remembered as used, in flight from now.
        key = ident if type(ident) is int else id_key(ident)
        if era == STATELESS:
            key = scoped(session, key, msg)
        msg.key = key
        pending = state.pending[direction]
        # IdHistory.check_and_add, its fast path inlined: an integer id beyond
        # every one used (real clients count up) is new, and extends the last
        # interval or opens one.
        used = state.used[direction]
        ends = used._ends
        if type(key) is int and ends and key > ends[-1]:
            if ends[-1] + 1 == key:
                ends[-1] = key
            else:
                used._starts.append(key)
                ends.append(key)
            seen = False
        else:
            seen = used.check_and_add(key)
        # state.fingerprint, inlined: this runs for every request.
        this_print: bytes | int | None = None
        if index is None:
            this_print = frame.raw
            if len(this_print) > INLINE_PRINT:
                this_print = hash(this_print)
        if seen or key in pending:
            reused(session, msg, key, seen, this_print)
        # Pending(...), built slot by slot (``_new_record``).
        request = _new_record(Pending)
        request.seq = seq
        request.index = index
        request.key = key
        request.id = ident
        request.method = method
        request.t = frame.t
        request.params = params
        request.progress_token = None
        request.cancelled = False
        request.batch_seq = None if index is None else seq
        request.missing_reported = False
        request.fingerprint = this_print
        pending[key] = request
        # The session's era decides the tables (state.py ``legacy``, kept as it
        # changes); a session some rule armed asks the registry for its own.
        legacy = state.legacy
        armed = state.armed
        handlers = (
            None if armed else (LEGACY_REQUEST_HANDLERS if legacy else REQUEST_HANDLERS).get(method)
        )
        if handlers is None:
            handlers = registry.handlers(registry.REQUEST, method, legacy=legacy, armed=armed)
        for handler in handlers:
            handler(session, msg)
    elif kind == NOTIFICATION:
        if method is None:
            invalid(session, msg)
            return msg
        state = session.state
        legacy = state.legacy
        handlers = (LEGACY_NOTIFICATION_HANDLERS if legacy else NOTIFICATION_HANDLERS).get(method)
        if handlers is None:
            handlers = registry.handlers(registry.NOTIFICATION, method, legacy=legacy)
        for handler in handlers:
            handler(session, msg)
    elif kind == INVALID:
        invalid(session, msg)
    else:
        # The usual reply answers the one request in flight under its id:
        # paired here (``match_response`` and ``pair``, inlined). Everything
        # else (no id, a shadowed or cancelled request, a -32700, the
        # stateless era's scoped ids, no request at all) takes the full path.
        state = session.state
        request = None
        if ident is not None and state.era != STATELESS:
            request_direction = OPPOSITE[direction]
            pending = state.pending[request_direction]
            key = ident if type(ident) is int else id_key(ident)
            request = pending.get(key)
            if (
                request is not None
                and not request.cancelled
                and error_code != -32700
                and not state.shadowed[request_direction]
            ):
                del pending[key]
                msg.answers = request.seq
                msg.request_index = request.index
                # round_ms, inlined (correlation.py says why it equals round(_, 3)):
                # the usual latency is n/1000 from its thousandths; round decides
                # the rest (near a half, zero, out of range, not finite).
                latency = (frame.t - request.t) * 1000.0
                scaled = latency * 1000.0
                if 0.0 < scaled < 2147483648.0:
                    whole = int(scaled)
                    fraction = scaled - whole
                    if fraction > 0.500001:
                        latency = (whole + 1) / 1000.0
                    elif fraction < 0.499999 and whole:
                        latency = whole / 1000.0
                    else:
                        latency = round(latency, 3)
                else:
                    latency = round(latency, 3)
                msg.latency_ms = latency
                msg.request = request
                # BoundedMap.put, inlined: a new key goes to the end by itself; only
                # an id answered before (and still remembered) has to move there.
                answered = state.answered[request_direction]
                key = request.key
                if key in answered:
                    del answered[key]
                # Answered(...), built slot by slot (``_new_record``).
                entry = _new_record(Answered)
                entry.seq = request.seq
                entry.index = request.index
                entry.method = request.method
                entry.response_seq = seq
                entry.cancelled = False
                entry.fingerprint = request.fingerprint
                answered[key] = entry
                if len(answered) > answered.limit:
                    answered.popitem(False)
            else:
                request = None
        if request is None:
            match_response(session, msg)
            request = msg.request
        answered_method = "" if request is None else request.method
        legacy = state.legacy
        handlers = (LEGACY_RESPONSE_HANDLERS if legacy else RESPONSE_HANDLERS).get(answered_method)
        if handlers is None:
            handlers = registry.handlers(registry.RESPONSE, answered_method, legacy=legacy)
        for handler in handlers:
            handler(session, msg)
        if request is not None:
            result = obj.get("result")
            if (
                kind == RESPONSE
                and type(result) is dict
                and "task" not in result
                and "taskId" not in result
            ):
                # The method's own result (``reply``, inlined for the usual one).
                # Whether the session is legacy is asked again: a RESPONSE rule
                # (the initialize answer's) may have just decided it.
                legacy = state.legacy
                handlers = (LEGACY_REPLY_HANDLERS if legacy else REPLY_HANDLERS).get(
                    answered_method
                )
                if handlers is None:
                    handlers = registry.handlers(registry.REPLY, answered_method, legacy=legacy)
                for handler in handlers:
                    handler(session, msg)
                handlers = (LEGACY_RESULT_HANDLERS if legacy else RESULT_HANDLERS).get(
                    answered_method
                )
                if handlers is None:
                    handlers = registry.handlers(registry.RESULT, answered_method, legacy=legacy)
                for handler in handlers:
                    handler(session, msg, result)
            else:
                reply(session, msg, request, obj)
    return msg


def reply(session: SessionBase, msg: Msg, request: Pending, obj: dict[str, Any]) -> None:
    """The rules for a paired reply, by the method of the request it answers."""
    method = request.method
    result = obj.get("result")
    if (
        msg.kind == RESPONSE
        and type(result) is dict
        and "task" in result
        and request.params is not None
        and type(request.params.get("task")) is dict
        and method not in _TASK_RESULT_FREE
        and session.state.era != STATELESS
    ):
        # A CreateTaskResult answers an accepted task-augmented request instead
        # of the method's result, and keeps its progress token alive (tasks.mdx).
        for handler in registry.handlers(registry.TASK_CREATED, method):
            handler(session, msg, result)
        return
    if (
        msg.kind == RESPONSE
        and type(result) is dict
        and result.get("resultType") == "task"
        and session.state.era == STATELESS
    ):
        # The tasks extension's CreateTaskResult (rules/tasks_extension.py).
        for handler in registry.handlers(registry.TASK_CREATED, method):
            handler(session, msg, result)
        return
    handlers = REPLY_HANDLERS.get(method)
    if handlers is None:
        handlers = registry.handlers(registry.REPLY, method)
    for handler in handlers:
        handler(session, msg)
    if msg.kind == ERROR:
        for handler in registry.handlers(registry.ERROR, method):
            handler(session, msg)
        return
    handlers = RESULT_HANDLERS.get(method)
    if handlers is None:
        handlers = registry.handlers(registry.RESULT, method)
    if handlers and type(result) is dict:
        for handler in handlers:
            handler(session, msg, result)


def invalid(session: SessionBase, msg: Msg) -> None:
    """A message no rule below the JSON-RPC layer can use."""
    msg.kind = INVALID
    note_bad(session, msg.direction, msg.frame, BAD_INVALID)
