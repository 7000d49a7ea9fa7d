"""Readable output of ``replay drive``: one block per mismatching response."""

from __future__ import annotations

import json
from typing import Any

from mcpsniff.replay.compare import format_path
from mcpsniff.replay.drive import DriveResult, Mismatch

#: Values longer than this are shortened in the diff; the traces hold them whole.
MAX_VALUE = 200


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def mismatch_lines(mismatch: Mismatch) -> list[str]:
    """The lines describing one mismatch: what was asked, then each differing path."""
    what = mismatch.method
    if mismatch.target:
        label = "tool" if mismatch.method == "tools/call" else "target"
        what += f" {label} {mismatch.target!r}"
    head = f"{what} (request id {json.dumps(mismatch.request_id)})"
    if mismatch.problem:
        return [f"{head}: {mismatch.problem}"]
    lines = [f"{head}: {len(mismatch.differences)} difference(s)"]
    for d in mismatch.differences:
        lines.append(f"  {format_path(d.path)}")
        if d.change == "missing":
            lines.append(f"    recorded: {_show(d.recorded)}")
            lines.append("    live:     (absent)")
        elif d.change == "added":
            lines.append("    recorded: (absent)")
            lines.append(f"    live:     {_show(d.live)}")
        else:
            lines.append(f"    recorded: {_show(d.recorded)}")
            lines.append(f"    live:     {_show(d.live)}")
    return lines


def result_lines(result: DriveResult) -> list[str]:
    """The whole report, ending in a one-line verdict."""
    lines: list[str] = []
    for mismatch in result.mismatches:
        lines.extend(mismatch_lines(mismatch))
    for method in result.unanswered_server_requests:
        lines.append(f"the live server sent {method}, which the recording never answered")
    different = len(result.mismatches)
    verdict = (
        f"{different} of {result.compared} response(s) differ from the recording"
        if different
        else f"all {result.compared} response(s) match the recording"
    )
    lines.append(verdict)
    return lines
