"""``mcpsniff export parquet`` and ``mcpsniff query`` from the command line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
COUNT = "SELECT kind, count(*) AS n FROM messages GROUP BY kind ORDER BY n DESC, kind"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_export_twice_then_query_in_three_formats(tmp_path: Path) -> None:
    archive = str(tmp_path / "archive")
    code, _, err = run("export", "parquet", str(RECORDINGS), "-o", archive)
    assert code == 0 and "105 message(s) and 13 finding(s) added" in err
    code, _, err = run("export", "parquet", str(RECORDINGS), "-o", archive)
    assert code == 0 and "0 message(s) and 0 finding(s) added" in err
    assert err.count("unchanged since its last export") == len(list(RECORDINGS.glob("*.jsonl")))
    code, out, _ = run("query", COUNT, archive)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["kind", "n"] and lines[-1] == "(6 rows)"
    assert lines[2].split() == ["request", "32"]
    code, out, _ = run("query", COUNT, archive, "--format", "json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0] == {"kind": "request", "n": 32} and sum(r["n"] for r in rows) == 105
    code, out, _ = run("query", COUNT, str(RECORDINGS), "--format", "csv")
    assert list(csv.reader(io.StringIO(out)))[:2] == [["kind", "n"], ["request", "32"]]


def test_query_max_rows(tmp_path: Path) -> None:
    code, out, err = run("query", "SELECT seq FROM messages", str(RECORDINGS), "--max-rows", "2")
    assert code == 0 and out.splitlines()[-1] == "(2 rows)"
    assert "only the first 2 rows" in err


def test_traffic_text_is_escaped_in_the_table(tmp_path: Path) -> None:
    code, out, _ = run("query", "SELECT 'a' || chr(27) || '[31m' AS x", str(RECORDINGS))
    assert code == 0 and "\x1b" not in out and "\\x1b[31m" in out


def test_bad_sql_and_missing_paths_exit_2(tmp_path: Path) -> None:
    code, _, err = run("query", "SELEC 1", str(RECORDINGS))
    assert code == 2 and err.startswith("mcpsniff query: ") and err.count("\n") == 1
    code, _, err = run("query", "SELECT 1", str(tmp_path / "nowhere"))
    assert code == 2 and "no such file or folder" in err
    code, _, err = run("export", "parquet", str(tmp_path / "nowhere"), "-o", str(tmp_path / "a"))
    assert code == 2 and "no such file or folder" in err


def test_export_refuses_a_folder_that_is_not_an_archive(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep")
    code, _, err = run("export", "parquet", str(RECORDINGS), "-o", str(tmp_path))
    assert code == 2 and "not an mcpsniff archive" in err
    assert (tmp_path / "mine.txt").read_text() == "keep"
