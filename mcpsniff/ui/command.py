"""The ``mcpsniff ui`` and ``mcpsniff report`` commands."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import webbrowser
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mcpsniff.core.escape import terminal_safe
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.filter.cli import filter_option, parse_filter
from mcpsniff.listen_address import parse_listen_address
from mcpsniff.output_target import holds_a_trace
from mcpsniff.trace.paths import traces_dir

if TYPE_CHECKING:
    from mcpsniff.ui.model import TraceModel

EXIT_ERROR = 2


def _fail(command: str, reason: str) -> None:
    # A reason may quote a file name or trace text: never raw on the terminal.
    click.echo(f"mcpsniff {command}: {terminal_safe(reason)}", err=True)
    sys.exit(EXIT_ERROR)


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); port 0 picks a free port. One line when malformed."""
    try:
        return parse_listen_address(text, "--listen")
    except ValueError as exc:
        _fail("ui", str(exc))
        raise  # not reached: _fail exits


def wildcard_warning(host: str) -> str | None:
    """The warning every mcpsniff listener gives on an address that is not loopback."""
    from mcpsniff.relay.http import is_loopback

    if is_loopback(host):
        return None
    return (
        f"warning: listening on {host}, not loopback: anyone who can reach this address "
        "can read every recorded trace the UI serves"
    )


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--listen",
    default="127.0.0.1:6288",
    show_default=True,
    help="Address to serve the page on (port 0 picks a free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
def ui(paths: tuple[Path, ...], listen: str, open_browser: bool) -> None:
    """Serve a live web UI over traces: sessions, sequence diagram, messages, findings.

    PATHS are trace files or folders of traces (default: the state folder, where
    relays record). Sessions recorded while the page is open appear as they happen.
    """
    from mcpsniff.ui.server import serve

    host, port = parse_listen(listen)
    roots = list(paths) or [traces_dir()]
    for root in roots:
        if not root.exists() and root != traces_dir():
            _fail("ui", f"{root}: no such file or folder")
    warning = wildcard_warning(host)
    if warning:
        click.echo(f"mcpsniff ui: {warning}", err=True)

    def announce(line: str) -> None:
        click.echo(line, err=True)

    def ready(url: str) -> None:
        if open_browser:
            webbrowser.open(url)

    try:
        asyncio.run(serve(roots, host, port, announce, ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        _fail("ui", f"cannot serve on {listen}: {exc.strerror or exc}")


@click.command(epilog=FILTER_HELP)
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write (default: TRACE with .html; mermaid goes to stdout).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "mermaid"]),
    default="html",
    show_default=True,
    help="html: one self-contained page; mermaid: the sequence diagram as Mermaid text.",
)
@filter_option
@click.option("--from", "from_seq", type=int, help="mermaid: start the diagram at this seq.")
@click.option("--to", "to_seq", type=int, help="mermaid: end the diagram at this seq.")
@click.option("--session", "session_key", help="mermaid: the session to draw (default: the first).")
def report(
    trace: Path,
    output: Path | None,
    fmt: str,
    filter_expr: str | None,
    from_seq: int | None,
    to_seq: int | None,
    session_key: str | None,
) -> None:
    """Write TRACE as one self-contained HTML page, or its sequence diagram as Mermaid.

    The page holds the UI's views (sequence diagram, messages, detail, findings,
    stats) with its data inline, loads nothing from the network and works from
    file://; attach it to a bug report or keep it from a CI run.
    """
    from mcpsniff.trace.format import TraceError
    from mcpsniff.trace.spool import is_stream, rereadable
    from mcpsniff.ui.report import load_model, write_report

    _check_window(fmt, from_seq, to_seq, session_key)
    if fmt == "mermaid" and filter_expr is not None:
        # The diagram draws a window of one session's messages, not a selection.
        _fail("report", "--filter: only for --format html (the diagram takes --from and --to)")
    flt = parse_filter("report", filter_expr)
    if fmt == "html" and output is None and is_stream(trace):
        # TRACE.html next to /dev/fd/63 is no place for a page.
        _fail("report", "a trace from a pipe needs -o FILE for its page")
        return
    if output is not None and _same_file(output, trace):
        _fail("report", f"{output} is the trace itself; choose another -o")
        return
    if output is not None and holds_a_trace(output):
        _fail("report", f"{output} is an mcpsniff trace; it was left untouched (choose another -o)")
        return
    out = output or trace.with_suffix(".html")
    if fmt == "html" and output is None:
        _check_default_output(out)
    try:
        # A pipe is read once; the report reads its trace more than once (and
        # seeks in it), so a pipe is first copied to a private file, as show does.
        with rereadable(trace) as readable, _records_of(readable, trace) as analyzed:
            if fmt == "mermaid":
                _mermaid(analyzed, output, from_seq, to_seq, session_key, load_model, trace)
                return
            result = write_report(analyzed, out, flt)
    except TraceError as exc:
        _fail("report", str(exc))
        return
    except OSError as exc:
        where = out if fmt == "html" else output
        _fail("report", f"cannot write {where}: {exc.strerror or exc}")
        return
    cut = f", {result.cut} rows cut (narrow it with --filter)" if result.cut else ""
    click.echo(
        f"mcpsniff report: wrote {terminal_safe(str(out))} "
        f"({result.sessions} sessions, {result.rows} rows{cut})",
        err=True,
    )


def _check_window(
    fmt: str, from_seq: int | None, to_seq: int | None, session_key: str | None
) -> None:
    """Refuse options that would silently draw nothing, or be silently ignored.

    The window is inclusive (``--from 5 --to 5`` draws seq 5), so only a start
    after the end is empty; and the page (html) has every message of every
    session, so the diagram's options would change nothing in it.
    """
    if from_seq is not None and to_seq is not None and from_seq > to_seq:
        _fail(
            "report",
            f"--from {from_seq} is after --to {to_seq}: that window holds no message "
            "(both bounds are included; swap them)",
        )
    if fmt != "mermaid":
        given = [
            name
            for name, value in (("--from", from_seq), ("--to", to_seq), ("--session", session_key))
            if value is not None
        ]
        if given:
            names = ", ".join(given)
            _fail(
                "report",
                f"{names}: only for --format mermaid (the HTML page holds every session "
                "and message)",
            )


@contextlib.contextmanager
def _records_of(readable: Path, trace: Path) -> Iterator[Path]:
    """``readable`` itself, or an analyzed copy when it holds frames but no messages.

    The page and the diagram are built from message records; a trace of frames
    alone (cut by hand, written without analysis) would show none of its
    traffic, so its frames are analyzed as ``check`` analyzes them.
    """
    from mcpsniff.filter.analyzed import analyzed_copy, frames_only
    from mcpsniff.trace.format import TraceReader

    TraceReader(readable).close()  # the readers' one-line errors: empty, not JSON, version
    if not frames_only(readable):
        yield readable
        return
    click.echo(
        f"mcpsniff report: {terminal_safe(str(trace))} holds frames but no message records: "
        "analyzing its frames with today's rules, as check does",
        err=True,
    )
    with analyzed_copy(readable) as copy:
        yield copy


def _same_file(output: Path, trace: Path) -> bool:
    """Whether writing ``output`` would write over ``trace`` (a link to it, a hard link)."""
    try:
        return output.exists() and trace.exists() and output.samefile(trace)
    except OSError:
        return False


def _check_default_output(out: Path) -> None:
    """Refuse a TRACE.html nobody named that is a symlink or no regular file.

    The page is written where nobody asked with -o: a symlink planted there (a
    shared folder such as /tmp) would have it written over the file it points
    to, whoever's that is, and a FIFO or device would take the page or block.
    """
    if out.is_symlink() or (out.exists() and not out.is_file()):
        what = "a symlink" if out.is_symlink() else "not a regular file"
        _fail("report", f"{out} is {what}; name the page with -o FILE")


#: The most of a session key a message quotes (a peer's Mcp-Session-Id may be megabytes).
KEY_LIMIT = 80


def _key(key: str) -> str:
    """A session key for a one-line message: terminal-safe and cut to ``KEY_LIMIT``."""
    cut = key if len(key) <= KEY_LIMIT else key[: KEY_LIMIT - 1] + "…"
    return terminal_safe(cut)


def _mermaid(
    trace: Path,
    output: Path | None,
    from_seq: int | None,
    to_seq: int | None,
    session_key: str | None,
    load_model: Callable[[Path], TraceModel],
    shown: Path | None = None,
) -> None:
    """The Mermaid diagram of one session of ``trace``; ``shown`` names it in messages."""
    from mcpsniff.ui.mermaid import session_diagram

    model = load_model(trace)
    sessions = list(model.sessions.values())
    if not sessions:
        _fail("report", f"{terminal_safe(str(shown or trace))} holds no session")
        return
    chosen = sessions[0]
    if session_key is not None:
        found = model.sessions.get(session_key)
        if found is None:
            names = ", ".join(_key(s.key) for s in sessions[:20])
            where = terminal_safe(str(shown or trace))
            _fail("report", f"no session {_key(session_key)!r} in {where} ({names})")
            return
        chosen = found
    elif len(sessions) > 1:
        others = ", ".join(_key(s.key) for s in sessions[1:20])
        click.echo(
            f"mcpsniff report: drawing session {_key(chosen.key)}; "
            f"--session picks another ({others})",
            err=True,
        )
    text, left_out = session_diagram(chosen, from_seq, to_seq)
    if output is None:
        click.echo(text, nl=False)
    else:
        # Mode 0600, as the page: the diagram quotes traffic (methods, names).
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    if left_out:
        click.echo(
            f"mcpsniff report: {left_out} messages outside the diagram's window "
            "(--from SEQ --to SEQ choose it)",
            err=True,
        )
