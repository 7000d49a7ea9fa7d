"""``mcpsniff redact TRACE -o OUT``: a copy of a trace that is safe to share."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.cli.options import output_option
from mcpsniff.core.escape import terminal_safe
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.redact_trace import redact_trace


def _say(text: str) -> None:
    click.echo(f"mcpsniff redact: {terminal_safe(text)}", err=True)


@click.command()
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path))
@output_option("The redacted copy to create (never overwritten).", required=True)
def redact(trace: Path, output: Path) -> None:
    """Write a copy of TRACE with its credentials replaced by [REDACTED].

    For a trace recorded with --no-redact or by an older mcpsniff: the same
    detectors as live recording (secret-like names and secret-like values) run
    over frames, headers, URLs, stderr lines, the server's command line and the
    derived records. Frames keep every other byte, so `mcpsniff check` reads
    the copy as it read the original. Exit status 0 on success, 2 when the
    trace cannot be read or the copy cannot be written.
    """
    try:
        same = output.exists() and trace.exists() and output.samefile(trace)
    except OSError:
        same = False
    if same:
        _say(f"{output} is the trace itself; choose another -o")
        sys.exit(2)
    try:
        report = redact_trace(trace, output, warn=lambda text: _say(f"warning: {text}"))
    except TraceError as exc:
        _say(str(exc))
        sys.exit(2)
    except FileExistsError:
        _say(f"{output} already exists; choose another -o")
        sys.exit(2)
    except OSError as exc:
        _say(f"cannot write {output}: {exc.strerror or exc}")
        sys.exit(2)
    skipped = f"; {report.skipped} malformed record(s) left out" if report.skipped else ""
    _say(f"{report.summary()}{skipped}; wrote {output}")
