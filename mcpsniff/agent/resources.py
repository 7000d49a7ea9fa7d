"""The resources ``mcpsniff mcp`` offers: each trace and each session, as JSON.

``mcpsniff://trace/{trace}`` is a trace file's sessions (the ``list_sessions``
entries of that file) and ``mcpsniff://session/{session}`` a session's summary
(``session_summary``); ``resources/list`` lists both kinds, newest first, paged
with an opaque cursor. Their text is quoted as untrusted data, like tool output.
"""

from __future__ import annotations

from typing import Any

from mcpsniff.agent.access import Refused, TraceAccess
from mcpsniff.agent.tools import session_summary
from mcpsniff.agent.untrusted import quoted, visible_json

TRACE_PREFIX = "mcpsniff://trace/"
SESSION_PREFIX = "mcpsniff://session/"
#: Resources per ``resources/list`` page.
PAGE = 100

TEMPLATES = [
    {
        "uriTemplate": TRACE_PREFIX + "{trace}",
        "name": "trace",
        "title": "A recorded trace file",
        "description": "The sessions of one trace file (untrusted recorded data, as JSON).",
        "mimeType": "text/plain",
    },
    {
        "uriTemplate": SESSION_PREFIX + "{session}",
        "name": "session",
        "title": "A recorded session",
        "description": "A session's identity, timing, counts and findings (untrusted data).",
        "mimeType": "text/plain",
    },
]


def all_resources(access: TraceAccess) -> list[dict[str, Any]]:
    """Every trace and session resource, traces first, newest first.

    A listing is not quoted as data, so it names resources by id only: a server's
    name is traffic (it can say anything), and only ``resources/read`` returns it.
    The file's path, chosen on this machine, is shown as a JSON string.
    """
    sessions = access.library.sessions()
    traces: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for entry in sessions:
        if entry["trace"] not in traces:
            traces[entry["trace"]] = {
                "uri": TRACE_PREFIX + entry["trace"],
                "name": f"trace {entry['trace']}",
                "description": f"the sessions of the trace file {visible_json(entry['path'])}",
                "mimeType": "text/plain",
            }
        out.append(
            {
                "uri": SESSION_PREFIX + entry["id"],
                "name": f"session {entry['id']}",
                "description": "a recorded session (untrusted data)",
                "mimeType": "text/plain",
            }
        )
    return list(traces.values()) + out


def list_page(access: TraceAccess, cursor: object) -> dict[str, Any]:
    """One page of ``resources/list``; raises ``ValueError`` for a cursor not ours."""
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str) or not cursor.isdigit() or len(cursor) > 12:
            raise ValueError("invalid cursor")
        start = int(cursor)
    items = all_resources(access)
    page: dict[str, Any] = {"resources": items[start : start + PAGE]}
    if start + PAGE < len(items):
        page["nextCursor"] = str(start + PAGE)
    return page


def read(access: TraceAccess, uri: str) -> dict[str, Any]:
    """``resources/read`` of one of our URIs. Raises ``Refused`` for any other."""
    if uri.startswith(SESSION_PREFIX):
        value = session_summary(access, {"session": uri[len(SESSION_PREFIX) :]})
    elif uri.startswith(TRACE_PREFIX):
        trace = uri[len(TRACE_PREFIX) :]
        sessions = [s for s in access.library.sessions() if s["trace"] == trace]
        if not sessions:
            raise Refused(f"no trace {trace[:100]!r}")
        value = {"file": sessions[0]["path"], "sessions": sessions[:500]}
    else:
        raise Refused("not an mcpsniff resource (mcpsniff://trace/... or mcpsniff://session/...)")
    return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": quoted(value)}]}
