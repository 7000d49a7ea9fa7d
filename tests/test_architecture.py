"""The layers of docs/architecture.md hold: ``lint-imports`` keeps every contract.

The contracts are in ``pyproject.toml`` (``[tool.importlinter]``): the core
imports nothing of mcpsniff outside itself and nothing of asyncio, aiohttp or
mitmproxy; each layer imports only the layers below it; the stdio and HTTP
shells do not import each other; no two sibling modules import each other,
directly or around a cycle, at any depth.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: lint-imports as the interpreter running the tests would start it.
LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.argv[0] = 'lint-imports'; sys.exit(lint_imports_command())"
)


def _lint_imports(*args: str) -> subprocess.CompletedProcess[str]:
    # The worktree's mcpsniff first on the path (not an installed copy), and no
    # cache file written into the repository.
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )


def test_import_linter_is_installed() -> None:
    """The test extra brings it (pip install -e '.[test]'); without it nothing is checked."""
    done = subprocess.run(
        [sys.executable, "-c", "import importlinter"], capture_output=True, text=True
    )
    assert done.returncode == 0, f"import-linter is missing: {done.stderr.strip()[-300:]}"


def test_every_contract_of_the_architecture_is_kept() -> None:
    done = _lint_imports()
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    for contract in ("Layers", "sans-I/O", "do not import each other", "No import cycles"):
        assert contract in done.stdout, done.stdout
