"""``mcpsniff check --format sarif``: findings as a SARIF 2.1.0 log.

GitHub code scanning (and any SARIF viewer) shows one alert per result. The
log has one rule per catalogue id that fired, with the catalogue's description
and a help URI into the specification it comes from, and one result per
finding, located at the trace file and the line of the first frame the finding
concerns (OASIS SARIF 2.1.0, §3.27 result, §3.28 location).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcpsniff import __version__
from mcpsniff.core import catalog, explain, spec_links
from mcpsniff.core.model import FindingRecord
from mcpsniff.core.rules.severities import severities
from mcpsniff.core.spec_links import spec_link
from mcpsniff.export.safe_text import export_text, shared_text

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
#: SARIF's result levels (§3.27.10) for mcpsniff's severities.
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def help_uri(rule_id: str, version: str | None = None) -> str:
    """Where a person reads the specification text behind ``rule_id`` (in ``version``)."""
    return spec_link(rule_id, version)


def artifact_uri(trace: Path) -> str:
    """``trace`` as a URI reference (SARIF §3.4.3): ``file://`` when absolute, else relative."""
    if trace.is_absolute():
        return trace.as_uri()
    return quote(trace.as_posix())


def _rule(rule_id: str, version: str | None) -> dict[str, Any]:
    description = explain.description(rule_id) or rule_id
    rule: dict[str, Any] = {
        "id": export_text(rule_id, 200),
        "shortDescription": {"text": export_text(_first_sentence(description), 1000)},
        "fullDescription": {"text": export_text(description)},
        "helpUri": help_uri(rule_id, version),
    }
    try:
        entry = catalog.get(rule_id)
    except KeyError:
        return rule
    source = export_text(spec_links.plain_source(entry))
    note = explain.severity_note(rule_id)
    if note:
        rule["fullDescription"] = {"text": export_text(f"{description} {note}")}
    rule["help"] = {"text": f"{rule['fullDescription']['text']}\nSource: {source}"}
    # The strongest severity the rule's findings carry, not the catalogue's
    # keyword: a rule that reports a MUST's heuristic part as a warning is a
    # warning (core/rules/severities.py).
    rule["defaultConfiguration"] = {"level": LEVELS[severities(rule_id)[0]]}
    rule["properties"] = {
        "tags": ["mcp", entry.family.lower()],
        "keyword": entry.sev,
        "versions": list(entry.versions),
    }
    return rule


def _first_sentence(text: str) -> str:
    head, _, _ = text.partition(". ")
    return head.rstrip(".") + "."


def sarif_log(
    findings: Iterable[FindingRecord],
    trace: Path,
    lines: Mapping[int, int],
    notes: Sequence[str] = (),
    versions: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The SARIF log object for ``findings`` read from ``trace``.

    ``lines`` maps a frame or event sequence number to its line in the trace
    (:func:`mcpsniff.export.trace_lines.lines_of`); a finding without a known
    line is located at the file alone. ``notes``: what the check warned of
    (capture gaps, a torn last line), as the run's tool execution
    notifications, so that a clean log does not claim more than was checked.
    ``versions``: each session's protocol version, for the links into the
    specification (a rule's help links the version of the first session it fired in).
    """
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    uri = artifact_uri(trace)
    for finding in findings:
        rule_id = finding.rule
        if rule_id not in index:
            index[rule_id] = len(rules)
            rules.append(_rule(rule_id, (versions or {}).get(finding.session)))
        physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
        line = next((lines[s] for s in finding.seq if s in lines), None)
        if line is not None:
            physical["region"] = {"startLine": line}
        results.append(
            {
                "ruleId": rules[index[rule_id]]["id"],
                "ruleIndex": index[rule_id],
                "level": LEVELS.get(finding.severity, "note"),
                "message": {"text": shared_text(finding.message)},
                "locations": [{"physicalLocation": physical}],
                "properties": {
                    "session": export_text(finding.session, 500),
                    "seq": list(finding.seq[:100]),
                    "spec": spec_link(rule_id, (versions or {}).get(finding.session)),
                },
            }
        )
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mcpsniff",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "artifacts": [{"location": {"uri": uri}, "mimeType": "application/jsonl"}],
                **_invocations(notes),
                "results": results,
            }
        ],
    }


def _invocations(notes: Sequence[str]) -> dict[str, Any]:
    """The run's ``invocations`` carrying ``notes`` as warnings, or nothing without notes."""
    if not notes:
        return {}
    warnings = [{"level": "warning", "message": {"text": shared_text(n)}} for n in notes]
    return {"invocations": [{"executionSuccessful": True, "toolExecutionNotifications": warnings}]}
