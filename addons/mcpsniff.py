"""Load mcpsniff's mitmproxy addon: ``mitmdump -s addons/mcpsniff.py --set mcpsniff_trace=FILE``.

The addon itself is ``mcpsniff.mitm.addon.McpSniff`` (its docstring describes
what it records and its options). This file only finds the mcpsniff package
from mitmproxy's Python and hands mitmproxy the addon. Should the package be
missing, the addon stays inert: its options are still known (so a command
line that sets them stays valid), the event log says once, in one line, why
nothing is recorded, and every flow passes untouched.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _import_package() -> str | None:
    """Import the mcpsniff package; return a clear error message if it cannot be found.

    mitmproxy puts this file's folder first on sys.path, where this very file
    would shadow the package of the same name: look past it. A checkout's
    package, next to this folder, is the fallback when none is installed.
    """
    here = Path(__file__).resolve().parent
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    shadow = sys.modules.get("mcpsniff")
    if shadow is not None and not hasattr(shadow, "__path__"):
        del sys.modules["mcpsniff"]
    try:
        try:
            import mcpsniff.mitm.addon
        except ImportError:
            sys.path.insert(0, str(here.parent))
            import mcpsniff.mitm.addon  # noqa: F401
    except ImportError as exc:
        return (
            f"mcpsniff is not importable from mitmproxy's Python ({sys.executable}): {exc}. "
            "Install it into that environment (pip install mcpsniff) and load the addon again."
        )
    finally:
        sys.path[:] = saved
    return None


#: The inert addon's options: name, type, default (``McpSniff.load`` describes them).
INERT_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("mcpsniff_trace", str, ""),
    ("mcpsniff_show", bool, False),
    ("mcpsniff_redact", bool, True),
    ("mcpsniff_filter", str, ""),
    ("mcpsniff_hold", str, "auto"),
    ("mcpsniff_otlp", str, ""),
    ("mcpsniff_fault", Sequence[str], []),
    ("mcpsniff_faults", str, ""),
)


class Inert:
    """The addon without the mcpsniff package: knows its options, says why it does nothing."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def load(self, loader: Any) -> None:
        for name, kind, default in INERT_OPTIONS:
            loader.add_option(name, kind, default, "Unused: mcpsniff is not importable.")
        # Logged during startup, an error makes mitmdump exit, with this one line.
        logging.getLogger("mcpsniff").error(self.reason)


IMPORT_ERROR = _import_package()
if IMPORT_ERROR is None:
    from mcpsniff.mitm.addon import McpSniff

    addons: list[Any] = [McpSniff()]
else:
    addons = [Inert(IMPORT_ERROR)]
