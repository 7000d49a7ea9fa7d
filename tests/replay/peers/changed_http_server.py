"""``sdk2_http_server.py`` with one tool's output changed, for ``replay drive --url``.

Run it with the SDK 2.x venv::

    .peers/sdk2/bin/python tests/replay/peers/changed_http_server.py PORT

It serves ``http://127.0.0.1:PORT/mcp`` exactly as ``tests/e2e/peers/sdk2_http_server.py``
does, but the weather in Chicago is drier (humidity 50 instead of 82), so
``get-structured-content`` answers differently from a recording of the original.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "e2e" / "peers"))

import sdk2_http_server  # found through the path set just above
import sdk2_server

if __name__ == "__main__":
    sdk2_server._WEATHER["Chicago"]["humidity"] = 50
    sdk2_http_server.main()
