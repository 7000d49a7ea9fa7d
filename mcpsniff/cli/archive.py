"""``mcpsniff export parquet`` and ``mcpsniff query``: the columnar archive and SQL over it."""

from __future__ import annotations

import csv
import io
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click
import orjson

from mcpsniff.cli.options import format_option, output_option
from mcpsniff.cli.shared import fail
from mcpsniff.core.escape import terminal_safe
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.paths import traces_dir

#: Rows ``query`` prints unless told otherwise.
DEFAULT_ROWS = 1000
#: The widest column of the table format (longer values are cut with an ellipsis).
CELL_WIDTH = 60


@click.command("parquet")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@output_option(
    "The archive folder (created; an existing archive is appended to).", required=True, folder=True
)
def parquet(traces: tuple[Path, ...], output: Path) -> None:
    """Append TRACE files (or folders of them) to a Parquet archive partitioned by day and server.

    Two tables, messages (one row per JSON-RPC message) and findings, with the
    versioned schema of docs/archive.md. Appending is idempotent: a message is
    keyed by trace, session and sequence number, so exporting a trace twice
    adds nothing, and a grown trace adds only its new messages.
    """
    from mcpsniff.archive.parquet import ArchiveError, export_traces

    for trace in traces:
        if not trace.exists():
            fail("export parquet", f"{trace}: no such file or folder")

    def progress(path: Path, done: Any) -> None:
        if done.unchanged:
            where = terminal_safe(str(path))
            click.echo(
                f"mcpsniff export parquet: {where}: unchanged since its last export", err=True
            )
            return
        click.echo(
            f"mcpsniff export parquet: {terminal_safe(str(path))}: {done.messages} message(s), "
            f"{done.findings} finding(s) added; {done.skipped_messages} already archived",
            err=True,
        )

    try:
        total = export_traces(list(traces), output, progress)
    except (ArchiveError, TraceError) as exc:
        fail("export parquet", str(exc))
    except OSError as exc:
        fail("export parquet", f"{output}: {exc.strerror or exc}")
    click.echo(
        f"mcpsniff export parquet: {total.messages} message(s) and {total.findings} finding(s) "
        f"added to {terminal_safe(str(output))} in {total.files} file(s)",
        err=True,
    )


@click.command()
@click.argument("sql")
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@format_option(("table", "json", "csv"))
@click.option(
    "--max-rows", default=DEFAULT_ROWS, show_default=True, type=click.IntRange(1, 10_000_000)
)
def query(sql: str, sources: tuple[Path, ...], fmt: str, max_rows: int) -> None:
    """Run SQL over traces or a Parquet archive with DuckDB (embedded); print a table, JSON or CSV.

    SOURCES are one archive folder (from `export parquet`), or trace files and
    folders of traces (default: the state folder). The tables are `messages`
    and `findings` (docs/archive.md), for example:

    \b
      mcpsniff query "SELECT tool, count(*), quantile_cont(latency_ms, 0.95) AS p95
                      FROM messages WHERE kind='response' AND tool IS NOT NULL
                      GROUP BY tool ORDER BY p95 DESC" archive/
    """
    from mcpsniff.archive.parquet import ArchiveError
    from mcpsniff.archive.sql import run_query

    paths = list(sources) or [traces_dir()]
    for path in paths:
        if not path.exists():
            fail("query", f"{path}: no such file or folder")
    try:
        result = run_query(paths, sql, max_rows)
    except (ArchiveError, TraceError) as exc:
        fail("query", str(exc))
    if fmt == "json":
        for row in result.rows:
            line = orjson.dumps(dict(zip(result.columns, row, strict=True)), default=_plain)
            click.echo(terminal_safe(line.decode("utf-8", "replace")))
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([[_cell_text(v) for v in row] for row in result.rows])
        click.echo(terminal_safe(buffer.getvalue()).replace("\\x0a", "\n"), nl=False)
    else:
        for line in _table(result.columns, result.rows):
            click.echo(line)
    if result.more:
        click.echo(f"mcpsniff query: only the first {max_rows} rows shown (--max-rows)", err=True)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _cell(value: Any) -> str:
    text = terminal_safe(_cell_text(value))
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def _table(columns: list[str], rows: list[tuple[Any, ...]]) -> list[str]:
    cells = [[_cell(v) for v in row] for row in rows]
    heads = [terminal_safe(c) for c in columns]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return lines
