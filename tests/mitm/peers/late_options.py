"""A mitmproxy addon for the tests: changes options once mitmproxy is running.

The JSON object in ``MCPSNIFF_TEST_LATE_OPTIONS`` is applied with
``ctx.options.update`` 0.3 s after the running hook, as a mitmweb or console user
changes options at run time (a ``scripts`` list is appended to the scripts
already loaded). The outcome is logged: ``late options: applied`` or
``late options: rejected: MESSAGE``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any

from mitmproxy import ctx, exceptions

log = logging.getLogger("late_options")


class LateOptions:
    def running(self) -> None:
        spec = os.environ.get("MCPSNIFF_TEST_LATE_OPTIONS")
        if spec:
            asyncio.get_running_loop().call_later(0.3, self.apply, json.loads(spec))

    def apply(self, updates: dict[str, Any]) -> None:
        if "scripts" in updates:
            updates["scripts"] = [*ctx.options.scripts, *updates["scripts"]]
        try:
            ctx.options.update(**updates)
        except exceptions.OptionsError as exc:
            log.info(f"late options: rejected: {exc}")
        else:
            log.info("late options: applied")


addons = [LateOptions()]
