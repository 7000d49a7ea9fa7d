"""The ``mcpsniff`` command line: one module per command, each parsing its options only.

``main`` (the click group, built in ``main.py``) is what the ``mcpsniff`` console
script and ``python -m mcpsniff`` run: ``pyproject.toml`` names it ``mcpsniff.cli:main``.
"""

from mcpsniff.cli.main import main

__all__ = ["main"]
