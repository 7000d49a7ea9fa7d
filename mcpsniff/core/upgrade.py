"""Upgrade readiness: judge a recorded session by the rules of another protocol version.

``mcpsniff check TRACE --as 2026-07-28`` analyzes the trace twice: once as it
was recorded, once with every session pinned to the target version (its rules,
its era: 2026-07-28 is stateless, the versions before it have a handshake). The
difference is what would break if client and server moved to the target with
the traffic they have today -- the findings that appear, by rule, with the
messages that caused them -- and what would stop being a problem.

What this cannot know (``docs/upgrade.md``): the traffic is replayed, not
renegotiated. Peers that really moved would negotiate differently (a client
would send ``_meta`` instead of ``initialize``, a server might refuse the
version or offer other tools), so findings that only say "this request still
speaks the old version" are expected and listed, and behaviour that exists only
in the new version (a server's -32022 to an unsupported version) is not seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.core import catalog, explain
from mcpsniff.core.analyzer import Analyzer, replay_notable
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.grouping import message_template
from mcpsniff.core.model import SEVERITY_RANK, FindingRecord
from mcpsniff.core.protocol import HANDSHAKE, STATELESS
from mcpsniff.core.session import Session
from mcpsniff.core.spec_links import spec_link
from mcpsniff.core.state import SessionState

#: Messages kept per rule and direction of change (the count covers them all).
EXAMPLES_KEPT = 3

CAVEATS = (
    "The traffic is replayed, not renegotiated: peers that moved would negotiate "
    "differently (a 2026-07-28 client sends _meta instead of initialize; a server may "
    "refuse the version, declare other capabilities or list other tools).",
    "Findings that only say the traffic still speaks the old version (initialize, "
    "missing _meta, old headers) are what the peers must change, not bugs of today.",
    "Behaviour that exists only in the target version (its new errors, headers and "
    "methods) cannot be judged from traffic that never used it.",
)


#: Rules that compare the version the traffic names with the negotiated one: under
#: a pinned version they only say the peers did not renegotiate, which they would.
NEGOTIATION_RULES = frozenset(
    {
        "LC-VERSION-CLIENT",
        "LC-VERSION-SERVER",
        "LC-VERSION-CLIENT-DISCONNECT",
        "HTTP-PROTO-HEADER-VALUE",
    }
)


def _pinned_field(name: str, index: int) -> property:
    """A ``SessionState`` field that reads the pinned target; writes still store the traffic's."""
    stored = getattr(SessionState, name)  # the slot underneath

    def get(self: _PinnedState) -> str:
        return self._pinned[index]

    def set(self: _PinnedState, value: str | None) -> None:
        stored.__set__(self, value)

    return property(get, set)


class _PinnedState(SessionState):
    """Session state whose version and era are the target's, whatever the traffic says.

    What the traffic negotiated is still stored (the rules that set it keep
    working) but every rule reads the target.
    """

    pinned = True

    def __init__(self, version: str) -> None:
        super().__init__()
        self._pinned = (version, STATELESS if version in catalog.STATELESS_VERSIONS else HANDSHAKE)
        self.settle_era()  # the target's era and version, from the first message on

    version = _pinned_field("version", 0)  # type: ignore[assignment]
    era = _pinned_field("era", 1)  # type: ignore[assignment]


class PinnedAnalyzer(Analyzer):
    """An analyzer whose every session is judged as ``version``."""

    def __init__(self, version: str) -> None:
        super().__init__()
        self.version = version

    def session(self, key: str, transport: str = "stdio", seq: int | None = None) -> Session:
        """The session for ``key``; a new one gets pinned state."""
        new = key not in self.sessions
        session = super().session(key, transport, seq)
        if new:
            gaps = session.state.gaps  # a dropped session's capture gap stays
            session.state = _PinnedState(self.version)
            session.state.gaps = gaps
        return session


@dataclass(slots=True)
class Change:
    """All findings of one rule that appear (or go away) under the target version."""

    rule: str
    severity: str
    count: int = 0
    #: (session, seq, message) of the first few.
    examples: list[tuple[str, list[int], str]] = field(default_factory=list)

    def add(self, finding: FindingRecord) -> None:
        self.count += 1
        if SEVERITY_RANK.get(finding.severity, 0) > SEVERITY_RANK.get(self.severity, 0):
            self.severity = finding.severity
        if len(self.examples) < EXAMPLES_KEPT:
            self.examples.append((finding.session, list(finding.seq[:10]), finding.message))


@dataclass(slots=True)
class UpgradeReport:
    """What moving a recorded trace's sessions to ``target`` would change."""

    target: str
    #: Each session's version as recorded (None: not known).
    recorded: dict[str, str | None]
    appear: list[Change]
    resolved: list[Change]
    unchanged: int
    #: Records the analyzer failed on, in either pass (its findings may be missing).
    analyzer_errors: int = 0
    #: Findings of NEGOTIATION_RULES left out (the negotiation would go differently).
    renegotiated: int = 0

    def failing(self, fail_on: str) -> int:
        """How many appearing findings are at or above ``fail_on``."""
        threshold = SEVERITY_RANK[fail_on]
        return sum(c.count for c in self.appear if SEVERITY_RANK.get(c.severity, 0) >= threshold)


FindingKey = tuple[str, str, tuple[int, ...], str]


def _key(finding: FindingRecord) -> FindingKey:
    # Ids and numbers in messages name the version ("in 2025-11-25") too: compare
    # templates, so a finding both versions raise on the same frames is unchanged.
    return (finding.session, finding.rule, tuple(finding.seq), message_template(finding.message))


def _findings(
    open_inputs: Callable[[], Any], analyzer: Analyzer
) -> tuple[list[FindingRecord], dict[str, str | None], int]:
    found: list[FindingRecord] = []
    errors = 0
    with open_inputs() as reader:
        for record in replay_notable(reader.inputs(), analyzer):
            if isinstance(record, FindingRecord):
                found.append(record)
            elif record.event == "analyzer-error":
                errors += 1
    versions = {}
    for key, session in analyzer.sessions.items():
        state = session.state
        recorded = (
            SessionState.version.__get__(state)  # type: ignore[attr-defined]
            if isinstance(state, _PinnedState)
            else state.version
        )
        versions[key] = recorded if isinstance(recorded, str) else None
    return found, versions, errors


def judge_upgrade(open_inputs: Callable[[], Any], target: str) -> UpgradeReport:
    """Analyze the trace ``open_inputs()`` reads (a fresh ``TraceReader`` each call) as
    recorded and as ``target``; what changes."""
    if target not in catalog.VERSIONS:
        raise ValueError(f"unknown protocol version {target!r}")
    before, recorded, errors = _findings(open_inputs, Analyzer())
    after, _, pinned_errors = _findings(open_inputs, PinnedAnalyzer(target))
    renegotiated = sum(f.rule in NEGOTIATION_RULES for f in after)
    before = [f for f in before if f.rule not in NEGOTIATION_RULES]
    after = [f for f in after if f.rule not in NEGOTIATION_RULES]
    before_keys = Counter(_key(f) for f in before)
    after_keys = Counter(_key(f) for f in after)
    appear = _changes(after, before_keys)
    resolved = _changes(before, after_keys)
    unchanged = sum((before_keys & after_keys).values())
    return UpgradeReport(
        target, recorded, appear, resolved, unchanged, errors + pinned_errors, renegotiated
    )


def _changes(findings: list[FindingRecord], other: Counter[FindingKey]) -> list[Change]:
    """The findings not matched in ``other``, by rule, most severe and most frequent first."""
    left = Counter(other)
    by_rule: dict[str, Change] = {}
    for finding in findings:
        key = _key(finding)
        if left[key] > 0:
            left[key] -= 1
            continue
        change = by_rule.get(finding.rule)
        if change is None:
            change = by_rule[finding.rule] = Change(finding.rule, finding.severity)
        change.add(finding)
    return sorted(
        by_rule.values(), key=lambda c: (-SEVERITY_RANK.get(c.severity, 0), -c.count, c.rule)
    )


def upgrade_json(report: UpgradeReport) -> dict[str, Any]:
    """``check --as VERSION --format json``: one object, for CI."""

    def change(c: Change) -> dict[str, Any]:
        return {
            "rule": c.rule,
            "severity": c.severity,
            "count": c.count,
            "spec": spec_link(c.rule, report.target),
            "description": explain.description(c.rule),
            "examples": [
                {"session": session, "seq": seq, "message": message}
                for session, seq, message in c.examples
            ],
        }

    return {
        "target": report.target,
        "sessions": report.recorded,
        "appear": [change(c) for c in report.appear],
        "resolved": [change(c) for c in report.resolved],
        "unchanged": report.unchanged,
        "analyzer_errors": report.analyzer_errors,
        "renegotiated": report.renegotiated,
        "caveats": list(CAVEATS),
    }


def upgrade_lines(report: UpgradeReport, trace: Path) -> Iterator[str]:
    """The text report of ``check --as VERSION``."""
    target = report.target
    versions = sorted({v or "unknown" for v in report.recorded.values()})
    spoken = ", ".join(versions) if versions else "no session"
    yield terminal_safe(f"{trace}: recorded as {spoken[:200]}; judged as {target}")
    if report.recorded and all(v == target for v in report.recorded.values()):
        yield f"every session already speaks {target}"
    total = sum(c.count for c in report.appear)
    yield ""
    yield f"would break under {target}: {total} finding(s) of {len(report.appear)} rule(s)"
    for c in report.appear:
        yield from _change_lines(c, target)
    gone = sum(c.count for c in report.resolved)
    yield ""
    yield f"would stop being a problem: {gone} finding(s) of {len(report.resolved)} rule(s)"
    for c in report.resolved:
        yield from _change_lines(c, None)
    yield ""
    yield f"unchanged: {report.unchanged} finding(s) either way"
    if report.renegotiated:
        yield (
            f"left out: {report.renegotiated} version-negotiation finding(s) "
            f"({', '.join(sorted(NEGOTIATION_RULES))}): peers that moved would negotiate {target}"
        )
    yield "what this cannot know:"
    for caveat in CAVEATS:
        yield f"  - {caveat}"


def _change_lines(c: Change, version: str | None) -> Iterator[str]:
    yield f"  {c.severity:<7} {c.rule}  {c.count} time(s)"
    for session, seq, message in c.examples:
        where = ",".join(str(s) for s in seq[:5])
        yield terminal_safe(f"      {message[:300]}  (session {session[:80]}, seq {where})")
    if c.count > len(c.examples):
        yield f"      … and {c.count - len(c.examples)} more"
    yield f"      spec: {spec_link(c.rule, version)}"
