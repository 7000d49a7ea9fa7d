"""The guard's trace-wide findings: drift across sessions, pins, shadowing, policy gates.

The per-message guard findings are core rules (``core/rules/guard.py``) and
come out of every analysis; these need the whole trace, other traces or the
user's policy, so ``check`` adds them after its re-analysis (and ``tools``
shows them). Each is a ``FindingRecord`` of a GUARD-* catalogue rule, about
the session and the list results it names.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcpsniff.core import catalog
from mcpsniff.core.guard.diff import Change, Listed, diff_offers
from mcpsniff.core.guard.fingerprint import texts
from mcpsniff.core.model import FindingRecord
from mcpsniff.guard.history import previous_offer
from mcpsniff.guard.inventory import Inventory, SessionOffer
from mcpsniff.guard.lockfile import Lock
from mcpsniff.guard.stored import listed_from_offer
from mcpsniff.guard.tokens import definition_cost, total_cost

#: At most this many changes are carried in one finding's data.
MAX_CHANGES = 50


@dataclass(frozen=True)
class GuardPolicy:
    """What a ``check`` run asks of the guard beyond the core rules."""

    #: The lock file to compare with (``--pins``).
    pins: Lock | None = None
    #: Tools every server must list (``--expect-tool``).
    expect_tools: tuple[str, ...] = ()
    #: Glob patterns no listed tool may match (``--forbid-tool``).
    forbid_tools: tuple[str, ...] = ()
    #: The slowest a request may be answered, in seconds (``--max-duration``).
    max_duration: float | None = None
    #: The most tokens a server's definitions may cost (``--max-definition-tokens``).
    max_definition_tokens: int | None = None
    #: Compare with the state folder's history (None: the default folder).
    history: bool = True
    history_folder: Path | None = field(default=None, compare=False)


def guard_findings(inventory: Inventory, policy: GuardPolicy) -> list[FindingRecord]:
    """Every trace-wide guard finding of ``inventory`` under ``policy``, in session order."""
    found: list[FindingRecord] = []
    found.extend(drift_findings(inventory, policy))
    if policy.pins is not None:
        found.extend(pin_findings(inventory, policy.pins))
    found.extend(shadow_findings(inventory))
    found.extend(gate_findings(inventory, policy))
    return found


def _finding(
    rule: str, message: str, offer: SessionOffer, seqs: list[int], **data: object
) -> FindingRecord:
    severity = catalog.get(rule).default_severity
    return FindingRecord(rule, severity, message, offer.session, sorted(seqs), dict(data))


def _summary(changes: list[Change]) -> str:
    shown = "; ".join(c.describe()[:200] for c in changes[:3])
    return shown + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")


def drift_findings(inventory: Inventory, policy: GuardPolicy) -> Iterator[FindingRecord]:
    """GUARD-DRIFT: a session whose server offered something else in its previous session."""
    for identity, offers in inventory.by_identity().items():
        previous: tuple[str, dict[str, Listed]] | None = None
        if policy.history:
            remembered = previous_offer(offers[0], policy.history_folder)
            if remembered is not None:
                entry, listed = remembered
                previous = (
                    f"trace {entry.get('trace')!s:.200}, session {entry.get('session')!s:.80}",
                    listed,
                )
        for offer in offers:
            # The session's first offer against the previous session's last:
            # what changed inside the session is GUARD-DRIFT-SESSION's.
            first = listed_from_offer(offer.first_definitions())
            if previous is not None:
                changes = diff_offers(previous[1], first)
                if changes:
                    yield _finding(
                        "GUARD-DRIFT",
                        f"{identity} offers {len(changes)} definition(s) other than in its "
                        f"previous session ({previous[0]}): {_summary(changes)}",
                        offer,
                        list(offer.list_seqs.values()),
                        server=identity,
                        since=previous[0],
                        changes=[c.as_data() for c in changes[:MAX_CHANGES]],
                    )
            previous = (f"session {offer.session}", listed_from_offer(offer.definitions()))


def pin_findings(inventory: Inventory, lock: Lock) -> Iterator[FindingRecord]:
    """GUARD-PIN: a session whose server is not pinned, or differs from its pin."""
    for identity, offers in inventory.by_identity().items():
        pinned = lock.servers.get(identity)
        for offer in offers:
            seqs = list(offer.list_seqs.values())
            if pinned is None:
                yield _finding(
                    "GUARD-PIN",
                    f"{identity} is not pinned in {lock.path} (pin it: mcpsniff pin TRACE "
                    f"-o {lock.path})",
                    offer,
                    seqs,
                    server=identity,
                    changes=[],
                )
                continue
            changes = diff_offers(pinned, listed_from_offer(offer.first_definitions()))
            if not changes:  # the first offer is the pinned one; the last may not be
                changes = diff_offers(pinned, listed_from_offer(offer.definitions()))
            if changes:
                yield _finding(
                    "GUARD-PIN",
                    f"{identity} differs from its pin in {lock.path} in {len(changes)} "
                    f"definition(s): {_summary(changes)}",
                    offer,
                    seqs,
                    server=identity,
                    changes=[c.as_data() for c in changes[:MAX_CHANGES]],
                )


_DISTINCTIVE = re.compile(r"[_\-.]|[a-z][A-Z]")


def shadow_findings(inventory: Inventory) -> Iterator[FindingRecord]:
    """GUARD-SHADOW: two servers with one tool name, or a description naming another's tool."""
    latest = {identity: offers[-1] for identity, offers in inventory.by_identity().items()}
    owners: dict[str, list[str]] = {}
    for identity, offer in latest.items():
        for tool in offer.tools():
            owners.setdefault(tool.name, []).append(identity)
    for name, identities in sorted(owners.items()):
        if len(identities) < 2:
            continue
        offer = latest[identities[-1]]
        yield _finding(
            "GUARD-SHADOW",
            f"tool {name[:80]!r} is offered by {len(identities)} servers "
            f"({', '.join(identities)}): the model cannot tell which one it calls",
            offer,
            [offer.list_seqs["tool"]],
            tool=name,
            servers=identities,
        )
    for identity, offer in latest.items():
        for definition in offer.tools():
            for other, names in _foreign_tools(latest, identity).items():
                for where, text in texts(definition):
                    named = next((n for n in names if _names(text, n)), None)
                    if named is None:
                        continue
                    yield _finding(
                        "GUARD-SHADOW",
                        f"{identity}: tool {definition.name[:80]!r} {where} names "
                        f"{named[:80]!r}, a tool of {other}: a description can redirect "
                        "calls meant for another server",
                        offer,
                        [offer.list_seqs["tool"]],
                        tool=definition.name,
                        names=named,
                        servers=[identity, other],
                    )
                    break


def _foreign_tools(latest: Mapping[str, SessionOffer], identity: str) -> dict[str, list[str]]:
    own = {t.name for t in latest[identity].tools()}
    return {
        other: [t.name for t in offer.tools() if t.name not in own and _DISTINCTIVE.search(t.name)]
        for other, offer in latest.items()
        if other != identity
    }


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def gate_findings(inventory: Inventory, policy: GuardPolicy) -> Iterator[FindingRecord]:
    """The policy gates: expected and forbidden tools, request duration, definition tokens."""
    by_identity = inventory.by_identity()
    for identity, offers in by_identity.items():
        last = offers[-1]
        if "tool" not in last.list_seqs:
            continue
        listed = {t.name for t in last.tools()}
        seqs = [last.list_seqs["tool"]]
        for name in policy.expect_tools:
            if name not in listed:
                yield _finding(
                    "GUARD-EXPECT-TOOL",
                    f"{identity} does not list the expected tool {name[:80]!r}",
                    last,
                    seqs,
                    server=identity,
                    tool=name,
                )
        for offer in offers:
            for tool in offer.tools():
                pattern = next(
                    (p for p in policy.forbid_tools if fnmatch.fnmatchcase(tool.name, p)), None
                )
                if pattern is not None:
                    yield _finding(
                        "GUARD-FORBID-TOOL",
                        f"{identity} lists {tool.name[:80]!r}, forbidden by {pattern!r}",
                        offer,
                        [offer.list_seqs["tool"]],
                        server=identity,
                        tool=tool.name,
                        pattern=pattern,
                    )
        if policy.max_definition_tokens is not None:
            cost = total_cost(definition_cost(d) for d in last.definitions().values())
            over = {k: v for k, v in cost.tokens.items() if v > policy.max_definition_tokens}
            if over:
                counts = ", ".join(f"{v} by {k}" for k, v in over.items())
                yield _finding(
                    "GUARD-MAX-TOKENS",
                    f"{identity}'s definitions cost {counts} tokens, more than "
                    f"--max-definition-tokens {policy.max_definition_tokens}",
                    last,
                    list(last.list_seqs.values()),
                    server=identity,
                    limit=policy.max_definition_tokens,
                    **cost.as_data(),
                )
    if policy.expect_tools and not any("tool" in o.list_seqs for o in inventory.sessions):
        first = inventory.sessions[0] if inventory.sessions else SessionOffer("", "", "")
        yield _finding(
            "GUARD-EXPECT-TOOL",
            "no session listed tools, so none of the expected tools "
            f"({', '.join(policy.expect_tools)}) was seen",
            first,
            [],
            tool=list(policy.expect_tools),
        )
    if policy.max_duration is not None:
        for offer in inventory.sessions:
            slow = [t for t in offer.slowest if t.seconds > policy.max_duration]
            if not slow:
                continue
            worst = slow[0]
            what = worst.method + (f" {worst.target!r}" if worst.target else "")
            yield _finding(
                "GUARD-MAX-DURATION",
                f"{offer.slow} request(s) took longer than --max-duration "
                f"{policy.max_duration:g}s; the slowest, {what[:120]}, took {worst.seconds:.3f}s",
                offer,
                [worst.request_seq, worst.reply_seq],
                limit_seconds=policy.max_duration,
                slowest=[
                    {"method": t.method, "target": t.target, "seconds": round(t.seconds, 6)}
                    for t in slow
                ],
                count=offer.slow,
            )
