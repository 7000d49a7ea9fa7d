"""One ``check`` run: re-analyze a trace, write the report, count what fails the verdict."""

from __future__ import annotations

import gc
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mcpsniff.core.analyzer import Analyzer, dropped_id, replay_batches, replay_notable
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import SEVERITY_RANK, EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.core.spec_links import session_version
from mcpsniff.terminal.render import Style, finding_json, report_lines
from mcpsniff.terminal.safe_output import terminal_json_line
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.gaps import GapTally
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.spool import is_stream

if TYPE_CHECKING:
    # What only --filter and the guard options use is imported when they are
    # given: a plain ``check`` starts without them (docs/performance.md, "Start-up").
    from mcpsniff.filter import Filter
    from mcpsniff.guard.findings import GuardPolicy
    from mcpsniff.guard.inventory import InventoryBuilder


@dataclass(frozen=True)
class CheckOptions:
    """What one ``check`` run was asked for (a new option is a new field here)."""

    trace: Path
    fmt: str = "text"
    #: The least severity that fails the verdict: error, warning or info.
    fail_on: str = "error"
    #: Only findings about matching messages are reported and counted.
    flt: Filter | None = None
    #: After the text report, explain this rule (upper case), or every rule found ("all").
    explain: str | None = None
    #: Colour the text report (on a terminal only).
    colour: bool = False
    #: Named as ``"trace"`` in each JSON finding (when one run checks several traces).
    trace_label: str | None = None
    #: Processes to share the trace's sessions among (``check/split.py``; 1: this one).
    jobs: int = 1
    #: The trace-wide guard checks asked for (pins, policy gates, drift history);
    #: None: only the core rules (``mcpsniff/guard/findings.py``).
    guard: GuardPolicy | None = None
    #: After the text report, list each injected fault and the reaction seen.
    faults_summary: bool = False


class CheckError(Exception):
    """The trace is missing or unreadable: a one-line reason, exit status 2."""


def run_check(
    options: CheckOptions,
    out: TextIO,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> int:
    """Check ``options.trace``; returns how many findings are at or above ``fail_on``.

    Findings go to ``out`` as JSON lines (``--format json``, written as they are
    found) or as a SARIF or JUnit file; the text report goes line by line to
    ``say``; what the verdict does not cover goes to ``warn``, a line each
    (traffic text in it already escaped).
    Raises :class:`CheckError` when the trace cannot be read.
    """
    trace, fmt, fail_on, flt = options.trace, options.fmt, options.fail_on, options.flt
    try:
        reader = TraceReader(trace, on_skip=lambda text: warn(terminal_safe(text)))
    except TraceError as exc:
        raise CheckError(str(exc)) from None
    # Re-analysis allocates many short-lived, acyclic objects: collect cycles
    # rarely (about 5% faster on a long trace; memory stays flat either way).
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    threshold = SEVERITY_RANK[fail_on]
    failing = 0
    by_session: dict[str, list[FindingRecord]] = defaultdict(list)
    sessions: set[str] = set()
    analyzer_errors: list[EventRecord] = []
    gaps = GapTally()
    guard = options.guard
    merged = None
    if options.jobs > 1 and flt is None and guard is None and not options.faults_summary:
        # The guard's inventory and the faults summary read this process's own
        # pass over the records, so those checks stay in one process.
        from mcpsniff.check.split import check_split

        merged = check_split(trace, options.jobs)
    try:
        with reader:
            analyzer = Analyzer()
            inputs: Iterable[FrameRecord | EventRecord] = reader.inputs()
            builder = None
            if guard is not None:
                from mcpsniff.guard.inventory import InventoryBuilder

                # The guard reads the same records in the same pass.
                builder = InventoryBuilder(trace, reader.header, slower_than=guard.max_duration)
                inputs = _fed(inputs, builder)
            if merged is not None:
                # The sessions were analyzed by workers: their findings and events
                # in the order this process would have found them.
                for text in merged.skipped():
                    warn(terminal_safe(text))
                records: Iterable[Record] = merged.records()
            elif flt is None:
                # Only findings and events: frames and messages are not reported.
                records = replay_notable(inputs, analyzer)
            else:
                from mcpsniff.filter.select import matching_findings

                # The filter drops findings only: every other record still passes.
                batches = replay_batches(inputs, analyzer)
                records = matching_findings(chain.from_iterable(batches), flt)
            if builder is not None and guard is not None:
                records = chain(records, _guard_records(builder, guard))
            for record in records:
                if not isinstance(record, FindingRecord):
                    if type(record) is EventRecord:
                        note_event(record, analyzer_errors, gaps)
                    continue
                if SEVERITY_RANK.get(record.severity, 0) >= threshold:
                    failing += 1
                if fmt == "json":
                    version = (
                        session_version(analyzer, record.session)
                        if merged is None
                        else merged.version
                    )
                    obj = finding_json(record, version)
                    if options.trace_label is not None:
                        obj["trace"] = options.trace_label
                    out.write(terminal_json_line(obj) + "\n")
                else:
                    by_session[record.session].append(record)
        # "0 finding(s) in 1 session(s)": every session counts, clean or not
        # (each had an input, so it has records): those the analyzer keeps,
        # and those whose state it dropped at its cap (MAX_SESSIONS), which
        # it remembers by key, or by a digest when the key is long.
        dropped = analyzer.dropped if merged is None else merged.dropped()
        sessions.update(analyzer.sessions if merged is None else merged.sessions())
        sessions.update(by_session)
        sessions.update(key for key in dropped if type(key) is str)
        named = {dropped_id(key) for key in by_session}
        unnamed = sum(1 for key in dropped if type(key) is bytes and key not in named)
    except TraceError as exc:
        raise CheckError(str(exc)) from None
    except BrokenPipeError:
        # `mcpsniff check --format json TRACE | head`: the reader left, which is
        # not the trace's fault. Say nothing, and keep the interpreter's final
        # flush from failing on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return failing
    except OSError as exc:
        raise CheckError(f"{trace}: read failed: {exc.strerror or exc}") from None
    # What the verdict does not cover: on stderr, and in a SARIF or JUnit report too.
    notes: list[str] = []
    torn = reader.torn if merged is None else merged.torn()
    if torn is not None:
        notes.append(f"{terminal_safe(str(trace))}: {torn.describe()}")
    if merged is None:
        gaps.add_unjudged(analyzer.sessions.values(), analyzer.dropped_excused)
    else:
        merged.add_unjudged(gaps)
    if (lacking := gaps.warning()) is not None:
        notes.append(f"{terminal_safe(str(trace))}: {lacking}")
    if (growing := gaps.still_recording()) is not None:
        notes.append(f"{terminal_safe(str(trace))}: {growing}")
    if analyzer_errors:
        # The rules after the failing one never ran on those records: a clean
        # verdict would claim more than was checked.
        first = analyzer_errors[0]
        notes.append(
            f"the analyzer failed on {len(analyzer_errors)} record(s), "
            f"first at seq {first.seq}: {terminal_safe(str(first.data.get('error', '?'))[:200])}; "
            "findings may be missing (please report this as an mcpsniff bug)"
        )
    for note in notes:
        warn(note)
    if merged is not None:
        versions = {key: merged.session_version(key) for key in by_session}
    else:
        versions = {key: session_version(analyzer, key) for key in by_session}
    if fmt == "text":
        # A pipe was read once already; a file is read again, by its line heads only.
        titles: dict[str, str] = {}
        if by_session and not is_stream(trace):
            from mcpsniff.listing.summary import session_titles

            titles = session_titles(trace)
        for line in report_lines(dict(by_session), Style(options.colour), versions, titles):
            say(line)
        total = sum(len(v) for v in by_session.values())
        verdict = (
            f"{failing} finding(s) at or above {fail_on}"
            if failing
            else f"nothing at or above {fail_on}"
        )
        say(f"{total} finding(s) in {len(sessions) + unnamed} session(s); {verdict}")
        if options.faults_summary:
            from mcpsniff.check.faults_summary import faults_summary_lines

            for line in faults_summary_lines(analyzer):
                say(line)
        if options.explain:
            from mcpsniff.core.explain import explain_lines

            found = [f.rule for fs in by_session.values() for f in fs]
            wanted = list(dict.fromkeys(found)) if options.explain == "all" else [options.explain]
            for line in explain_lines(wanted):
                say(line)
    elif fmt in ("sarif", "junit"):
        from mcpsniff.export.check_report import write_check_report

        write_check_report(fmt, trace, dict(by_session), sessions, fail_on, out, notes, versions)
    return failing


def _fed(
    inputs: Iterable[FrameRecord | EventRecord], builder: InventoryBuilder
) -> Iterator[FrameRecord | EventRecord]:
    feed = builder.feed
    for record in inputs:
        feed(record)
        yield record


def _guard_records(builder: InventoryBuilder, policy: GuardPolicy) -> Iterator[FindingRecord]:
    """The trace-wide guard findings, once the pass is over."""
    from mcpsniff.guard.findings import guard_findings
    from mcpsniff.guard.inventory import Inventory
    from mcpsniff.guard.stored import StoredError
    from mcpsniff.guard.tokens import TokenizerMissing

    try:
        yield from guard_findings(Inventory(builder.finish()), policy)
    except (StoredError, TokenizerMissing) as exc:
        raise CheckError(str(exc)) from None


def note_event(record: EventRecord, errors: list[EventRecord], gaps: GapTally) -> None:
    """Keep an ``analyzer-error`` event in ``errors``; count a ``capture-gap`` in ``gaps``."""
    if record.event == "analyzer-error":
        errors.append(record)
    elif record.event == "capture-gap":
        gaps.note(record)
    elif record.event == "session-state-dropped":
        gaps.note_dropped()
    elif record.event == "session-end":
        gaps.note_unended(record)
