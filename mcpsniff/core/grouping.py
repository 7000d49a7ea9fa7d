"""Fold findings for people: repeats into one line, dependents under their root.

A server that echoes every id as a string breaks JR-RESP-ID once per
response; a reader needs the mistake once, with how often and where
("11 times, seq 5..27"), not a wall of identical lines. Only the same finding
folds: same rule, severity and cause, same target (the method, tool, resource
or prompt it concerns) and the same message once ids, numbers and durations are
set aside. Two tools failing in two ways stay two lines, so a fold never hides
a different mistake behind "the others are alike". A finding whose
``data.caused_by`` names another finding (its rule and first seq) follows
from it (a pretty-printed reply that is not valid JSON also breaks
STDIO-FRAMING), and is shown under that root instead of as a cause of its own.

Only the text report folds. JSON output keeps one record per finding, so
tools that count or filter findings see them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import FindingRecord


@dataclass(slots=True)
class FindingGroup:
    """One finding, the repeats folded into it, and the findings that follow from it."""

    first: FindingRecord
    count: int = 1
    first_seq: int | None = None
    last_seq: int | None = None
    dependents: list[FindingRecord] = field(default_factory=list)

    @property
    def repeated(self) -> bool:
        """Whether this group stands for more than one finding."""
        return self.count > 1

    def span(self) -> str:
        """``seq 5..27`` (or ``seq 5`` when the group is one frame)."""
        if self.first_seq is None:
            return ""
        if self.last_seq is None or self.last_seq == self.first_seq:
            return f"seq {self.first_seq}"
        return f"seq {self.first_seq}..{self.last_seq}"


# What varies between repeats of one mistake: numbers standing alone (ids, seqs,
# sizes, milliseconds; not the 2 of a tool named "get_v2") and UUID-like ids.
_VARIABLE = lazy(
    r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"
    r"|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])"
)

#: ``data`` members that name what a finding is about.
_TARGET_KEYS = ("method", "request_method", "tool", "name", "uri", "prompt", "task", "header")


def message_template(message: str) -> str:
    """``message`` with its ids and numbers replaced by ``#``: what repeats share."""
    return _VARIABLE.sub("#", message)


def _target(finding: FindingRecord) -> tuple[Any, ...]:
    data = finding.data
    return tuple(
        value
        for key in _TARGET_KEYS
        if isinstance(value := data.get(key), str | int | float | bool)
    )


def _repeat_key(finding: FindingRecord) -> tuple[Any, ...]:
    """Same rule, severity, cause, target and message template: repeats of one mistake."""
    cause = finding.data.get("cause")
    return (
        finding.rule,
        finding.severity,
        cause if isinstance(cause, str) else None,
        _target(finding),
        message_template(finding.message),
    )


def _root_of(finding: FindingRecord) -> tuple[str, int] | None:
    caused_by = finding.data.get("caused_by")
    if not isinstance(caused_by, dict):
        return None
    rule, seq = caused_by.get("rule"), caused_by.get("seq")
    if isinstance(rule, str) and type(seq) is int:
        return (rule, seq)
    return None


def group_findings(findings: Iterable[FindingRecord]) -> list[FindingGroup]:
    """Fold ``findings`` (in their order) into groups, first appearance first."""
    items = list(findings)
    roots: dict[tuple[str, int], FindingGroup] = {}
    groups: dict[tuple[Any, ...], FindingGroup] = {}
    order: list[FindingGroup] = []
    # Roots first, so a dependent finds its root whatever the order it came in.
    dependents: list[tuple[tuple[str, int], FindingRecord]] = []
    for finding in items:
        root = _root_of(finding)
        if root is not None:
            dependents.append((root, finding))
            continue
        key = _repeat_key(finding)
        seqs = finding.seq
        group = groups.get(key)
        if group is None:
            group = FindingGroup(finding)
            groups[key] = group
            order.append(group)
        else:
            group.count += 1
        if seqs:
            low, high = min(seqs), max(seqs)
            group.first_seq = low if group.first_seq is None else min(group.first_seq, low)
            group.last_seq = high if group.last_seq is None else max(group.last_seq, high)
            roots[(finding.rule, seqs[0])] = group
    for root, finding in dependents:
        owner = roots.get(root)
        if owner is not None:
            if not any(_repeat_key(d) == _repeat_key(finding) for d in owner.dependents):
                owner.dependents.append(finding)
            continue
        # Its root is not in this report (filtered out): it stands on its own.
        key = ("dependent", *_repeat_key(finding))
        group = groups.get(key)
        if group is None:
            group = FindingGroup(finding, first_seq=min(finding.seq, default=None))
            group.last_seq = max(finding.seq, default=None)
            groups[key] = group
            order.append(group)
        else:
            group.count += 1
    return order
