"""``mcpsniff report``: a trace as one self-contained HTML page, or as Mermaid."""

from __future__ import annotations

import os
from pathlib import Path

import click

from mcpsniff.cli.filter_option import filter_option, parse_filter
from mcpsniff.cli.options import format_option, output_option
from mcpsniff.cli.shared import fail
from mcpsniff.core.escape import terminal_safe
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.trace.output_target import holds_a_trace


@click.command(epilog=FILTER_HELP)
@click.argument(
    "trace", type=click.Path(dir_okay=False, path_type=Path), required=False, metavar="TRACE"
)
@click.option(
    "--compare",
    nargs=2,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="A B",
    help="A page comparing two recordings request by request (as `mcpsniff diff`).",
)
@output_option("Where to write (default: TRACE with .html; mermaid goes to stdout).")
@format_option(
    ("html", "mermaid"),
    "html: one self-contained page; mermaid: the sequence diagram as Mermaid text.",
)
@filter_option
@click.option("--from", "from_seq", type=int, help="mermaid: start the diagram at this seq.")
@click.option("--to", "to_seq", type=int, help="mermaid: end the diagram at this seq.")
@click.option("--session", "session_key", help="mermaid: the session to draw (default: the first).")
def report(
    trace: Path | None,
    compare: tuple[Path, Path] | None,
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
    from mcpsniff.trace.spool import is_stream
    from mcpsniff.ui.report_run import ReportError, ReportOptions, run_report

    if compare:
        if trace is not None:
            fail("report", "--compare A B takes the two traces; give no TRACE besides")
        _compare_page(compare[0], compare[1], output)
        return
    if trace is None:
        fail("report", "missing TRACE (or --compare A B)")
    _check_window(fmt, from_seq, to_seq, session_key)
    if fmt == "mermaid" and filter_expr is not None:
        # The diagram draws a window of one session's messages, not a selection.
        fail("report", "--filter: only for --format html (the diagram takes --from and --to)")
    flt = parse_filter("report", filter_expr)
    if fmt == "html" and output is None and is_stream(trace):
        # TRACE.html next to /dev/fd/63 is no place for a page.
        fail("report", "a trace from a pipe needs -o FILE for its page")
    if output is not None and _same_file(output, trace):
        fail("report", f"{output} is the trace itself; choose another -o")
    if output is not None and holds_a_trace(output):
        fail("report", f"{output} is an mcpsniff trace; it was left untouched (choose another -o)")
    out = output or trace.with_suffix(".html")
    if fmt == "html" and output is None:
        _check_default_output(out)
    options = ReportOptions(trace, output, fmt, flt, from_seq, to_seq, session_key)
    try:
        result = run_report(options, _stdout, _note)
    except ReportError as exc:
        fail("report", str(exc))
    except OSError as exc:
        where = out if fmt == "html" else output
        fail("report", f"cannot write {where}: {exc.strerror or exc}")
    if result is None:
        return  # the diagram: its notes said all there is
    cut = f", {result.cut} rows cut (narrow it with --filter)" if result.cut else ""
    if result.sessions_cut:
        cut += f", {result.sessions_cut} older sessions left out (narrow it with --filter)"
    click.echo(
        f"mcpsniff report: wrote {terminal_safe(str(out))} "
        f"({result.sessions} sessions, {result.rows} rows{cut})",
        err=True,
    )


def _compare_page(a: Path, b: Path, output: Path | None) -> None:
    """``report --compare A B``: the two recordings side by side, as one page."""
    from mcpsniff.replay.script import ReplayError, load_script
    from mcpsniff.replay.trace_diff import align, exchanges
    from mcpsniff.replay.trace_diff_html import html_page

    out = output or a.with_name(f"{a.stem}-vs-{b.stem}.html")
    for trace in (a, b):
        if _same_file(out, trace) or holds_a_trace(out):
            fail("report", f"{out} is an mcpsniff trace; it was left untouched (choose another -o)")
    try:
        pairs = align(exchanges(load_script(a)), exchanges(load_script(b)))
    except ReplayError as exc:
        fail("report", str(exc))
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds traffic
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(html_page(pairs, str(a), str(b)))
    except OSError as exc:
        fail("report", f"cannot write {out}: {exc.strerror or exc}")
    click.echo(
        f"mcpsniff report: wrote {terminal_safe(str(out))} ({len(pairs)} requests compared)",
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
        fail(
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
            fail(
                "report",
                f"{names}: only for --format mermaid (the HTML page holds every session "
                "and message)",
            )


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
        fail("report", f"{out} is {what}; name the page with -o FILE")


def _stdout(text: str) -> None:
    click.echo(text, nl=False)


def _note(text: str) -> None:
    click.echo(f"mcpsniff report: {text}", err=True)
