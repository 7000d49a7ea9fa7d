"""Writing the archive: Parquet files partitioned by day and server, appended idempotently.

Layout (docs/archive.md)::

    DIR/mcpsniff-archive.json                 {"schema_version": 1, ...}
    DIR/messages/day=2026-01-01/server=NAME/part-<trace>-<first>-<last>.parquet
    DIR/findings/day=2026-01-01/server=NAME/part-<trace>-<first>-<last>.parquet
    DIR/_exported/<trace>.json                {"size": ...}: the trace at its last export

Hive-style folders, as Spark, Trino, ClickHouse, DuckDB and pyarrow read
them; the partition values are percent-encoded (pyarrow's ``uri`` segment
encoding). The partition columns live in the folder names only, not in the
files, which is what those engines expect.

Appending is idempotent: before writing a trace's rows, the keys the archive
already holds for that trace are read back, and only the rows it lacks are
written, to a new file whose name is derived from them; so exporting a trace
twice adds nothing, and exporting it again after it grew adds only what is
new. Each file is written under a temporary name and renamed into place, so a
reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcpsniff.archive.rows import (
    SCHEMA_VERSION,
    UNKNOWN,
    TraceRows,
    iter_trace_files,
    trace_id,
    trace_rows,
)

try:
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
except ImportError:  # pragma: no cover - the optional extra is missing
    pa = None

MANIFEST = "mcpsniff-archive.json"
#: Held (flock) by the export appending to the archive.
LOCK = ".mcpsniff-archive.lock"
#: Per trace, its size at its last export (an underscore folder, which engines skip).
STATE = "_exported"
MESSAGES, FINDINGS = "messages", "findings"
#: Parquet key-value metadata naming the schema version of every file.
VERSION_KEY = b"mcpsniff.archive.schema_version"
PARTITIONS = ("day", "server")


class ArchiveError(Exception):
    """The archive cannot be written or read; the message is one line."""


def require_pyarrow() -> None:
    """Raise ``ArchiveError`` saying how to install the extra when pyarrow is missing."""
    if pa is None:
        raise ArchiveError(
            "the Parquet archive needs pyarrow and duckdb: pip install 'mcpsniff[archive]'"
        )


def _schemas() -> dict[str, Any]:
    time = pa.timestamp("us", tz="UTC")
    # Every row names its trace and session first, and its peers last.
    where = [("trace", pa.string()), ("trace_file", pa.string()), ("session", pa.string())]
    identity = [
        ("server_name", pa.string()),
        ("server_version", pa.string()),
        ("client_name", pa.string()),
        ("protocol_version", pa.string()),
    ]
    messages = [
        ("seq", pa.int64()),
        ("batch_index", pa.int32()),
        ("t", time),
        ("transport", pa.string()),
        ("direction", pa.string()),
        ("kind", pa.string()),
        ("method", pa.string()),
        ("id", pa.string()),
        ("tool", pa.string()),
        ("target", pa.string()),
        ("latency_ms", pa.float64()),
        ("error_code", pa.int64()),
        ("error_layer", pa.string()),
        ("is_error", pa.bool_()),
        ("size", pa.int64()),
        ("findings", pa.int32()),
        ("body", pa.string()),
    ]
    findings = [
        ("finding_no", pa.int64()),
        ("rule", pa.string()),
        ("severity", pa.string()),
        ("message", pa.string()),
        ("seq", pa.int64()),
        ("seqs", pa.string()),
        ("t", time),
    ]
    metadata = {VERSION_KEY: str(SCHEMA_VERSION).encode()}
    return {
        table: pa.schema([*where, *columns, *identity], metadata=metadata)
        for table, columns in ((MESSAGES, messages), (FINDINGS, findings))
    }


def _key(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    if table == MESSAGES:
        return (row["session"], row["seq"], row["batch_index"])
    return (row["finding_no"],)


@dataclass
class Appended:
    """What one ``append`` added."""

    messages: int = 0
    findings: int = 0
    skipped_messages: int = 0
    skipped_findings: int = 0
    files: int = 0
    #: Traces not read again: the same size as at their last export.
    unchanged: int = 0


FIELDS = ("messages", "findings", "skipped_messages", "skipped_findings", "files", "unchanged")


def open_archive(folder: Path) -> None:
    """Create the archive folder and its manifest, or check an existing one's version."""
    require_pyarrow()
    manifest = folder / MANIFEST
    if manifest.exists():
        try:
            version = json.loads(manifest.read_text())["schema_version"]
        except (OSError, ValueError, KeyError, TypeError):
            raise ArchiveError(f"{manifest}: not an mcpsniff archive manifest") from None
        if version != SCHEMA_VERSION:
            raise ArchiveError(
                f"{folder}: archive schema version {version!r}; this mcpsniff writes "
                f"{SCHEMA_VERSION} (see docs/archive.md)"
            )
        return
    if folder.exists() and any(folder.iterdir()):
        raise ArchiveError(f"{folder}: not empty and not an mcpsniff archive; left untouched")
    folder.mkdir(parents=True, exist_ok=True)
    document = {"format": "mcpsniff-archive", "schema_version": SCHEMA_VERSION}
    _write_atomically(manifest, (json.dumps(document) + "\n").encode())


def _existing_keys(folder: Path, table: str, trace: str) -> set[tuple[Any, ...]]:
    """The keys the archive holds for ``trace``: read from its own files only (by name)."""
    files = sorted(str(p) for p in (folder / table).glob(f"*/*/part-{trace}-*.parquet"))
    if not files:
        return set()
    columns = ["session", "seq", "batch_index"] if table == MESSAGES else ["finding_no"]
    found = ds.dataset(files, format="parquet").to_table(columns=columns).to_pylist()
    return {tuple(row[c] for c in columns) for row in found}


def append(folder: Path, rows: TraceRows) -> Appended:
    """Add the rows of one trace that ``folder`` lacks. Raises ``ArchiveError``."""
    require_pyarrow()
    done = Appended()
    for table, items in ((MESSAGES, rows.messages), (FINDINGS, rows.findings)):
        have = _existing_keys(folder, table, rows.trace)
        new = [row for row in items if _key(table, row) not in have]
        skipped = len(items) - len(new)
        if table == MESSAGES:
            done.messages, done.skipped_messages = len(new), skipped
        else:
            done.findings, done.skipped_findings = len(new), skipped
        groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in new:
            groups[(row["day"], row["server"])].append(row)
        for (day, server), group in sorted(groups.items()):
            _write_part(folder, table, rows.trace, day, server, group)
            done.files += 1
    return done


def arrow_table(table: str, rows: list[dict[str, Any]], with_partitions: bool = False) -> Any:
    """The rows of ``table`` as a pyarrow table of the archive schema.

    ``with_partitions`` adds ``day`` (a date) and ``server``, the columns an
    archive keeps in its folder names, as a query over it sees them.
    """
    require_pyarrow()
    schema = _schemas()[table]
    arrays = []
    for field in schema:
        values = [row.get(field.name) for row in rows]
        if field.name == "t":
            micros = [None if v is None else int(v * 1_000_000) for v in values]
            arrays.append(pa.array(micros, pa.int64()).cast(field.type))
        else:
            arrays.append(pa.array(values, field.type))
    if with_partitions:
        days = [None if row["day"] == UNKNOWN else row["day"] for row in rows]
        arrays.append(pa.array(days, pa.string()).cast(pa.date32()))
        arrays.append(pa.array([row["server"] for row in rows], pa.string()))
        schema = schema.append(pa.field("day", pa.date32())).append(pa.field("server", pa.string()))
    return pa.Table.from_arrays(arrays, schema=schema)


def _write_part(
    folder: Path, table: str, trace: str, day: str, server: str, group: list[dict[str, Any]]
) -> None:
    arrow = arrow_table(table, group)
    part = folder / table / f"day={quote(day, safe='')}" / f"server={quote(server, safe='')}"
    part.mkdir(parents=True, exist_ok=True)
    first, last = _span(table, group)
    target = part / f"part-{trace}-{first}-{last}.parquet"
    n = 1
    while target.exists():  # never replace a file (a trace rewritten in place)
        target = part / f"part-{trace}-{first}-{last}-{n}.parquet"
        n += 1
    temporary = part / f".{target.name}.{os.getpid()}.tmp"
    try:
        pq.write_table(arrow, temporary, compression="zstd")
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ArchiveError(f"{target}: cannot write: {exc.strerror or exc}") from None


def _span(table: str, group: list[dict[str, Any]]) -> tuple[int, int]:
    column = "seq" if table == MESSAGES else "finding_no"
    values = [row[column] for row in group if row[column] is not None] or [0]
    return min(values), max(values)


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def export_traces(
    paths: list[Path], folder: Path, progress: Callable[[Path, Appended], None]
) -> Appended:
    """Append every trace of ``paths`` to the archive at ``folder``; the totals.

    A trace whose size is what it was at its last export is not read again
    (traces only grow): a periodic export over a whole state folder costs a
    ``stat`` per unchanged trace. The keys still decide what is written.
    """
    open_archive(folder)
    total = Appended()
    with _exclusive(folder):
        _export_each(list(iter_trace_files(paths)), folder, progress, total)
    return total


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """One export at a time per archive: two would both write the rows neither had."""
    with open(folder / LOCK, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _export_each(
    paths: list[Path], folder: Path, progress: Callable[[Path, Appended], None], total: Appended
) -> None:
    for path in paths:
        size = _size(path)
        ident = trace_id(path)
        if size is not None and _exported_size(folder, ident) == size:
            done = Appended(unchanged=1)
        else:
            done = append(folder, trace_rows(path))
            if size is not None:
                _note_exported(folder, ident, path, size)
        progress(path, done)
        for name in FIELDS:
            setattr(total, name, getattr(total, name) + getattr(done, name))


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _state_file(folder: Path, trace: str) -> Path:
    return folder / STATE / f"{trace}.json"


def _exported_size(folder: Path, trace: str) -> int | None:
    try:
        size = json.loads(_state_file(folder, trace).read_text()).get("size")
    except (OSError, ValueError, AttributeError):
        return None
    return size if type(size) is int else None


def _note_exported(folder: Path, trace: str, path: Path, size: int) -> None:
    state = _state_file(folder, trace)
    state.parent.mkdir(exist_ok=True)
    document = {"trace": trace, "file": str(path), "size": size}
    _write_atomically(state, (json.dumps(document) + "\n").encode())
