#!/usr/bin/env python3
"""Generate ``mcpsniff/core/catalog.json`` from the Markdown rule catalogue.

The catalogue (``mcp-rules.md``) keeps its rules in Markdown tables with the columns
``ID | Sev | Ver | Check | Source`` inside sections 1-11; later sections hold other
tables (methods, version matrix) that are not rules. Section 0 has a legend table that
maps the version codes used in the *Ver* column (``V1`` ... ``V5``) to protocol version
strings.

Output: a JSON object mapping rule id -> ``{"sev", "versions", "check", "source",
"section"}`` in catalogue order, pretty-printed with ``indent=1``.

Usage::

    python tools/gen_catalog.py /work/shared/reference/mcp-rules.md mcpsniff/core/catalog.json

The script checks the ids for duplicates and compares the count (total and per family)
with the figures stated in the catalogue's "Rule count" section, exiting with status 1
on any mismatch. This module has no dependency on the ``mcpsniff`` package, so the tests
can import it to check that the committed JSON is up to date.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RULE_HEADER = ("ID", "Sev", "Ver", "Check", "Source")
"""Header cells that mark a rule table."""

LAST_RULE_SECTION = 11
"""Sections after this one hold reference tables, not rules."""

_HEADING_RE = re.compile(r"^(#{2,6})\s+(.*?)\s*$")
_SECTION_NUMBER_RE = re.compile(r"^(\d+)(?:\.\d+)*\.?\s")
_RULE_ID_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+$")
_VCODE_RE = re.compile(r"^V\d+$")
_VER_RANGE_RE = re.compile(r"^(V\d+)\s*[\u2013-]\s*(V\d+)$")
_VER_OPEN_RE = re.compile(r"^(V\d+)\+$")
_SEPARATOR_CELL_RE = re.compile(r"^:?-{3,}:?$")
_STATED_TOTAL_RE = re.compile(r"(\d+)\s+rule rows with unique IDs")
_STATED_FAMILIES_RE = re.compile(r"Per family:\s*(.*?)(?:\n\s*\n|\Z)", re.DOTALL)


class CatalogError(ValueError):
    """The Markdown does not have the expected structure."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule row."""

    id: str
    sev: str
    versions: tuple[str, ...]
    check: str
    source: str
    section: str

    def to_json(self) -> dict[str, Any]:
        """Return the JSON value stored under this rule's id."""
        return {
            "sev": self.sev,
            "versions": list(self.versions),
            "check": self.check,
            "source": self.source,
            "section": self.section,
        }


def split_row(line: str) -> list[str] | None:
    """Split a Markdown table row into stripped cells.

    Returns ``None`` when *line* is not a table row. ``\\|`` is an escaped pipe inside a
    cell (also inside code spans, as in GitHub-flavoured Markdown) and comes back as ``|``;
    any other backslash is kept verbatim.
    """
    text = line.strip()
    if not text.startswith("|"):
        return None
    cells: list[str] = []
    current: list[str] = []
    i = 1  # skip the leading pipe
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == "|":
            current.append("|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    rest = "".join(current).strip()
    if rest:  # row without a trailing pipe
        cells.append(rest)
    return cells


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL_RE.match(c) for c in cells)


def section_title(heading: str) -> str:
    """Shorten a heading to its title: the part before the first `` — `` (em dash)."""
    return heading.split(" — ", 1)[0].strip()


def parse_version_legend(markdown: str) -> dict[str, str]:
    """Read the ``code | version`` legend table of section 0 (``V1`` -> ``2024-11-05``)."""
    legend: dict[str, str] = {}
    in_legend = False
    for line in markdown.splitlines():
        cells = split_row(line)
        if cells is None:
            if in_legend:
                break
            continue
        if [c.lower() for c in cells[:2]] == ["code", "version"]:
            in_legend = True
            continue
        if in_legend and not _is_separator(cells) and len(cells) >= 2:
            code, version = cells[0], cells[1]
            if _VCODE_RE.match(code):
                legend[code] = version
    if not legend:
        raise CatalogError("version legend table (| code | version | ...) not found")
    return legend


def _vnum(code: str, legend: dict[str, str]) -> int:
    if code not in legend:
        raise CatalogError(f"unknown version code {code!r}")
    return int(code[1:])


def parse_versions(cell: str, legend: dict[str, str]) -> tuple[str, ...]:
    """Turn a *Ver* cell into version strings.

    Accepts ``all``, ``V2``, ``V1-V4`` (written with an en dash or a hyphen) and ``V4+``.
    A parenthesised note after the main range, e.g. ``V3-V5 (V1-V2 `audience`/`priority`
    only)``, is ignored: the main range is what the rule applies to.
    """
    main = cell.split("(", 1)[0].strip()
    codes = sorted(legend, key=lambda c: int(c[1:]))
    if main == "all":
        return tuple(legend[c] for c in codes)
    if _VCODE_RE.match(main):
        _vnum(main, legend)
        return (legend[main],)
    lo_hi: tuple[int, int] | None = None
    if m := _VER_RANGE_RE.match(main):
        lo_hi = (_vnum(m.group(1), legend), _vnum(m.group(2), legend))
    elif m := _VER_OPEN_RE.match(main):
        lo_hi = (_vnum(m.group(1), legend), int(codes[-1][1:]))
    if lo_hi is None or lo_hi[0] > lo_hi[1]:
        raise CatalogError(f"cannot parse Ver cell {cell!r}")
    lo, hi = lo_hi
    return tuple(legend[c] for c in codes if lo <= int(c[1:]) <= hi)


def parse_rules(markdown: str) -> list[Rule]:
    """Parse every rule row of sections 1-11, in catalogue order."""
    legend = parse_version_legend(markdown)
    rules: list[Rule] = []
    seen: set[str] = set()
    section = ""
    section_number: int | None = None
    in_rule_table = False

    for lineno, line in enumerate(markdown.splitlines(), start=1):
        if heading := _HEADING_RE.match(line):
            section = section_title(heading.group(2))
            num = _SECTION_NUMBER_RE.match(section)
            # Sub-headings without a number (e.g. none today) keep the enclosing number.
            if num or len(heading.group(1)) == 2:
                section_number = int(num.group(1)) if num else None
            in_rule_table = False
            continue
        cells = split_row(line)
        if cells is None:
            in_rule_table = False
            continue
        if tuple(cells) == RULE_HEADER:
            in_rule_table = section_number is not None and 1 <= section_number <= LAST_RULE_SECTION
            continue
        if not in_rule_table or _is_separator(cells):
            continue
        if len(cells) != len(RULE_HEADER):
            raise CatalogError(
                f"line {lineno}: expected {len(RULE_HEADER)} cells, got {len(cells)}: {line[:80]!r}"
            )
        rule_id, sev, ver, check, source = cells
        if not _RULE_ID_RE.match(rule_id):
            raise CatalogError(f"line {lineno}: malformed rule id {rule_id!r}")
        if rule_id in seen:
            raise CatalogError(f"line {lineno}: duplicate rule id {rule_id!r}")
        if not sev:
            raise CatalogError(f"line {lineno}: {rule_id} has an empty Sev cell")
        seen.add(rule_id)
        try:
            versions = parse_versions(ver, legend)
        except CatalogError as exc:
            raise CatalogError(f"line {lineno}: {rule_id}: {exc}") from None
        rules.append(Rule(rule_id, sev, versions, check, source, section))
    return rules


def family(rule_id: str) -> str:
    """The id prefix before the first hyphen (``JR-PARSE`` -> ``JR``)."""
    return rule_id.split("-", 1)[0]


def verify_counts(markdown: str, rules: list[Rule]) -> list[str]:
    """Compare with the counts stated in the catalogue; return a list of problems."""
    problems: list[str] = []
    if m := _STATED_TOTAL_RE.search(markdown):
        stated = int(m.group(1))
        if stated != len(rules):
            problems.append(f"catalogue states {stated} rule rows, parsed {len(rules)}")
    if m := _STATED_FAMILIES_RE.search(markdown):
        stated_families: dict[str, int] = {}
        for item in m.group(1).strip().rstrip(".").split(","):
            parts = item.split()
            if len(parts) == 2 and parts[1].isdigit():
                stated_families[parts[0]] = int(parts[1])
        parsed = Counter(family(r.id) for r in rules)
        for fam in sorted(set(stated_families) | set(parsed)):
            if stated_families.get(fam) != parsed.get(fam):
                problems.append(
                    f"family {fam}: catalogue states {stated_families.get(fam, 0)}, "
                    f"parsed {parsed.get(fam, 0)}"
                )
    return problems


def build_catalog(markdown: str) -> dict[str, dict[str, Any]]:
    """Parse *markdown* and return the JSON object written to ``catalog.json``."""
    return {rule.id: rule.to_json() for rule in parse_rules(markdown)}


def render(catalog: dict[str, dict[str, Any]]) -> str:
    """Serialise *catalog* exactly as it is committed (indent=1, UTF-8, final newline)."""
    return json.dumps(catalog, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("rules_md", type=Path, help="path to mcp-rules.md")
    parser.add_argument("output", type=Path, help="path of the catalog.json to write")
    args = parser.parse_args(argv)

    markdown = args.rules_md.read_text(encoding="utf-8")
    try:
        rules = parse_rules(markdown)
    except CatalogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    problems = verify_counts(markdown, rules)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render({r.id: r.to_json() for r in rules}), encoding="utf-8")
    print(f"{len(rules)} rules written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
