"""``query``'s tables: the same answers over traces and over their archive."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.archive import parquet
from mcpsniff.archive.parquet import ArchiveError, export_traces
from mcpsniff.archive.sql import is_archive, run_query

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"

#: The examples of docs/archive.md, each run over traces and over the archive.
EXAMPLES = [
    "SELECT tool, count(*) AS calls, quantile_cont(latency_ms, 0.95) AS p95_ms FROM messages "
    "WHERE kind IN ('response', 'error') AND tool IS NOT NULL "
    "AND t >= now() - INTERVAL 7000 DAY GROUP BY tool ORDER BY p95_ms DESC, tool",
    "SELECT server_name, server_version, count(*) FILTER (WHERE kind = 'error' OR is_error) "
    "AS errors, count(*) FILTER (WHERE kind IN ('response', 'error')) AS answers "
    "FROM messages GROUP BY ALL ORDER BY ALL",
    "SELECT DISTINCT trace_file, session, client_name FROM messages m WHERE NOT EXISTS ("
    "SELECT 1 FROM messages i WHERE i.trace = m.trace AND i.session = m.session "
    "AND i.method = 'notifications/initialized') ORDER BY ALL",
    "SELECT rule, severity, count(*) AS n FROM findings GROUP BY ALL ORDER BY n DESC, rule",
    "SELECT day, server, count(*) FROM messages GROUP BY ALL ORDER BY ALL",
]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("archive") / "a"
    export_traces([RECORDINGS], folder, lambda *_: None)
    return folder


@pytest.mark.parametrize("sql", EXAMPLES)
def test_traces_and_archive_give_the_same_answer(archive: Path, sql: str) -> None:
    over_traces = run_query([RECORDINGS], sql, 1000)
    over_archive = run_query([archive], sql, 1000)
    assert over_traces.columns == over_archive.columns
    assert over_traces.rows == over_archive.rows
    assert over_traces.rows  # every example has an answer on the gallery


def test_the_gallery_answers(archive: Path) -> None:
    missing = run_query([archive], EXAMPLES[2], 100).rows
    assert any(str(row[0]).endswith("missing-initialized.jsonl") for row in missing)
    rules = dict((r[0], r[2]) for r in run_query([archive], EXAMPLES[3], 100).rows)
    assert rules["JR-PARSE"] == 3


def test_limit_and_more(archive: Path) -> None:
    result = run_query([archive], "SELECT seq FROM messages ORDER BY seq", 3)
    assert len(result.rows) == 3 and result.more


def test_errors_are_one_line(archive: Path) -> None:
    with pytest.raises(ArchiveError) as caught:
        run_query([archive], "SELECT no_such_column FROM messages", 10)
    assert "\n" not in str(caught.value)
    with pytest.raises(ArchiveError, match="not both"):
        run_query([archive, RECORDINGS / "empty-batch.jsonl"], "SELECT 1", 10)


def test_is_archive(archive: Path) -> None:
    assert is_archive(archive) and not is_archive(RECORDINGS)


def test_missing_extra_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(parquet, "pa", None)
    with pytest.raises(ArchiveError, match=r"pip install 'mcpsniff\[archive\]'"):
        export_traces([RECORDINGS], tmp_path / "a", lambda *_: None)
