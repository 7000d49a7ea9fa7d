"""The MCP rule catalogue: rule ids, severities, versions and sources.

The data lives in ``catalog.json`` next to this module. It is generated from the
Markdown catalogue (``mcp-rules.md``) by ``tools/gen_catalog.py`` and committed; this
module only reads it (once, lazily). The rules the repository adds beyond that
catalogue (the official extensions) are kept by hand in ``catalog_added.json``.

Severities follow the checker's three levels:

* ``"error"`` -- the strongest keyword of the *Sev* cell is ``MUST`` (``MUST``,
  ``MUST NOT``, ``MUST(schema)``);
* ``"warning"`` -- the strongest keyword is ``SHOULD``/``SHOULD NOT`` or ``MAY``;
* ``"info"`` -- ``HEUR``/``INFO`` only, and the pure cross-reference rows
  (``see TASK-*``), which are never reported under their own id.

Mixed cells (``MUST / SHOULD``) take the strongest keyword. Per-version cells are
resolved by :func:`severity_for`: ``SHOULD→MUST`` means SHOULD in 2024-11-05 and
2025-03-26 and MUST from 2025-06-18 on (catalogue §4: "*Sev* gives the per-version
strength"), and a version-qualified part such as ``SHOULD (V4+) / HEUR (V1-V3)`` only
counts for the versions it names. Parenthesised notes that are not version ranges
(``(schema)``, ``(prose)``, ``(derived SHOULD)``) do not change the level.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from mcpsniff.core.package_data import read_text

Severity = Literal["error", "warning", "info"]

VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
"""All protocol versions the catalogue covers, oldest first (codes V1-V5)."""

HANDSHAKE_VERSIONS: tuple[str, ...] = VERSIONS[:4]
"""Versions with an ``initialize`` handshake and sessions (V1-V4, "legacy era")."""

STATELESS_VERSIONS: tuple[str, ...] = VERSIONS[4:]
"""Stateless versions without a handshake (V5, "modern era")."""

_SHOULD_VERSIONS: frozenset[str] = frozenset(VERSIONS[:2])
"""Where ``SHOULD→MUST`` is still SHOULD (V1-V2); MUST from V3 on."""

_RANK: dict[str, int] = {"info": 1, "warning": 2, "error": 3}
_KEYWORD_SEVERITY: dict[str, Severity] = {
    "MUST": "error",
    "SHOULD": "warning",
    "MAY": "warning",
    "HEUR": "info",
    "INFO": "info",
}
_KEYWORD_RE = re.compile(r"\b(MUST|SHOULD|MAY|HEUR|INFO)\b")
_PAREN_RE = re.compile(r"\(([^()]*)\)")
_VQUAL_RE = re.compile(r"^V(\d+)(?:\s*[\u2013-]\s*V(\d+)|(\+))?$")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One rule of the catalogue.

    ``sev``, ``check`` and ``source`` are the catalogue's cell texts (Markdown kept);
    ``versions`` lists the protocol versions the rule applies to, in version order;
    ``section`` is the heading the rule appears under (e.g. ``"5.1 Cancellation (CANCEL-*)"``).
    """

    id: str
    sev: str
    versions: tuple[str, ...]
    check: str
    source: str
    section: str

    @property
    def default_severity(self) -> Severity:
        """Severity from the strongest keyword in ``sev``, regardless of version."""
        return _resolve_severity(self.sev, None)

    @property
    def is_cross_reference(self) -> bool:
        """True for rows that only point at other rules (``see CAP-LISTCHANGED-SERVER``)."""
        return self.sev.lower().startswith("see ")

    @property
    def family(self) -> str:
        """The id prefix, e.g. ``"JR"`` for ``JR-PARSE``."""
        return self.id.split("-", 1)[0]

    def severity_for(self, version: str | None) -> Severity:
        """Severity of this rule in *version* (``None`` or unknown -> :attr:`default_severity`)."""
        return _resolve_severity(self.sev, version if version in VERSIONS else None)

    def applies_to(self, version: str | None) -> bool:
        """Whether the rule applies to *version*.

        ``None`` (version not known yet) and strings outside :data:`VERSIONS` count as
        unknown and return True.
        """
        if version is None or version not in VERSIONS:
            return True
        return version in self.versions


def _version_qualifier(text: str) -> frozenset[str] | None:
    """Parse ``V1-V2``/``V4+``/``V3`` into a set of versions, or None if *text* is not one."""
    m = _VQUAL_RE.match(text.strip())
    if not m:
        return None
    lo = int(m.group(1))
    hi = len(VERSIONS) if m.group(3) else int(m.group(2) or lo)
    return frozenset(VERSIONS[i - 1] for i in range(lo, hi + 1) if 1 <= i <= len(VERSIONS))


@functools.cache
def _resolve_severity(sev: str, version: str | None) -> Severity:
    """Map a *Sev* cell to a checker severity for *version* (None = strongest overall).

    Parts without a keyword (cross-references) are skipped; a cell with no keyword at
    all maps to ``"info"``.
    """
    best: Severity | None = None

    def consider(level: Severity) -> None:
        nonlocal best
        if best is None or _RANK[level] > _RANK[best]:
            best = level

    for part in sev.split(" / "):
        part = part.strip()
        if not part or part.lower().startswith("see "):
            continue
        qualifiers = _PAREN_RE.findall(part)
        scope: frozenset[str] | None = None
        for q in qualifiers:
            if (parsed := _version_qualifier(q)) is not None:
                scope = parsed if scope is None else scope | parsed
        if version is not None and scope is not None and version not in scope:
            continue
        # Drop parenthesised notes so "HEUR (derived SHOULD)" stays HEUR.
        bare = _PAREN_RE.sub("", part)
        if "SHOULD→MUST" in bare:
            consider("warning" if version in _SHOULD_VERSIONS else "error")
            bare = bare.replace("SHOULD→MUST", "")
        for keyword in _KEYWORD_RE.findall(bare):
            consider(_KEYWORD_SEVERITY[keyword])
    if best is None and version is not None:
        # No part is scoped to this version (e.g. V5 for "SHOULD (V1-V2) / MUST (V3-V4)").
        return _resolve_severity(sev, None)
    return best if best is not None else "info"


#: The rules this repository adds to the reference catalogue (extensions the
#: frozen snapshot of ``mcp-rules.md`` predates), in the same format; they come
#: after the generated ones, and may not reuse their ids.
ADDED_FILE = "catalog_added.json"
#: The guard's rules (tool poisoning, drift, pins, policy gates): not protocol
#: rules, so in a file of their own, after the added ones.
GUARD_FILE = "catalog_guard.json"
#: The resilience rules, which judge a peer's reaction to a fault mcpsniff
#: injected (``rules/resilience.py``); same format, after the guard's.
RESILIENCE_FILE = "catalog_resilience.json"


@functools.cache
def _catalog() -> Mapping[str, CatalogEntry]:
    """Load ``catalog.json``, ``catalog_added.json``, ``catalog_guard.json`` and
    ``catalog_resilience.json`` (once) into an ordered, read-only id -> entry mapping."""
    entries: dict[str, CatalogEntry] = {}
    for name in ("catalog.json", ADDED_FILE, GUARD_FILE, RESILIENCE_FILE):
        text = read_text(name)
        raw: dict[str, dict[str, Any]] = json.loads(text)
        for rule_id in raw:
            if rule_id in entries:
                raise ValueError(f"{name}: {rule_id} is already in the catalogue")
        _load_entries(name, raw, entries)
    return MappingProxyType(entries)


def _load_entries(
    name: str, raw: dict[str, dict[str, Any]], entries: dict[str, CatalogEntry]
) -> None:
    for rule_id, data in raw.items():
        versions = tuple(str(v) for v in data["versions"])
        unknown = [v for v in versions if v not in VERSIONS]
        if unknown:
            raise ValueError(f"{name}: {rule_id} lists unknown versions {unknown}")
        entries[rule_id] = CatalogEntry(
            id=rule_id,
            sev=str(data["sev"]),
            versions=versions,
            check=str(data["check"]),
            source=str(data["source"]),
            section=str(data["section"]),
        )


def get(rule_id: str) -> CatalogEntry:
    """Return the entry for *rule_id*; raise :class:`KeyError` for an unknown id."""
    catalog = _catalog()
    try:
        return catalog[rule_id]
    except KeyError:
        # Imported for an unknown id alone (docs/performance.md, "Start-up").
        import difflib

        close = difflib.get_close_matches(rule_id, list(catalog), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(
            f"unknown rule id {rule_id!r}: not in the MCP rule catalogue{hint}"
        ) from None


def all_entries() -> list[CatalogEntry]:
    """All entries in catalogue order."""
    return list(_catalog().values())


def severity_for(rule_id: str, version: str | None) -> Severity:
    """Severity of *rule_id* in *version*; see :meth:`CatalogEntry.severity_for`."""
    return get(rule_id).severity_for(version)


def applies_to(rule_id: str, version: str | None) -> bool:
    """Whether *rule_id* applies to *version* (None = unknown version -> True)."""
    return get(rule_id).applies_to(version)
