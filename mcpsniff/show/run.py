"""One ``show`` run: the readable timeline of a trace on stdout, whole or as it grows."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import Record
from mcpsniff.filter import Filter, MessageView, ViewBuilder, index_findings
from mcpsniff.filter.analyzed import AnalyzedRecords, frames_only
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.listing.summary import session_titles
from mcpsniff.show.printer import ViewPrinter
from mcpsniff.show.titles import FirstLineTitles, LiveTitles
from mcpsniff.terminal.render import Style
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.spool import is_stream, rereadable
from mcpsniff.trace.tail import TraceTail


@dataclass(frozen=True)
class ShowOptions:
    """What one ``show`` run was asked for (a new option is a new field here)."""

    trace: Path
    #: Keep reading as the trace grows, polling every ``interval`` seconds.
    follow: bool = False
    interval: float = 0.2
    #: 1: each message's body as pretty JSON; 2: also the raw bytes.
    verbose: int = 0
    fmt: str = "text"
    flt: Filter | None = None
    #: Colour the timeline (on a terminal only).
    colour: bool = False


class ShowError(Exception):
    """The trace is missing or unreadable: a one-line reason, exit status 2."""


def run_show(options: ShowOptions, note: Callable[[str], None]) -> None:
    """Print the timeline of ``options.trace`` on stdout; ``note`` says a line on stderr.

    Raises :class:`ShowError` when the trace cannot be read.
    """
    trace = options.trace
    if options.follow and is_stream(trace):
        raise ShowError(f"{trace} is a pipe or device: --follow needs a trace file")
    if options.follow:
        try:
            _wait_for(trace, options.interval, note)
        except KeyboardInterrupt:
            return
    try:
        with rereadable(trace) as readable:
            _show(readable, options, note)
    except TraceError as exc:
        raise ShowError(str(exc)) from None


def _wait_for(trace: Path, interval: float, note: Callable[[str], None]) -> None:
    """Block until ``trace`` exists and has its first line, as ``tail -F`` waits for a file."""
    announced = False
    while True:
        try:
            with open(trace, "rb") as handle:
                if handle.readline().endswith(b"\n"):
                    return
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            return  # TraceReader says what is wrong
        if not announced:
            note(f"waiting for {terminal_safe(str(trace))} to appear")
            announced = True
        time.sleep(interval)


def _show(trace: Path, options: ShowOptions, note: Callable[[str], None]) -> None:
    follow, interval, flt = options.follow, options.interval, options.flt
    try:
        TraceReader(trace).close()
    except TraceError as exc:
        raise ShowError(str(exc)) from None
    try:
        analyze = frames_only(trace)
    except TraceError as exc:
        raise ShowError(str(exc)) from None
    if analyze:
        where = terminal_safe(str(trace))
        if follow:
            note(
                f"warning: {where} holds frames but no message records, so "
                "--follow shows only its events; without --follow its frames are analyzed"
            )
        else:
            note(
                f"{where} holds frames but no message records: "
                "analyzing its frames with today's rules, as check does"
            )
    index = None
    if flt is not None and not follow:
        # Every finding beside the message it concerns, even one raised later.
        try:
            records: Iterable[Record] = (
                AnalyzedRecords(trace, _quiet) if analyze else LazyTraceRecords(trace, _quiet)
            )
            index = index_findings(records)
        except TraceError as exc:
            raise ShowError(str(exc)) from None
    builder = ViewBuilder(index)
    printer = ViewPrinter(Style(options.colour), verbose=options.verbose, fmt=options.fmt, flt=flt)
    first = None
    if options.fmt == "text" and not follow:
        if flt is None:
            # The whole trace is shown: first which sessions it holds. (A followed
            # trace has not ended: its sessions are titled as they go, ``LiveTitles``.)
            _print_titles(trace, Style(options.colour))
        else:
            first = FirstLineTitles(session_titles(trace, counts=False))
    if analyze and not follow:
        analyzed = AnalyzedRecords(trace)
        try:
            printed = _print_all(analyzed, builder, printer, first)
        except TraceError as exc:
            raise ShowError(str(exc)) from None
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return
        if analyzed.torn is not None:
            where = terminal_safe(str(trace))
            note(f"warning: {where}: {analyzed.torn.describe()}")
        if flt is not None and not printed:
            note("no message or event matched --filter")
        return
    tail = TraceTail(trace)
    titles = LiveTitles() if follow and options.fmt == "text" else None
    try:
        printed = _print(tail, builder, printer, follow, interval, titles, first)
        if flt is not None and not printed and not follow:
            # An empty output alone reads as an empty trace or a broken command.
            note("no message or event matched --filter")
    except BrokenPipeError:
        # `mcpsniff show TRACE | head`: the reader left. Say nothing more, and
        # keep the interpreter's final flush from failing on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        tail.close()


def _print_titles(trace: Path, style: Style) -> None:
    """One line per session first: which server, which client, how long, how it ended."""
    for key, title in session_titles(trace, counts=False).items():
        # Style escapes traffic text (terminal_safe) and bounds it.
        sys.stdout.write(style("bold", f"session {key}: {title}") + "\n")


#: How much of the trace ``show`` reads at a time: memory stays flat on any trace size.
_CHUNK = 4 << 20


def _print(
    tail: TraceTail,
    builder: ViewBuilder,
    printer: ViewPrinter,
    follow: bool,
    interval: float,
    titles: LiveTitles | None = None,
    first: FirstLineTitles | None = None,
) -> int:
    """Print the trace's views (and with ``titles``, each session's title); lines printed."""
    out = sys.stdout
    printed = 0
    try:
        while True:
            for record in tail.poll(final=not follow, max_bytes=_CHUNK):
                printed += _write(out, printer, builder.feed(record), first)
                if titles is not None:
                    titles.use_header(tail.header)
                    titled = titles.feed(record)
                    if titled is not None:
                        out.write(printer.style("bold", f"session {titled[0]}: {titled[1]}") + "\n")
            if tail.more:
                continue  # the rest of what is already there, a chunk at a time
            if not follow:
                break
            printed += _write(out, printer, builder.flush(), first)
            out.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    return printed + _finish(out, builder, printer, first)


def _print_all(
    records: Iterable[Record],
    builder: ViewBuilder,
    printer: ViewPrinter,
    first: FirstLineTitles | None = None,
) -> int:
    """Print the views of ``records``; the number of lines printed."""
    out = sys.stdout
    printed = 0
    for record in records:
        printed += _write(out, printer, builder.feed(record), first)
    return printed + _finish(out, builder, printer, first)


def _finish(
    out: TextIO, builder: ViewBuilder, printer: ViewPrinter, first: FirstLineTitles | None
) -> int:
    """Print what the builder and the printer still hold, and flush; lines printed."""
    printed = _write(out, printer, builder.flush(), first)
    for line in printer.flush():
        out.write(line + "\n")
        printed += 1
    out.flush()
    return printed


def _write(
    out: TextIO, printer: ViewPrinter, views: Iterable[MessageView], first: FirstLineTitles | None
) -> int:
    """Print the lines of ``views``, under their session's title if they are its first."""
    views = list(views)
    printed = 0
    for line in printer.lines(views):
        if not printed and first is not None:
            titled = first.before(views)
            if titled is not None:
                out.write(printer.style("bold", f"session {titled[0]}: {titled[1]}") + "\n")
        out.write(line + "\n")
        printed += 1
    return printed


def _quiet(message: str) -> None:
    """Skipped lines are reported once, by the pass that prints; the index pass is silent."""
