"""Every export on issue 13's hostile traces: a one-line error or a skipped record, no traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from tests.export.collector import Collector, start_collector
from tests.trace.test_validate import GOOD, HOSTILE, _write

COMMANDS = {
    "check sarif": ["check", "{trace}", "--format", "sarif"],
    "check junit": ["check", "{trace}", "--format", "junit"],
    "export har": ["export", "har", "{trace}", "-o", "{out}"],
    "export otlp": ["export", "otlp", "{trace}", "--endpoint", "{collector}"],
}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    pytest.importorskip("opentelemetry.sdk")
    running = start_collector(tmp_path_factory.mktemp("rotel-hostile"), verbosity="basic")
    yield running
    running.stop()


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_export_ends_in_a_traceback_on_a_hostile_trace(
    tmp_path: Path, name: str, command: str, request: pytest.FixtureRequest
) -> None:
    endpoint = ""
    if command == "export otlp":
        endpoint = request.getfixturevalue("collector").http_url
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], *HOSTILE[name], GOOD["event"]])
    args = [
        a.replace("{trace}", str(path))
        .replace("{out}", str(tmp_path / "out.har"))
        .replace("{collector}", endpoint)
        for a in COMMANDS[command]
    ]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
