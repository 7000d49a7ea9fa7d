"""One ``report`` run: a trace as one self-contained HTML page, or one session as Mermaid."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpsniff.core.escape import terminal_safe
from mcpsniff.filter import Filter
from mcpsniff.filter.analyzed import analyzed_copy, frames_only
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.spool import rereadable
from mcpsniff.ui.mermaid import session_diagram
from mcpsniff.ui.report import ReportResult, load_model, write_report


@dataclass(frozen=True)
class ReportOptions:
    """What one ``report`` run was asked for (checked by the command before it runs)."""

    trace: Path
    #: Where to write: html's None is TRACE.html beside the trace, mermaid's is stdout.
    output: Path | None
    fmt: str = "html"
    flt: Filter | None = None
    #: The diagram's window of sequence numbers (both included) and its session.
    from_seq: int | None = None
    to_seq: int | None = None
    session_key: str | None = None


class ReportError(Exception):
    """The trace cannot be read, or holds nothing to draw: a one-line reason, exit status 2."""


def run_report(
    options: ReportOptions, write: Callable[[str], None], note: Callable[[str], None]
) -> ReportResult | None:
    """Write the page (its result) or the diagram (None; ``write`` takes it when no file).

    ``note`` says a line on stderr. Raises :class:`ReportError` when the trace
    cannot be read; ``OSError`` when the output cannot be written.
    """
    try:
        # A pipe is read once; the report reads its trace more than once (and
        # seeks in it), so a pipe is first copied to a private file, as show does.
        with (
            rereadable(options.trace) as readable,
            _records_of(readable, options.trace, note) as analyzed,
        ):
            if options.fmt == "mermaid":
                _mermaid(analyzed, options, write, note)
                return None
            out = options.output or options.trace.with_suffix(".html")
            return write_report(analyzed, out, options.flt)
    except TraceError as exc:
        raise ReportError(str(exc)) from None


@contextlib.contextmanager
def _records_of(readable: Path, trace: Path, note: Callable[[str], None]) -> Iterator[Path]:
    """``readable`` itself, or an analyzed copy when it holds frames but no messages.

    The page and the diagram are built from message records; a trace of frames
    alone (cut by hand, written without analysis) would show none of its
    traffic, so its frames are analyzed as ``check`` analyzes them.
    """
    TraceReader(readable).close()  # the readers' one-line errors: empty, not JSON, version
    if not frames_only(readable):
        yield readable
        return
    note(
        f"{terminal_safe(str(trace))} holds frames but no message records: "
        "analyzing its frames with today's rules, as check does"
    )
    with analyzed_copy(readable) as copy:
        yield copy


#: The most of a session key a message quotes (a peer's Mcp-Session-Id may be megabytes).
KEY_LIMIT = 80


def _key(key: str) -> str:
    """A session key for a one-line message: terminal-safe and cut to ``KEY_LIMIT``."""
    cut = key if len(key) <= KEY_LIMIT else key[: KEY_LIMIT - 1] + "…"
    return terminal_safe(cut)


def _mermaid(
    trace: Path,
    options: ReportOptions,
    write: Callable[[str], None],
    note: Callable[[str], None],
) -> None:
    """The Mermaid diagram of one session of ``trace``; ``options.trace`` names it in messages."""
    shown, output, session_key = options.trace, options.output, options.session_key
    model = load_model(trace)
    sessions = list(model.sessions.values())
    if not sessions:
        raise ReportError(f"{terminal_safe(str(shown))} holds no session")
    chosen = sessions[0]
    if session_key is not None:
        found = model.sessions.get(session_key)
        if found is None:
            names = ", ".join(_key(s.key) for s in sessions[:20])
            where = terminal_safe(str(shown))
            raise ReportError(f"no session {_key(session_key)!r} in {where} ({names})")
        chosen = found
    elif len(sessions) > 1:
        others = ", ".join(_key(s.key) for s in sessions[1:20])
        note(f"drawing session {_key(chosen.key)}; --session picks another ({others})")
    text, left_out = session_diagram(chosen, options.from_seq, options.to_seq)
    if output is None:
        write(text)
    else:
        # Mode 0600, as the page: the diagram quotes traffic (methods, names).
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    if left_out:
        note(f"{left_out} messages outside the diagram's window (--from SEQ --to SEQ choose it)")
