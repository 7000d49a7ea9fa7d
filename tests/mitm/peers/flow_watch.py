"""A mitmproxy addon for the tests: writes what the addons after mcpsniff see of each flow.

Loaded after ``addons/mcpsniff.py``, it appends one JSON line per ``response``
and per ``update`` hook to the file named by ``MCPSNIFF_TEST_FLOW_WATCH``:
the hook, the flow's path and its comment at that moment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from mitmproxy import flow, http


class FlowWatch:
    def __init__(self) -> None:
        self.path = os.environ["MCPSNIFF_TEST_FLOW_WATCH"]

    def _write(self, hook: str, seen: http.HTTPFlow) -> None:
        line = {"hook": hook, "path": seen.request.path, "comment": seen.comment}
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def response(self, seen: http.HTTPFlow) -> None:
        self._write("response", seen)

    def update(self, flows: Sequence[flow.Flow]) -> None:
        for seen in flows:
            if isinstance(seen, http.HTTPFlow):
                self._write("update", seen)


addons = [FlowWatch()]
