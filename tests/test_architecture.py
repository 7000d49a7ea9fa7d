"""The layers of docs/architecture.md hold: ``lint-imports`` keeps every contract.

The contracts are in ``pyproject.toml`` (``[tool.importlinter]``): the core
imports nothing of mcpsniff outside itself and nothing of asyncio, aiohttp or
mitmproxy; each layer imports only the layers below it; the stdio and HTTP
shells do not import each other; no two sibling modules import each other,
directly or around a cycle, at any depth. And the tests mirror the package
tree file for file, but for the cross-cutting suites named in ``CROSS_CUTTING``.
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


#: Suites that cross modules on purpose, so no single module is theirs:
#: ``e2e/`` runs whole commands as real processes with real peers, sockets and
#: browsers; ``hostile/`` feeds hostile traffic and traces through several layers.
CROSS_CUTTING = ("e2e", "hostile")


def _module_of(test_file: Path) -> Path:
    """The module ``tests/a/test_b.py`` tests: ``mcpsniff/a/b.py`` (``addons/b.py`` for addons)."""
    relative = test_file.relative_to(ROOT / "tests")
    name = relative.name.removeprefix("test_")
    if relative.parts[0] == "addons":
        return ROOT / relative.parent / name
    return ROOT / "mcpsniff" / relative.parent / name


def test_tests_mirror_the_package_file_for_file() -> None:
    """docs/contributing.md: ``mcpsniff/a/b.py`` is tested in ``tests/a/test_b.py``."""
    orphans = []
    for test_file in sorted((ROOT / "tests").rglob("test_*.py")):
        relative = test_file.relative_to(ROOT / "tests")
        if relative.parts[0] in CROSS_CUTTING or relative == Path("test_architecture.py"):
            continue
        module = _module_of(test_file)
        if not module.exists() and not (module.with_suffix("") / "__init__.py").exists():
            orphans.append(str(relative))
    assert orphans == [], f"test files with no module of the same name: {orphans}"
