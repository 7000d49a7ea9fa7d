"""``mcpsniff check --format junit``: a test case per session, and one per session and rule.

CI systems (GitLab, Jenkins, GitHub test reporters) read JUnit XML. Each
session of the trace is a test case, which passes: the session was checked.
Each rule with findings at or above ``--fail-on`` in a session is a test case
of its own that fails, its findings in its one ``<failure>``: viewers that
show only a case's first failure (most do) thus show every kind of finding.
Findings below the threshold are listed in the session's ``<system-out>``:
visible, but not failing the build.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from mcpsniff.core.model import SEVERITY_RANK, FindingRecord
from mcpsniff.core.spec_links import spec_link
from mcpsniff.export.safe_text import export_text, shared_text


def _finding_line(finding: FindingRecord, version: str | None) -> str:
    """The finding, escaped, and under it its spec link (the escaping keeps its own newline)."""
    seqs = ",".join(str(s) for s in finding.seq[:10])
    link = spec_link(finding.rule, version)
    head = shared_text(f"{finding.severity} {finding.rule} (seq {seqs}): {finding.message}")
    return f"{head}\n  spec: {link}"


#: Findings of one rule written out in its case (the trace and ``check`` have them all).
RULE_LINES = 200


def junit_xml(
    sessions: Iterable[str],
    findings: Mapping[str, list[FindingRecord]],
    fail_on: str,
    trace: Path,
    notes: Sequence[str] = (),
    versions: Mapping[str, str | None] | None = None,
) -> str:
    """The JUnit XML document (a ``<testsuites>`` root) for one checked trace.

    ``notes``: what the check warned of (capture gaps, a torn last line), in
    the suite's ``<system-err>``: a passing suite says what it could not check.
    ``versions``: each session's protocol version, for the links into the specification.
    """
    threshold = SEVERITY_RANK[fail_on]
    suite_name = export_text(f"mcpsniff check {trace.name}", 1000)
    classname = export_text(f"mcpsniff.{trace.name}", 1000)
    root = ET.Element("testsuites", name="mcpsniff")
    suite = ET.SubElement(root, "testsuite", name=suite_name)
    cases = failures = 0
    # Sessions with findings first in trace order, then any clean ones.
    ordered = list(dict.fromkeys([*findings, *sorted(sessions)]))
    for session in ordered:
        version = (versions or {}).get(session)
        cases += 1
        case = ET.SubElement(
            suite, "testcase", classname=classname, name=export_text(f"session {session}", 1000)
        )
        quiet: list[str] = []
        by_rule: dict[str, list[FindingRecord]] = {}
        for finding in findings.get(session, []):
            if SEVERITY_RANK.get(finding.severity, 0) >= threshold:
                by_rule.setdefault(finding.rule, []).append(finding)
            else:
                quiet.append(_finding_line(finding, version))
        if quiet:
            ET.SubElement(case, "system-out").text = "\n".join(quiet)
        for rule, found in by_rule.items():
            cases += 1
            failures += 1
            rule_case = ET.SubElement(
                suite,
                "testcase",
                classname=classname,
                name=export_text(f"session {session} {rule}", 1000),
            )
            message = found[0].message
            if len(found) > 1:
                message = f"{message} (and {len(found) - 1} more)"
            failure = ET.SubElement(
                rule_case,
                "failure",
                type=export_text(rule, 200),
                message=shared_text(message, 1000),
            )
            lines = [_finding_line(f, version) for f in found[:RULE_LINES]]
            if len(found) > RULE_LINES:
                lines.append(f"... {len(found) - RULE_LINES} more (mcpsniff check lists them all)")
            failure.text = "\n".join(lines)
    if notes:
        ET.SubElement(suite, "system-err").text = "\n".join(shared_text(n) for n in notes)
    for element in (root, suite):
        element.set("tests", str(cases))
        element.set("failures", str(failures))
        element.set("errors", "0")
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
