"""What every end-to-end test shares about the official SDK client peer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK2_PYTHON = REPO / ".peers" / "sdk2" / "bin" / "python"
SDK_CLIENT = REPO / "tests" / "e2e" / "peers" / "sdk_client.py"
#: Seconds one scripted SDK client session may take.
RUN_TIMEOUT = 60.0


def client_result(proc: subprocess.Popen[bytes], label: str) -> dict[str, Any]:
    """The SDK client's JSON output; fails unless it ran its whole plan."""
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{label}: the SDK client timed out\n{err.decode(errors='replace')}")
    assert proc.returncode == 0, f"{label}: client exited {proc.returncode}\n{err.decode()}"
    result: dict[str, Any] = json.loads(out)
    return result
