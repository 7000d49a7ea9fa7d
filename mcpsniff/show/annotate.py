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
from mcpsniff.core.trace_context import TraceContext
from mcpsniff.filter import MessageView, cancelled_request_id, progress_values
from mcpsniff.filter.view import CANCELLED, PROGRESS
from mcpsniff.terminal.render import Style

INDENT = "      "


def _value(value: Any) -> str:
    """A JSON value from traffic, short and safe."""
    text = show_id(value) if isinstance(value, str | int | float | bool) or value is None else "…"
    return terminal_safe(text if len(text) <= 80 else text[:79] + "…")


def annotation_lines(view: MessageView, style: Style, verbose: int = 0) -> list[str]:
    """Extra lines for ``view``: empty for most messages."""
    trace = view.trace
    if trace is not None and not view.trace_inherited:
        return [*trace_lines(trace, style, verbose), *_lines(view, style)]
    return _lines(view, style)


def trace_lines(trace: TraceContext, style: Style, verbose: int) -> list[str]:
    """What ``show`` says about a message's ``_meta.traceparent``.

    Its trace-id's short form is on the timeline line itself (see the printer);
    here, ``-v`` gives the whole context, and a value that is not valid W3C Trace
    Context is named at any verbosity: no catalogue rule covers it, so it is no
    finding, but a tracing backend will not join such a request to its trace.
    """
    lines: list[str] = []
    if not trace.valid:
        lines.append(
            f"{INDENT}{style('warning', '⚠ traceparent is not W3C Trace Context:')} "
            f"{terminal_safe(trace.problem or '')}: {_text(trace.text)}"
        )
    elif verbose >= 1:
        sampled = "sampled" if trace.sampled else "not sampled"
        line = (
            f"{INDENT}trace {trace.trace_id} parent {trace.parent_id} "
            f"flags {trace.flags:02x} ({sampled})"
        )
        if trace.version != "00":
            line += f" version {trace.version}"
        if trace.tracestate is not None:
            line += f" tracestate {_text(trace.tracestate)}"
        lines.append(style("dim", line))
    if trace.valid and trace.tracestate_problem is not None:
        lines.append(
            f"{INDENT}{style('warning', '⚠ tracestate:')} {terminal_safe(trace.tracestate_problem)}"
        )
    return lines


def _text(text: str) -> str:
    """A traffic string quoted, escaped and cut to one line's worth."""
    shown = text if len(text) <= 120 else text[:119] + "…"
    return terminal_safe(show_id(shown))


def _lines(view: MessageView, style: Style) -> list[str]:
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
