"""``mcpsniff check TRACE --as VERSION``: what would break if the peers moved to VERSION.

The judging is ``core/upgrade.py``; this module reads the trace, prints the
report (text, or one JSON object for CI) and gives the exit status.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.upgrade import judge_upgrade, upgrade_json, upgrade_lines
from mcpsniff.terminal.safe_output import terminal_json_line
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2


def upgrade_check(trace: Path, target: str, fmt: str, fail_on: str) -> int:
    """Print the upgrade report of ``trace`` as ``target``; the exit status.

    1 when a finding at or above ``fail_on`` would appear, 2 when the trace
    cannot be read, else 0.
    """
    if fmt not in ("text", "json"):
        raise click.UsageError("--as VERSION reports as text or json")

    def warn(text: str) -> None:
        click.echo(f"mcpsniff check: warning: {terminal_safe(text)}", err=True)

    try:
        report = judge_upgrade(lambda: TraceReader(trace, on_skip=warn), target)
    except (TraceError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        click.echo(f"mcpsniff check: {terminal_safe(f'{trace}: {reason}')}", err=True)
        return EXIT_UNREADABLE
    if report.analyzer_errors:
        warn(
            f"the analyzer failed on {report.analyzer_errors} record(s); findings may be "
            "missing (please report this as an mcpsniff bug)"
        )
    if fmt == "json":
        sys.stdout.write(terminal_json_line(upgrade_json(report)) + "\n")
    else:
        for line in upgrade_lines(report, trace):
            click.echo(line)
    return EXIT_FINDINGS if report.failing(fail_on) else EXIT_OK
