"""``export otlp`` options: unusable endpoints are one line, and no credential is printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from tests.export.support import RECORDINGS

TRACE = str(RECORDINGS / "clean-2025-11-25.jsonl")

pytest.importorskip("opentelemetry.sdk")


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        ("http://[::1", "the OTLP endpoint 'http://[::1' is not a usable URL: Invalid IPv6 URL"),
        ("http://h:99999", "is not a usable URL: Port out of range 0-65535"),
        ("http:///v1", "the OTLP endpoint 'http:///v1' names no host"),
        ("ftp://u:hunter2@h", "must be an http:// or https:// URL, not 'ftp://u:[REDACTED]@h'"),
    ],
)
def test_an_unusable_endpoint_is_one_line(endpoint: str, message: str) -> None:
    result = CliRunner().invoke(main, ["export", "otlp", TRACE, "--endpoint", endpoint])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and message in result.output
    assert "hunter2" not in result.output


def test_the_environment_s_endpoint_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
    result = CliRunner().invoke(main, ["export", "otlp", TRACE])
    assert result.exit_code == 2
    assert "must be an http:// or https:// URL, not 'collector:4318'" in result.output


def test_a_collector_that_is_down_is_named_without_its_credentials(tmp_path: Path) -> None:
    endpoint = "http://bot:s3cr3t-pw@127.0.0.1:1/?api_key=k3y-v4lue"
    result = CliRunner().invoke(main, ["export", "otlp", TRACE, "--endpoint", endpoint])
    assert result.exit_code == 2
    assert "the collector at http://bot:[REDACTED]@127.0.0.1:1" in result.output
    assert "s3cr3t-pw" not in result.output and "k3y-v4lue" not in result.output
