"""The guard's pure parts: definition fingerprints and their diff, the hidden-instruction scanner.

Pure like the rest of ``core/`` (docs/architecture.md, invariant 3): the rules of
``core/rules/guard.py`` call them live and in ``check``; the trace-wide guard
(``mcpsniff/guard/``: history, lock file, policy gates, token cost) builds on them.
"""
