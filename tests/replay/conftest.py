"""Recordings of real sessions, made once per test session and shared by the replay tests."""

from __future__ import annotations

from pathlib import Path

import pytest

# The fixture users get from the plugin; imported, since only a root conftest may load plugins.
from mcpsniff.replay.fixture import replay_server  # noqa: F401
from tests.replay.support import (
    EVERYTHING,
    EVERYTHING_JS,
    SDK2,
    SDK2_PYTHON,
    SDK2_SERVER,
    Recording,
    everything_http,
    need,
    record_http_clients,
    record_stdio,
)


@pytest.fixture(scope="session")
def replay_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replay")


@pytest.fixture(scope="session")
def everything_recording(replay_dir: Path) -> Recording:
    """SDK 2.x client with server-everything (handshake era, 2025-11-25), over stdio."""
    need(SDK2_PYTHON, EVERYTHING_JS)
    return record_stdio(replay_dir / "everything.jsonl", EVERYTHING)


@pytest.fixture(scope="session")
def modern_recording(replay_dir: Path) -> Recording:
    """SDK 2.x client with the SDK 2.x server: a stateless 2026-07-28 session over stdio."""
    need(SDK2_PYTHON, SDK2_SERVER)
    return record_stdio(replay_dir / "modern.jsonl", SDK2)


@pytest.fixture(scope="session")
def http_recording(replay_dir: Path) -> Recording:
    """SDK 2.x client with server-everything over Streamable HTTP, through ``mcpsniff http``."""
    need(SDK2_PYTHON, EVERYTHING_JS)
    recorded = record_http_clients(replay_dir / "everything-http.jsonl", 1, everything_http)
    return Recording(recorded.trace, recorded.results[0])
