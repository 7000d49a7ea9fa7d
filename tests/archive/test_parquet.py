"""The archive's files: read back with DuckDB, pyarrow and ClickHouse (chdb), idempotent appends.

Three engines built independently must count the same rows: that is what
says the files are plain Parquet that Spark, Trino or ClickHouse read from
object storage on many machines.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from mcpsniff.archive.parquet import (
    MANIFEST,
    STATE,
    VERSION_KEY,
    ArchiveError,
    export_traces,
    open_archive,
)
from mcpsniff.archive.rows import SCHEMA_VERSION, trace_rows
from mcpsniff.core.model import BATCH, MessageRecord
from mcpsniff.trace.reader import TraceReader

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_trace import generate  # noqa: E402


def _quiet(*_args: object) -> None:
    pass


def _message_count(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        with TraceReader(path) as reader:
            total += sum(isinstance(r, MessageRecord) and r.kind != BATCH for r in reader.records())
    return total


def duckdb_counts(folder: Path) -> tuple[int, int, int]:
    """(messages, distinct keys, findings) as DuckDB reads them."""
    import duckdb

    messages = f"read_parquet('{folder}/messages/**/*.parquet', hive_partitioning = true)"
    findings = f"read_parquet('{folder}/findings/**/*.parquet', hive_partitioning = true)"
    connection = duckdb.connect(":memory:")
    row = connection.execute(
        f"SELECT count(*), count(DISTINCT (trace, session, seq, batch_index)) FROM {messages}"
    ).fetchone()
    assert row is not None
    if not any((folder / "findings").rglob("*.parquet")):
        return row[0], row[1], 0
    found = connection.execute(f"SELECT count(*) FROM {findings}").fetchone()
    assert found is not None
    return row[0], row[1], found[0]


def pyarrow_counts(folder: Path) -> tuple[int, int, int]:
    """The same counts as pyarrow's dataset reader gives."""
    messages = ds.dataset(folder / "messages", format="parquet", partitioning="hive")
    table = messages.to_table(columns=["trace", "session", "seq", "batch_index"])
    keys = set(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))
    findings = ds.dataset(folder / "findings", format="parquet", partitioning="hive")
    return table.num_rows, len(keys), findings.count_rows()


def clickhouse_counts(folder: Path) -> tuple[int, int, int]:
    """The same counts from embedded ClickHouse (chdb), offline."""
    import chdb

    def one(sql: str) -> list[str]:
        return str(chdb.query(sql, "CSV")).strip().split(",")

    messages = f"file('{folder}/messages/**/*.parquet', Parquet)"
    total, keys = one(
        f"SELECT count(), uniqExact(trace, session, seq, coalesce(batch_index, -1)) FROM {messages}"
    )
    (found,) = one(f"SELECT count() FROM file('{folder}/findings/**/*.parquet', Parquet)")
    return int(total), int(keys), int(found)


def test_recordings_round_trip_twice_three_engines(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    traces = sorted(RECORDINGS.glob("*.jsonl"))
    first = export_traces([RECORDINGS], archive, _quiet)
    second = export_traces([RECORDINGS], archive, _quiet)
    expected = _message_count(traces)
    assert first.messages == expected and first.skipped_messages == 0
    # Unchanged traces are not even read again ...
    assert (second.messages, second.findings, second.files) == (0, 0, 0)
    assert second.unchanged == len(traces)
    # ... and without that note, the keys alone keep the archive from doubling.
    shutil.rmtree(archive / STATE)
    third = export_traces([RECORDINGS], archive, _quiet)
    assert (third.messages, third.findings, third.files, third.unchanged) == (0, 0, 0, 0)
    assert third.skipped_messages == expected
    findings = sum(len(trace_rows(p).findings) for p in traces)
    counts = (expected, expected, findings)
    assert duckdb_counts(archive) == counts
    assert pyarrow_counts(archive) == counts
    assert clickhouse_counts(archive) == counts


def test_a_generated_100000_message_trace_exported_twice(tmp_path: Path) -> None:
    trace = tmp_path / "big.jsonl"
    generate(trace, 100_000, payload=128)
    archive = tmp_path / "archive"
    assert export_traces([trace], archive, _quiet).messages == 100_000
    shutil.rmtree(archive / STATE)  # read it again: the keys decide
    again = export_traces([trace], archive, _quiet)
    assert (again.messages, again.skipped_messages) == (0, 100_000)
    with trace.open("rb") as handle:
        findings = sum(line.startswith(b'{"type":"finding"') for line in handle)
    assert findings > 0  # the generator's TOOL-ARGS-SCHEMA findings
    counts = (100_000, 100_000, findings)
    assert duckdb_counts(archive) == counts
    assert pyarrow_counts(archive) == counts
    assert clickhouse_counts(archive) == counts


def test_a_grown_trace_adds_only_its_new_messages(tmp_path: Path) -> None:
    source = (RECORDINGS / "clean-2025-11-25.jsonl").read_bytes().splitlines(keepends=True)
    trace = tmp_path / "growing.jsonl"
    cut = len(source) // 2
    trace.write_bytes(b"".join(source[:cut]))
    archive = tmp_path / "archive"
    early = export_traces([trace], archive, _quiet).messages
    trace.write_bytes(b"".join(source))
    late = export_traces([trace], archive, _quiet)
    total = _message_count([trace])
    assert 0 < early < total
    assert (late.messages, late.skipped_messages) == (total - early, early)
    assert duckdb_counts(archive)[:2] == (total, total)


def test_layout_schema_version_and_partitions(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    export_traces([RECORDINGS / "string-id-echo.jsonl"], archive, _quiet)
    manifest = json.loads((archive / MANIFEST).read_text())
    assert manifest == {"format": "mcpsniff-archive", "schema_version": SCHEMA_VERSION}
    (part,) = (archive / "messages").rglob("*.parquet")
    assert part.parent.relative_to(archive).parts == (
        "messages",
        "day=2026-01-01",
        "server=gallery-server",
    )
    schema = pq.read_schema(part)
    assert schema.metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert "day" not in schema.names and "server" not in schema.names  # in the folder names
    assert str(schema.field("t").type) == "timestamp[us, tz=UTC]"
    assert not list(archive.rglob("*.tmp"))


def test_server_names_are_percent_encoded(tmp_path: Path) -> None:
    rows = trace_rows(RECORDINGS / "string-id-echo.jsonl")
    for row in rows.messages:
        row["server"] = "a/b ../c"
    from mcpsniff.archive.parquet import append

    open_archive(tmp_path / "archive")
    append(tmp_path / "archive", rows)
    (part,) = (tmp_path / "archive" / "messages").rglob("*.parquet")
    assert part.parent.name == "server=a%2Fb%20..%2Fc"
    assert duckdb_counts(tmp_path / "archive")[0] == len(rows.messages)


def test_refuses_a_folder_that_is_not_an_archive(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ArchiveError, match="not empty and not an mcpsniff archive"):
        open_archive(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_refuses_another_schema_version(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text('{"format": "mcpsniff-archive", "schema_version": 99}')
    with pytest.raises(ArchiveError, match="schema version 99"):
        open_archive(tmp_path)


def test_a_part_file_is_never_replaced(tmp_path: Path) -> None:
    from mcpsniff.archive.parquet import _write_part

    archive = tmp_path / "archive"
    open_archive(archive)
    rows = trace_rows(RECORDINGS / "string-id-echo.jsonl")
    for _ in range(2):
        _write_part(archive, "messages", rows.trace, "2026-01-01", "s", rows.messages)
    first, second = sorted((archive / "messages").rglob("*.parquet"), key=lambda p: len(p.name))
    assert second.name == first.name.replace(".parquet", "-1.parquet")
    assert pq.read_table(first).num_rows == pq.read_table(second).num_rows == len(rows.messages)
