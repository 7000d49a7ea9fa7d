"""The machine-readable reports of ``mcpsniff check``: SARIF and JUnit XML."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from mcpsniff.core.model import FindingRecord
from mcpsniff.export.junit import junit_xml
from mcpsniff.export.sarif import sarif_log
from mcpsniff.export.trace_lines import lines_of

FORMATS = ("sarif", "junit")


def write_check_report(
    fmt: str,
    trace: Path,
    findings: Mapping[str, list[FindingRecord]],
    sessions: Iterable[str],
    fail_on: str,
    out: TextIO,
    notes: Sequence[str] = (),
    versions: Mapping[str, str | None] | None = None,
) -> None:
    """Write the ``fmt`` report (one of :data:`FORMATS`) of a checked trace to ``out``.

    ``notes``: the check's warnings (what the verdict does not cover), in the report too;
    ``versions``: each session's protocol version, for the links into the specification.
    """
    if fmt == "sarif":
        everything = [f for group in findings.values() for f in group]
        lines = lines_of(trace, (s for f in everything for s in f.seq[:5]))
        log = sarif_log(everything, trace, lines, notes, versions)
        # ensure_ascii: a lone surrogate a peer smuggled in stays a valid escape.
        out.write(json.dumps(log, indent=2) + "\n")
    elif fmt == "junit":
        out.write(junit_xml(sessions, findings, fail_on, trace, notes, versions))
    else:
        raise ValueError(f"unknown report format {fmt!r}")
