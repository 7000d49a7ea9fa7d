"""The data files beside ``mcpsniff.core``'s modules (the rule catalogue, spec pages).

Read through this package's own loader rather than ``importlib.resources``:
importing that pulls in ``tempfile``, ``shutil``, ``zipfile`` and the
compressors (about 8 ms), which every ``check`` paid at start-up for a few
small JSON files. The loader reads a file beside the module from a directory
or a zip archive alike (``get_data``, what ``pkgutil.get_data`` uses).
"""

from __future__ import annotations

import os


def read_text(name: str) -> str:
    """The UTF-8 text of data file ``name`` of ``mcpsniff.core``."""
    path = os.path.join(os.path.dirname(__file__), name)
    loader = __spec__.loader if __spec__ is not None else None
    get_data = getattr(loader, "get_data", None)
    if get_data is None:  # a loader without it: the file system
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    data: bytes = get_data(path)
    return data.decode("utf-8")
