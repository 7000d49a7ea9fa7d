"""The one text form of a JSON diff, shared by ``replay drive`` and ``replay serve``.

``drive`` shows what the live server answered against the recording;
``serve`` shows what a client asked against the nearest recorded request.
Callers pass the lines through ``terminal_safe`` before they reach a terminal.
"""

from __future__ import annotations

import json
from typing import Any

from mcpsniff.replay.compare import Difference, format_path

#: Values longer than this are shortened in the diff; the traces hold them whole.
MAX_VALUE = 200


def show_value(value: Any) -> str:
    """A JSON value on one line, shortened past MAX_VALUE characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError, TypeError):
        text = repr(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def difference_lines(
    differences: list[Difference], old: str = "recorded", new: str = "live"
) -> list[str]:
    """Each differing JSON path, with the recorded and the other value under it."""
    width = max(len(old), len(new)) + 1
    lines: list[str] = []
    for d in differences:
        lines.append(f"  {format_path(d.path)}")
        before = "(absent)" if d.change == "added" else show_value(d.recorded)
        after = "(absent)" if d.change == "missing" else show_value(d.live)
        lines.append(f"    {(old + ':').ljust(width)} {before}")
        lines.append(f"    {(new + ':').ljust(width)} {after}")
    return lines
