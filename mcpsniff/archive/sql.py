"""``mcpsniff query``: SQL over an archive or over traces, with DuckDB embedded.

Two tables, whatever the source: ``messages`` and ``findings``, with the
columns of docs/archive.md (the partition columns ``day`` and ``server``
included). Over an archive folder they are views of its Parquet files; over
trace files they are the same rows built in memory, so a query means the same
thing before and after ``export parquet``. The database is in memory, and
DuckDB may not download extensions: it reads only the files named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpsniff.archive.parquet import (
    FINDINGS,
    MANIFEST,
    MESSAGES,
    ArchiveError,
    arrow_table,
    require_pyarrow,
)
from mcpsniff.archive.rows import iter_trace_files, trace_rows

try:
    import duckdb
except ImportError:  # pragma: no cover - the optional extra is missing
    duckdb = None


@dataclass(frozen=True)
class QueryResult:
    """The columns and rows of a query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    #: Rows the query returned beyond ``limit`` (not fetched).
    more: bool


def is_archive(path: Path) -> bool:
    """Whether ``path`` is an archive folder (it holds the manifest)."""
    return path.is_dir() and (path / MANIFEST).is_file()


def connect(sources: list[Path]) -> Any:
    """A DuckDB connection with ``messages`` and ``findings`` over ``sources``.

    ``sources`` is one archive folder, or trace files and folders of traces.
    Raises ``ArchiveError``.
    """
    require_pyarrow()
    if duckdb is None:
        raise ArchiveError("mcpsniff query needs duckdb: pip install 'mcpsniff[archive]'")
    connection = duckdb.connect(":memory:")
    # Only the files named may be read: no extension downloads, no other paths.
    connection.execute("SET autoinstall_known_extensions = false")
    connection.execute("SET autoload_known_extensions = false")
    archives = [s for s in sources if is_archive(s)]
    if archives:
        if len(sources) != 1:
            raise ArchiveError("give one archive folder, or trace files, not both")
        root = archives[0]
        for table in (MESSAGES, FINDINGS):
            files = root / table
            if any(files.rglob("*.parquet")):
                pattern = str(files / "**" / "*.parquet").replace("'", "''")
                connection.execute(
                    f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{pattern}', "
                    "hive_partitioning = true, union_by_name = true)"
                )
            else:
                _register(connection, table, [])
        return connection
    messages: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for path in iter_trace_files(sources):
        rows = trace_rows(path)
        messages.extend(rows.messages)
        findings.extend(rows.findings)
    _register(connection, MESSAGES, messages)
    _register(connection, FINDINGS, findings)
    return connection


def _register(connection: Any, table: str, rows: list[dict[str, Any]]) -> None:
    arrow = arrow_table(table, rows, with_partitions=True)
    connection.register(f"_{table}_rows", arrow)
    connection.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}_rows")


def run_query(sources: list[Path], sql: str, limit: int) -> QueryResult:
    """Run ``sql`` over ``sources``; at most ``limit`` rows. Raises ``ArchiveError``."""
    connection = connect(sources)
    try:
        cursor = connection.execute(sql)
        if cursor.description is None:
            return QueryResult([], [], False)
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(limit + 1)
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ArchiveError(first) from None
    finally:
        connection.close()
    return QueryResult(columns, rows[:limit], len(rows) > limit)
