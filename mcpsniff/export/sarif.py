"""``mcpsniff check --format sarif``: findings as a SARIF 2.1.0 log.

GitHub code scanning (and any SARIF viewer) shows one alert per result. The
log has one rule per catalogue id that fired, with the catalogue's description
and a help URI into the specification it comes from, and one result per
finding, located at the trace file and the line of the first frame the finding
concerns (OASIS SARIF 2.1.0, §3.27 result, §3.28 location).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcpsniff import __version__
from mcpsniff.core import catalog
from mcpsniff.core.model import FindingRecord
from mcpsniff.export.safe_text import export_text, shared_text

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SPEC_SITE = "https://modelcontextprotocol.io/specification"
JSONRPC_SPEC = "https://www.jsonrpc.org/specification"

#: SARIF's result levels (§3.27.10) for mcpsniff's severities.
LEVELS = {"error": "error", "warning": "warning", "info": "note"}

# "S/2025-06-18/basic/lifecycle.mdx", "S/<v>/server/tools.mdx", "S5/basic/patterns/x.mdx".
_SPEC_PATH = re.compile(r"\bS(?:/(<v>|\d{4}-\d{2}-\d{2})|5)/([\w/.-]+?)\.mdx")


# Where a family's rules live when the Source cell names only a section
# ("§ stdio"): the catalogue groups rules by spec page (mcp-rules.md §1-§11).
_FAMILY_PAGES = {
    "MSG": "basic",
    "SCHEMA": "basic",
    "ICON": "basic",
    "LC": "basic/lifecycle",
    "CAP": "basic/lifecycle",
    "STDIO": "basic/transports",
    "HTTP": "basic/transports",
    "SSE": "basic/transports",
    "AUTH": "basic/authorization",
    "PROG": "basic/utilities/progress",
    "CANCEL": "basic/utilities/cancellation",
    "PING": "basic/utilities/ping",
    "TASK": "basic/utilities/tasks",
    "TOOL": "server/tools",
    "RES": "server/resources",
    "PROMPT": "server/prompts",
    "LOG": "server/utilities/logging",
    "COMPL": "server/utilities/completion",
    "PAGE": "server/utilities/pagination",
    "ELIC": "client/elicitation",
    "SAMP": "client/sampling",
    "ROOTS": "client/roots",
}


def help_uri(rule_id: str) -> str:
    """Where a person reads the specification text behind ``rule_id``.

    The catalogue's *Source* cell names a spec file (``S/<v>/basic/lifecycle.mdx``);
    ``<v>`` is the newest version the rule applies to. Rules citing JSON-RPC 2.0
    only point at that specification; anything else at the MCP specification.
    """
    try:
        entry = catalog.get(rule_id)
    except KeyError:
        return SPEC_SITE
    newest = entry.versions[-1] if entry.versions else catalog.VERSIONS[-1]
    match = _SPEC_PATH.search(entry.source)
    if match is not None:
        version = match.group(1)
        if version is None:
            version = catalog.STATELESS_VERSIONS[-1]
        elif version == "<v>":
            version = newest
        return f"{SPEC_SITE}/{version}/{match.group(2)}"
    if entry.source.startswith("JSON-RPC") or entry.family == "JR":
        return JSONRPC_SPEC
    page = _FAMILY_PAGES.get(entry.family)
    if page is None:
        return f"{SPEC_SITE}/{newest}"
    return f"{SPEC_SITE}/{newest}/{page}"


def artifact_uri(trace: Path) -> str:
    """``trace`` as a URI reference (SARIF §3.4.3): ``file://`` when absolute, else relative."""
    if trace.is_absolute():
        return trace.as_uri()
    return quote(trace.as_posix())


def _rule(rule_id: str) -> dict[str, Any]:
    description = catalog.description(rule_id) or rule_id
    rule: dict[str, Any] = {
        "id": export_text(rule_id, 200),
        "shortDescription": {"text": export_text(_first_sentence(description), 1000)},
        "fullDescription": {"text": export_text(description)},
        "helpUri": help_uri(rule_id),
    }
    try:
        entry = catalog.get(rule_id)
    except KeyError:
        return rule
    source = export_text(catalog.plain_source(entry))
    rule["help"] = {"text": f"{export_text(description)}\nSource: {source}"}
    rule["defaultConfiguration"] = {"level": LEVELS[entry.default_severity]}
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
) -> dict[str, Any]:
    """The SARIF log object for ``findings`` read from ``trace``.

    ``lines`` maps a frame or event sequence number to its line in the trace
    (:func:`mcpsniff.export.trace_lines.lines_of`); a finding without a known
    line is located at the file alone. ``notes``: what the check warned of
    (capture gaps, a torn last line), as the run's tool execution
    notifications, so that a clean log does not claim more than was checked.
    """
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    uri = artifact_uri(trace)
    for finding in findings:
        rule_id = finding.rule
        if rule_id not in index:
            index[rule_id] = len(rules)
            rules.append(_rule(rule_id))
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
