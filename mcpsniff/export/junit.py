"""``mcpsniff check --format junit``: one test case per session, a failure per finding.

CI systems (GitLab, Jenkins, GitHub test reporters) read JUnit XML. Each
session of the trace is a test case; each finding at or above ``--fail-on``
is a ``<failure>`` of it, so a clean session passes and a broken one fails
with the rule ids as failure types. Findings below the threshold are listed in
the test case's ``<system-out>``: visible, but not failing the build.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from mcpsniff.core.model import SEVERITY_RANK, FindingRecord
from mcpsniff.core.spec_links import spec_link
from mcpsniff.export.safe_text import export_text, shared_text


def _finding_line(finding: FindingRecord, version: str | None) -> str:
    seqs = ",".join(str(s) for s in finding.seq[:10])
    link = spec_link(finding.rule, version)
    return f"{finding.severity} {finding.rule} (seq {seqs}): {finding.message}\n  spec: {link}"


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
    root = ET.Element("testsuites", name="mcpsniff")
    suite = ET.SubElement(root, "testsuite", name=suite_name)
    cases = failures = 0
    # Sessions with findings first in trace order, then any clean ones.
    ordered = list(dict.fromkeys([*findings, *sorted(sessions)]))
    for session in ordered:
        cases += 1
        case = ET.SubElement(
            suite,
            "testcase",
            classname=export_text(f"mcpsniff.{trace.name}", 1000),
            name=export_text(f"session {session}", 1000),
        )
        quiet: list[str] = []
        failed = False
        for finding in findings.get(session, []):
            line = shared_text(_finding_line(finding, (versions or {}).get(session)))
            if SEVERITY_RANK.get(finding.severity, 0) >= threshold:
                failed = True
                failure = ET.SubElement(
                    case,
                    "failure",
                    type=export_text(finding.rule, 200),
                    message=shared_text(finding.message, 1000),
                )
                failure.text = line
            else:
                quiet.append(line)
        if failed:
            failures += 1
        if quiet:
            ET.SubElement(case, "system-out").text = "\n".join(quiet)
    if notes:
        ET.SubElement(suite, "system-err").text = "\n".join(shared_text(n) for n in notes)
    for element in (root, suite):
        element.set("tests", str(cases))
        element.set("failures", str(failures))
        element.set("errors", "0")
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
