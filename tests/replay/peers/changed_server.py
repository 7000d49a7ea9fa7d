"""The SDK 2.x end-to-end server with one tool's output changed, for ``replay drive``.

Run it with the SDK 2.x venv::

    .peers/sdk2/bin/python tests/replay/peers/changed_server.py

It is ``tests/e2e/peers/sdk2_server.py`` in every way but one: the weather in
Chicago is drier (humidity 50 instead of 82), so ``get-structured-content``
answers differently from a recording of the original server.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "e2e" / "peers"))

import sdk2_server  # found through the path set just above

if __name__ == "__main__":
    sdk2_server._WEATHER["Chicago"]["humidity"] = 50
    sdk2_server.server.run("stdio")
