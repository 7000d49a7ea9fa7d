"""Readable output of ``replay drive``: one block per differing response, then the verdict.

Every string in it may come from traffic or a trace (method names, tool
names, values, stderr lines), so every line goes through ``terminal_safe``.
"""

from __future__ import annotations

from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.replay.difftext import difference_lines, show_value
from mcpsniff.replay.drive import DriveResult, Mismatch

#: Requests named under one "not compared" reason; the rest are counted.
MAX_LISTED = 5


def request_label(
    method: str, target: str | None, request_id: Any, session: str | None, seq: int | None = None
) -> str:
    """``tools/call tool 'echo' (request id 5, trace seq 12)``, and the session if several."""
    what = method
    if target:
        label = "tool" if method == "tools/call" else "target"
        what += f" {label} {target!r}"
    where = f"request id {show_value(request_id)}"
    if seq is not None:
        where += f", trace seq {seq}"
    if session:
        where += f", session {session}"
    return f"{what} ({where})"


def mismatch_lines(mismatch: Mismatch) -> list[str]:
    """The lines describing one mismatch: what was asked, then each differing path."""
    head = request_label(
        mismatch.method, mismatch.target, mismatch.request_id, mismatch.session, mismatch.seq
    )
    if mismatch.problem:
        return [f"{head}: {mismatch.problem}"]
    lines = [f"{head}: {len(mismatch.differences)} difference(s)"]
    return lines + difference_lines(mismatch.differences)


def result_lines(result: DriveResult) -> list[str]:
    """The whole report, ending in a one-line verdict that counts against the recording."""
    lines: list[str] = []
    for mismatch in result.mismatches:
        lines.extend(mismatch_lines(mismatch))
    by_reason: dict[str, list[Mismatch]] = {}
    for missing in result.not_compared:
        by_reason.setdefault(missing.problem or "no live response", []).append(missing)
    for end in result.server_ends:
        # One message per server that went away: how, its last words, what it left.
        missing = by_reason.pop(end.reason, [])
        lines.append(
            f"{end.reason} before the drive ended; {len(missing)} recorded response(s) not compared"
        )
        if end.stderr:
            lines.append("  its last stderr lines:")
            lines.extend(f"    {line}" for line in end.stderr)
        lines.extend(_listed(missing))
    for reason, missing in by_reason.items():
        lines.append(f"{len(missing)} response(s) not compared: {reason}:")
        lines.extend(_listed(missing))
    for method in result.unanswered_server_requests:
        lines.append(f"the live server sent {method}, which the recording never answered")
    lines.append(verdict(result))
    return [terminal_safe(line) for line in lines]


def _listed(missing: list[Mismatch]) -> list[str]:
    """The requests left without a comparison, the first MAX_LISTED by name."""
    lines = [
        "  " + request_label(m.method, m.target, m.request_id, m.session, m.seq)
        for m in missing[:MAX_LISTED]
    ]
    if len(missing) > MAX_LISTED:
        lines.append(f"  ... and {len(missing) - MAX_LISTED} more")
    return lines


def verdict(result: DriveResult) -> str:
    """One line: how many recorded responses were compared, and how many matched."""
    total = result.recorded
    if total == 0:
        return "nothing to compare: the recording holds no response to a client request"
    if result.ok:
        return f"all {total} recorded response(s) compared; all match the recording"
    matched = result.compared - len(result.mismatches)
    parts = [f"{result.compared} of {total} recorded response(s) compared"]
    parts.append(f"{len(result.mismatches)} differ")
    if result.not_compared:
        parts.append(f"{len(result.not_compared)} not compared")
    parts.append(f"{matched} match")
    return ", ".join(parts)
