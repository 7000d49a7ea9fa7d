"""The per-session state the analyzer keeps (catalogue §0.1).

Everything here is bounded by the number of requests in flight, not by the
length of the session: see ``ids.IdHistory`` and ``ids.BoundedMap``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from mcpsniff.core.ids import BoundedMap, IdHistory, IdKey
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import C2S, S2C, MessageRecord
from mcpsniff.core.protocol import HANDSHAKE, V5

#: How many recently answered or cancelled ids each direction remembers, to
#: tell a late response from a duplicate one and to name the first response.
#: Older ids are still known to IdHistory, so a duplicate of an old response is
#: still reported; the window only keeps memory flat over a long trace.
RECENT_WINDOW = 2048

#: What was wrong with a bad frame waiting for its error reply (``bad_frames``),
#: and so which reply it calls for (rules/replies.py judges the reply).
BAD_PARSE = "parse"  # not JSON: -32700
BAD_BATCH_PARSE = "batch-parse"  # a batch that is not JSON: one -32700 object, never an array
BAD_INVALID = "invalid"  # JSON, but not a request: -32600
BAD_EMPTY_BATCH = "empty-batch"  # `[]`: one -32600 object, never an array


#: A request's fingerprint: its frame's bytes themselves up to ``INLINE_PRINT``
#: bytes, their hash beyond (``fingerprint``).
Fingerprint: TypeAlias = bytes | int

#: Frames up to this size are their own fingerprint, kept by reference and
#: compared byte for byte: hashing a 1 KiB frame costs about 0.4 us, which
#: every request would pay for the rare reuse. Longer frames are hashed, so a
#: request keeps at most this much (the answered window holds 2,048 per
#: direction: at most 8 MiB).
INLINE_PRINT = 4096


@dataclass(slots=True)
class Pending:
    """A request that has not been answered yet."""

    seq: int
    index: int | None
    key: IdKey
    id: Any
    method: str
    t: float
    params: dict[str, Any] | None
    progress_token: IdKey | None = None
    cancelled: bool = False
    batch_seq: int | None = None
    missing_reported: bool = False
    #: ``fingerprint`` of the request (its frame's bytes, or their hash when
    #: long), to tell an identical retry from a conflict (rules/reuse.py).
    fingerprint: bytes | int | None = None


@dataclass(slots=True)
class Answered:
    """What is left of a request once it has been answered or cancelled."""

    seq: int
    index: int | None
    method: str
    response_seq: int | None
    cancelled: bool = False
    fingerprint: bytes | int | None = None


#: The analyzer's working view of one JSON-RPC message is its MessageRecord,
#: whose non-stored fields (obj, params, source, sent_at, request, key) hold
#: what the rules need; ``msg.frame`` is the frame's seq.
Msg: TypeAlias = MessageRecord


def fingerprint(msg: Msg) -> Fingerprint | None:
    """What makes two requests the same request: the bytes of a single-message frame.

    A retry re-sends the same serialized request (same id, method and params);
    a batch element has no frame of its own, so it gets None (then only the
    method is compared). Two fingerprints are equal when the frames are (a
    short frame and a long one never are). The session computes it inline
    for every request (core/session/classification.py).
    """
    frame = msg.source
    if msg.index is not None or frame is None:
        return None
    raw = frame.raw
    return raw if len(raw) <= INLINE_PRINT else hash(raw)


@dataclass(slots=True)
class ToolInfo:
    """A tool from the latest complete ``tools/list`` result."""

    name: str
    input_schema: Any
    output_schema: Any
    #: schemas.CompiledSchema for each, compiled on first use.
    input_compiled: Any = None
    output_compiled: Any = None
    #: ``execution.taskSupport`` (2025-11-25): "required", "optional", "forbidden" or None.
    task_support: str | None = None


@dataclass(slots=True)
class ProgressState:
    """An active progress token and the last progress value seen for it."""

    request_key: IdKey
    request_seq: int
    last: float | None = None


@dataclass(slots=True)
class BatchInfo:
    """A batch of requests waiting for its reply array."""

    seq: int
    direction: str
    request_keys: list[IdKey]
    invalid_elements: int
    notifications: int


@dataclass(slots=True)
class Lifecycle:
    """Where the handshake stands (S/<v>/basic/lifecycle.mdx)."""

    init_seq: int | None = None
    init_key: IdKey | None = None
    requested_version: Any = None
    init_ok: bool | None = None
    init_response_seq: int | None = None
    initialized_seq: int | None = None
    order_reported: bool = False
    probe_seen: bool = False
    #: The initialize at ``init_seq`` came on a connection already speaking the
    #: stateless era; the server's answer decides whether it switches.
    offered_from_stateless: bool = False
    #: The server has answered a 2026-07-28 request with a result: it speaks that era.
    modern_answered: bool = False


@dataclass(slots=True)
class CaptureGaps:
    """What a session's capture gaps hide (``capture-gap`` events, rules/flow.py).

    A gap says bytes were forwarded but never analyzed: a verdict that
    depends on them cannot be given. Created at the first gap (gaps are rare),
    so a session without one pays nothing.
    """

    #: Bytes lost per traffic direction (the direction the gap's bytes travelled).
    lost: dict[str, int] = field(default_factory=lambda: {C2S: 0, S2C: 0})
    #: Seqs of requests, per request direction, that were in flight when the
    #: direction that answers them lost bytes: their answer may be in the gap.
    crossed: dict[str, set[int]] = field(default_factory=lambda: {C2S: set(), S2C: set()})
    #: Verdicts not given because of a gap, per rule id.
    excused: dict[str, int] = field(default_factory=dict)
    #: The seq of the latest gap per traffic direction (0: none yet).
    last_seq: dict[str, int] = field(default_factory=lambda: {C2S: 0, S2C: 0})
    #: The seq of the latest capture-wide gap taken in (``gaps_of``; 0: none).
    capture_seq: int = 0

    def since(self, direction: str, seq: int | None) -> bool:
        """Whether ``direction`` lost bytes after ``seq`` (None: at any time)."""
        last = self.last_seq[direction]
        return last > 0 and (seq is None or last > seq)

    def excuse(self, rule: str) -> None:
        """Count one verdict of ``rule`` not given."""
        self.excused[rule] = self.excused.get(rule, 0) + 1


#: ``Session.shared`` key: per run (``run_of``), the seq of its latest
#: capture-wide gap, one that may hold traffic of any of its sessions in
#: either direction (rules/flow.py).
CAPTURE_GAP = "capture-wide-gap"
#: ``Session.shared`` key: per run, the highest HTTP exchange number whose
#: request the trace holds (rules/http.py), to tell which exchanges a salvage
#: names began later.
EXCHANGES_BEGUN = "http-exchanges-begun"
#: The suffix a relay appending to a shared trace gives its session keys
#: (``trace.paths.open_trace_file``: ``@pid.time``).
_RUN_SUFFIX = lazy(r"@\d+\.\d+\Z")


#: Most relay runs per trace whose shared gap facts are kept (a hostile trace
#: may name any number; the runs past it are judged as if they had no gap).
MAX_RUNS = 1024


def per_run(shared: dict[str, Any], name: str, run: str) -> dict[str, Any] | None:
    """``shared[name]``, a dict by run, ready to take ``run``; None when it is full."""
    runs = shared.setdefault(name, {})
    if run in runs or len(runs) < MAX_RUNS:
        return runs
    return None


def run_of(key: str) -> str:
    """Which relay run of a trace a session key belongs to: its suffix, "" for the first.

    Runs that share a trace number their HTTP exchanges from 1 each, and a
    gap of one run says nothing about another's traffic.
    """
    if "@" not in key:
        return ""
    match = _RUN_SUFFIX.search(key)
    return match.group() if match else ""


#: The session key of the HTTP relay's own events (``core.http.session_keys.RELAY_SESSION``).
RELAY_KEY = "http"


def channel_gap(key: str, data: dict[str, Any]) -> str | None:
    """What an HTTP relay's channel gap (a capture-gap event of ``key``) held, or None.

    "bodies": body pieces, each also told as a gap of its exchange; "capture":
    observations without bytes (an exchange's begin, head or end), of any
    session, either way; "mixed": both, in a trace from before they were told
    apart (no ``scope``, on the relay's key). None: any other gap (the stdio
    relay's stderr pieces, a gap with a direction, a salvage's exchanges).
    """
    scope = data.get("scope")
    if scope == "capture" or scope == "bodies":
        return scope
    if (
        scope is None
        and "lost_calls" in data
        and "direction" not in data
        and "exchanges" not in data
        and key[: len(key) - len(run_of(key))] == RELAY_KEY
    ):
        return "mixed"
    return None


def gaps_of(state: SessionState, shared: dict[str, Any], key: str) -> CaptureGaps | None:
    """The gaps of session ``key``, with its run's latest capture-wide gap taken in.

    A capture-wide gap counts, for every session of its run, as bytes lost
    in both directions at its seq. For the rare paths that judge a verdict a
    gap may hide; a capture without one pays a dict lookup there, nothing
    elsewhere.
    """
    gaps = state.gaps
    runs = shared.get(CAPTURE_GAP)
    if runs is None:
        return gaps
    seq = runs.get(run_of(key))
    if seq is None:
        return gaps
    if gaps is None:
        gaps = state.gaps = CaptureGaps()
    if gaps.capture_seq < seq:
        gaps.capture_seq = seq
        for direction in (C2S, S2C):
            gaps.lost[direction] += 1
            gaps.last_seq[direction] = max(gaps.last_seq[direction], seq)
    return gaps


@dataclass(slots=True)
class SessionState:
    """All protocol state for one session."""

    #: Judged as another version than the traffic names (``check --as``,
    #: core/upgrade.py): a rule that looks for the version in the traffic
    #: itself (a header, a request's _meta) takes the session's instead.
    pinned: ClassVar[bool] = False
    era: str | None = None
    version: str | None = None
    #: A session of the handshake era with a version before 2026-07-28: the
    #: session dispatches its messages through the registry's legacy tables,
    #: which leave out the rules silent there (core/rules/registry.py ``modern``).
    #: ``settle_era`` keeps it after ``era`` or ``version`` is set. False, every
    #: rule, is never wrong (a ``modern`` rule returns at once in a legacy
    #: session), only slower: state that sets neither through it loses nothing.
    legacy: bool = False
    client_caps: dict[str, Any] | None = None
    server_caps: dict[str, Any] | None = None
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    first_c2s_seen: bool = False
    pending: dict[str, dict[IdKey, Pending]] = field(default_factory=lambda: {C2S: {}, S2C: {}})
    used: dict[str, IdHistory] = field(default_factory=lambda: {C2S: IdHistory(), S2C: IdHistory()})
    answered: dict[str, BoundedMap] = field(
        default_factory=lambda: {C2S: BoundedMap(RECENT_WINDOW), S2C: BoundedMap(RECENT_WINDOW)}
    )
    progress: dict[str, dict[IdKey, ProgressState]] = field(
        default_factory=lambda: {C2S: {}, S2C: {}}
    )
    finished_tokens: dict[str, BoundedMap] = field(
        default_factory=lambda: {C2S: BoundedMap(RECENT_WINDOW), S2C: BoundedMap(RECENT_WINDOW)}
    )
    #: Requests in flight under an id another in-flight request already has
    #: (MSG-ID-REUSE), per direction and id key, oldest first (core/session/correlation.py).
    shadowed: dict[str, dict[IdKey, list[Pending]]] = field(
        default_factory=lambda: {C2S: {}, S2C: {}}
    )
    batches: dict[int, BatchInfo] = field(default_factory=dict)
    #: The latest all-notification batch per direction: its only valid reply is none.
    notification_batch: dict[str, int | None] = field(
        default_factory=lambda: {C2S: None, S2C: None}
    )
    #: Bad frames waiting for their error reply: (seq, what was wrong) (rules/replies.py).
    bad_frames: dict[str, deque[tuple[int, str]]] = field(
        default_factory=lambda: {C2S: deque(maxlen=1024), S2C: deque(maxlen=1024)}
    )
    tools: dict[str, ToolInfo] | None = None
    #: Whether a listed tool has an execution.taskSupport (rules/tasks.py checks its calls).
    task_tools: bool = False
    tools_partial: list[Any] | None = None
    #: (version, the result's key or the pages' bytes) of the tools/list result
    #: that set ``tools`` without a finding; None when it raised one (rules/methods.py).
    tools_seen: tuple[str | None, bytes | tuple[bytes]] | None = None
    cursors: dict[str, BoundedMap] = field(default_factory=dict)
    stream_offset: dict[str, int] = field(default_factory=lambda: {C2S: 0, S2C: 0})
    log_level: str | None = None
    ended: bool = False
    #: HTTP exchange state (rules/http.py ``HttpState``), created on the first HTTP
    #: event; correlation asks it ``sessionless_client`` and ``sole_request``.
    http: Any = None
    #: The open pretty-printed line run per direction (rules/stdio.py).
    line_runs: dict[str, Any] = field(default_factory=dict)
    #: State of registered rules that need memory, by name (bounded by each rule).
    rule_state: dict[str, Any] = field(default_factory=dict)
    #: The ``rule_state`` keys a rule armed (``arm``): the session's REQUEST
    #: dispatch then holds the rules ``armed_by`` them (core/rules/registry.py).
    armed: frozenset[str] = frozenset()
    #: Known tasks by (owner direction, taskId) (rules/tasks.py), created on the first task.
    tasks: Any = None
    #: What capture gaps hide (rules/flow.py), created on the first gap.
    gaps: CaptureGaps | None = None

    def settle_era(self) -> None:
        """Decide ``legacy`` again once ``era`` or ``version`` changed (as the rules read them)."""
        self.legacy = self.era == HANDSHAKE and self.version != V5

    def arm(self, key: str) -> None:
        """Call the rules ``armed_by`` ``key`` on this session's requests from now on."""
        if key not in self.armed:
            self.armed = self.armed | {key}
