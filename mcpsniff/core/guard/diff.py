"""What changed between two offers of one server: a field-by-field diff of definitions.

Used for drift within a session (a ``list_changed`` followed by a different
list), across sessions (the state folder's history) and against a lock file.
A change to a text member also says which words went and came, since a
poisoned description usually differs from the approved one by a sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcpsniff.core.guard.fingerprint import canonical_json
from mcpsniff.core.lazy_pattern import lazy

#: At most this many words of one side are shown (the rest is counted).
MAX_WORDS = 40
_WORD = lazy(r"\S+")


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One member of a definition that differs."""

    #: The member (``description``, ``inputSchema``, ``annotations``, ...).
    field: str
    #: Words (of a text member) that went and that came; empty for other members.
    removed_words: tuple[str, ...] = ()
    added_words: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Change:
    """One definition added, removed or changed."""

    #: ``added``, ``removed`` or ``changed``.
    change: str
    kind: str
    name: str
    old_fingerprint: str | None
    new_fingerprint: str | None
    fields: tuple[FieldChange, ...] = ()

    def describe(self) -> str:
        """One line: ``tool "x" changed: description (-"a" +"b"), inputSchema``."""
        head = f'{self.kind} "{self.name}" {self.change}'
        if not self.fields:
            return head
        parts = []
        for field in self.fields:
            words = []
            if field.removed_words:
                words.append("-" + repr(" ".join(field.removed_words)))
            if field.added_words:
                words.append("+" + repr(" ".join(field.added_words)))
            parts.append(field.field + (f" ({' '.join(words)})" if words else ""))
        return f"{head}: {', '.join(parts)}"

    def as_data(self) -> dict[str, Any]:
        """The change as JSON-ready data (a finding's ``data``, ``tools --format json``)."""
        return {
            "change": self.change,
            "kind": self.kind,
            "name": self.name,
            "old": self.old_fingerprint,
            "new": self.new_fingerprint,
            "fields": [
                {
                    "field": f.field,
                    "removed_words": list(f.removed_words),
                    "added_words": list(f.added_words),
                }
                for f in self.fields
            ],
        }


@dataclass(frozen=True, slots=True)
class Listed:
    """What a diff needs of one definition: its fingerprint and, when known, its body."""

    kind: str
    name: str
    fingerprint: str
    body: Mapping[str, Any] | None = None


def diff_offers(old: Mapping[str, Listed], new: Mapping[str, Listed]) -> list[Change]:
    """The changes from ``old`` to ``new`` (both keyed by ``kind:name``), sorted by key."""
    changes: list[Change] = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if before is None and after is not None:
            changes.append(Change("added", after.kind, after.name, None, after.fingerprint))
        elif after is None and before is not None:
            changes.append(Change("removed", before.kind, before.name, before.fingerprint, None))
        elif before is not None and after is not None and before.fingerprint != after.fingerprint:
            fields = field_changes(before.body, after.body)
            changes.append(
                Change(
                    "changed",
                    after.kind,
                    after.name,
                    before.fingerprint,
                    after.fingerprint,
                    fields,
                )
            )
    return changes


def field_changes(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> tuple[FieldChange, ...]:
    """The members that differ (nothing when either body is unknown)."""
    if before is None or after is None:
        return ()
    found = []
    for member in sorted(before.keys() | after.keys()):
        old, new = before.get(member), after.get(member)
        if old == new and type(old) is type(new):
            continue
        if type(old) is str and type(new) is str:
            removed, added = word_diff(old, new)
            found.append(FieldChange(member, removed, added))
        elif type(old) is dict and type(new) is dict:
            found.extend(
                FieldChange(f"{member}.{change.field}", change.removed_words, change.added_words)
                for change in field_changes(old, new)
            )
        elif _canonical(old) != _canonical(new):
            found.append(FieldChange(member))
    return tuple(found)


def _canonical(value: Any) -> bytes:
    try:
        return canonical_json(value)
    except TypeError:
        return repr(value).encode()


def word_diff(old: str, new: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words of ``old`` that ``new`` dropped and the words it added, in order."""
    # Imported for a changed text alone: `check` imports this module to list
    # every offer, most of which never change (docs/performance.md, "Start-up").
    import difflib

    a, b = _WORD.findall(old), _WORD.findall(new)
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(a[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(b[j1:j2])
    return _cut(removed), _cut(added)


def _cut(words: list[str]) -> tuple[str, ...]:
    if len(words) <= MAX_WORDS:
        return tuple(words)
    return (*words[:MAX_WORDS], f"… {len(words) - MAX_WORDS} more")
