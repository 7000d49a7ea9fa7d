"""The lines ``show`` adds under a message: tool errors, cancellations, progress.

MCP puts these where a one-line timeline does not look: a failing tool answers
with a *result* whose ``isError`` is true (server/tools, "Error Handling"); a
cancellation names its request only in ``params.requestId``
(basic/utilities/cancellation); progress values travel in
``notifications/progress`` params (basic/utilities/progress). A request that
the client cancels after waiting N seconds without an answer (a stuck call)
gets an info line, since nothing else in the trace says so.
"""

from __future__ import annotations

from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.ids import show_id
from mcpsniff.filter import MessageView, cancelled_request_id, progress_values
from mcpsniff.filter.view import CANCELLED, PROGRESS
from mcpsniff.render import Style

INDENT = "      "


def _value(value: Any) -> str:
    """A JSON value from traffic, short and safe."""
    text = show_id(value) if isinstance(value, str | int | float | bool) or value is None else "…"
    return terminal_safe(text if len(text) <= 80 else text[:79] + "…")


def annotation_lines(view: MessageView, style: Style) -> list[str]:
    """Extra lines for ``view``: empty for most messages."""
    if view.is_error:
        return [f"{INDENT}{style('error', '✖ tool error')} (result with isError: true)"]
    if view.method == CANCELLED and view.kind == "notification":
        return _cancellation_lines(view, style)
    if view.method == PROGRESS and view.kind == "notification":
        values = progress_values(view)
        if not values:
            return []
        progress = _value(values.get("progress"))
        if "total" in values:
            progress += f"/{_value(values['total'])}"
        line = f"{INDENT}progress {progress}"
        if "progressToken" in values:
            line += f" token={_value(values['progressToken'])}"
        if "message" in values:
            line += f" {_value(values['message'])}"
        return [style("dim", line)]
    return []


def _cancellation_lines(view: MessageView, style: Style) -> list[str]:
    present, request_id = cancelled_request_id(view)
    if not present:
        return [f"{INDENT}{style('warning', 'cancels no requestId')}"]
    line = f"{INDENT}cancels requestId={_value(request_id)}"
    cancellation = view.cancellation
    if cancellation is not None:
        what = terminal_safe(cancellation.method or "?")
        if cancellation.tool:
            what += f" {terminal_safe(cancellation.tool)}"
        line += f" ({what}, seq {cancellation.request_seq})"
    lines = [line]
    if cancellation is not None and not cancellation.answered:
        lines.append(
            f"{INDENT}{style('info', 'ℹ')} request {_value(request_id)} was cancelled after "
            f"{cancellation.after_s:.2f} s without an answer"
        )
    return lines
