"""``python -m mcpsniff``: the same as the ``mcpsniff`` command."""

from mcpsniff.cli import main

main()
