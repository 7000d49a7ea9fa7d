"""``show --format json``: one JSON object per message or event, for scripts.

The output is valid JSON Lines and still safe on a terminal: the C1 controls,
DEL and the bidirectional marks that JSON allows raw inside strings are
written as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from mcpsniff.core.error_layers import TOOL_ERROR, error_layer
from mcpsniff.core.model import ERROR
from mcpsniff.filter import MessageView, cancelled_request_id, progress_values
from mcpsniff.filter.view import CANCELLED, PROGRESS
from mcpsniff.terminal.render import finding_json
from mcpsniff.terminal.safe_output import terminal_json_line


def _add_set(obj: dict[str, Any], members: Iterable[tuple[str, Any]]) -> None:
    """Add each (key, value) of ``members`` to ``obj`` whose value is not None."""
    for key, value in members:
        if value is not None:
            obj[key] = value


def view_json(view: MessageView, raw: bool = False) -> dict[str, Any]:
    """The object for one view; ``raw`` adds the frame's bytes (``raw`` or ``raw_b64``)."""
    obj: dict[str, Any] = {"session": view.session, "seq": view.seq, "t": view.t, "kind": view.kind}
    if view.event is not None:
        obj["event"] = view.event.event
        obj["data"] = view.event.data
    if view.direction is not None:
        obj["dir"] = view.direction
    if view.index is not None:
        obj["index"] = view.index
    if view.has_id:
        obj["id"] = view.id
    _add_set(
        obj,
        (
            ("method", view.method),
            ("tool", view.tool),
            ("target", view.target),
            ("error_code", view.error_code),
            ("latency_ms", view.latency_ms),
        ),
    )
    message = view.message
    if message is not None:
        _add_set(obj, (("answers", message.answers), ("note", message.note)))
    if view.is_error:
        obj["is_error"] = True
        obj["error_layer"] = TOOL_ERROR.as_json()
    elif view.kind == ERROR:
        obj["error_layer"] = error_layer(view.error_code).as_json()
    trace = view.trace
    if trace is not None:
        if view.trace_inherited:
            if trace.trace_id is not None:
                obj["trace_id"] = trace.trace_id  # the request's, for grouping by trace
        else:
            obj["trace"] = trace.as_json()
    if view.method == CANCELLED and view.kind == "notification":
        present, request_id = cancelled_request_id(view)
        if present:
            obj["request_id"] = request_id
        if view.cancellation is not None:
            c = view.cancellation
            obj["cancelled"] = {
                "request_seq": c.request_seq,
                "method": c.method,
                "tool": c.tool,
                "after_s": c.after_s,
                "answered": c.answered,
            }
    if view.method == PROGRESS and view.kind == "notification":
        obj["progress"] = progress_values(view)
    obj["findings"] = [finding_json(f) for f in view.findings]
    if view.frame is not None:
        obj["body"] = view.body
        if raw:
            try:
                obj["raw"] = view.frame.raw.decode("utf-8")
            except UnicodeDecodeError:
                obj["raw_b64"] = base64.b64encode(view.frame.raw).decode("ascii")
    return obj


def dumps_line(obj: dict[str, Any]) -> str:
    """One JSON line, exact for big integers, terminal-safe."""
    return terminal_json_line(obj)  # exact big integers; NaN as null
