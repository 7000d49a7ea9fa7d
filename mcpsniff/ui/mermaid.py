"""``mcpsniff report --format mermaid``: a session's sequence diagram as Mermaid text.

GitHub renders a ```` ```mermaid ```` block in Markdown, so the diagram can go
straight into an issue. Arrows follow Mermaid's sequence-diagram syntax:
``->>`` a request, ``-->>`` its response, ``--x`` an error response, ``-)``
a notification, ``-x`` bytes that are no valid message; a batch is a shaded
``rect`` holding its elements, and a finding is a note beside its arrow.

Every string from traffic is reduced to a safe alphabet, anything else written
as a Mermaid entity code (``#60;`` for ``<``): Mermaid reads ``;``, ``#``,
``:``-less lines and HTML in message text, and a method name or tool name
must not be able to end a line, open a block or inject markup.
"""

from __future__ import annotations

import re
from typing import Any

from mcpsniff.ui.model import SessionModel

#: Messages drawn when no window is given.
DEFAULT_WINDOW = 200
#: Characters of one label at most.
LABEL_LIMIT = 80
_SAFE = re.compile(r"[A-Za-z0-9 ._/@=(),+*'\[\]-]")
ARROWS = {
    "request": "->>",
    "response": "-->>",
    "error": "--x",
    "notification": "-)",
    "batch": "->>",
    "invalid": "-x",
    "unparseable": "-x",
}


def mermaid_text(value: Any, limit: int = LABEL_LIMIT) -> str:
    """``value`` as Mermaid message text: safe characters kept, the rest as ``#NNN;``."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "".join(ch if _SAFE.fullmatch(ch) else f"#{ord(ch)};" for ch in text)


def _label(row: dict[str, Any]) -> str:
    parts: list[str] = []
    kind = row["kind"]
    if kind == "batch":
        parts.append(f"batch of {row.get('batch', 0)}")
    elif kind in ("unparseable", "invalid"):
        parts.append(kind)
    if row.get("method"):
        parts.append(row["method"])
    if row.get("tool"):
        parts.append(row["tool"])
    if row.get("id") is not None:
        parts.append(f"id={row['id']}")
    if row.get("code") is not None:
        parts.append(f"error {row['code']}")
    if row.get("isError"):
        parts.append("isError")
    if row.get("latency") is not None:
        parts.append(f"({row['latency']:.1f} ms)")
    return mermaid_text(" ".join(parts) or kind, LABEL_LIMIT)


def session_diagram(
    session: SessionModel, start: int | None = None, end: int | None = None
) -> tuple[str, int]:
    """The Mermaid text of ``session`` between sequence numbers ``start`` and ``end``.

    Without a window the first ``DEFAULT_WINDOW`` messages are drawn. Returns the
    text and how many messages were left out.
    """
    findings_of: dict[int, list[dict[str, Any]]] = {}
    for finding in session.findings:
        for n in finding["rows"]:
            findings_of.setdefault(n, []).append(finding)
    client = mermaid_text(session.client or "client", 40)
    server = mermaid_text(session.name or "server", 40)
    lines = [
        "sequenceDiagram",
        f"    participant C as Client {client}",
        f"    participant S as Server {server}",
    ]
    messages = [r for r in session.all_rows() if r["kind"] != "event"]
    window = [
        r
        for r in messages
        if (start is None or r["seq"] >= start) and (end is None or r["seq"] <= end)
    ]
    if start is None and end is None:
        window = window[:DEFAULT_WINDOW]
    left_out = len(messages) - len(window)
    if window and window[0] is not messages[0]:
        lines.append(f"    Note over C,S: … {messages.index(window[0])} earlier messages")
    open_batch: int | None = None
    drawn: set[int] = set()
    for row in window:
        parent = row.get("parent")
        if open_batch is not None and parent != open_batch:
            lines.append("    end")
            open_batch = None
        if row["kind"] == "batch":
            lines.append("    rect rgba(128, 128, 128, 0.12)")
            open_batch = row["n"]
        sender, receiver = ("S", "C") if row.get("dir") == "s2c" else ("C", "S")
        arrow = ARROWS.get(row["kind"], "->>")
        if row.get("isError"):
            arrow = "--x"
        lines.append(f"    {sender}{arrow}{receiver}: {_label(row)}")
        for finding in findings_of.get(row["n"], ()):
            if id(finding) in drawn:
                continue
            drawn.add(id(finding))
            side = "right of S" if sender == "S" else "left of C"
            text = mermaid_text(f"{finding['severity']} {finding['rule']}", 60)
            lines.append(f"    Note {side}: {text}")
    if open_batch is not None:
        lines.append("    end")
    if window and window[-1] is not messages[-1]:
        after = len(messages) - 1 - messages.index(window[-1])
        lines.append(f"    Note over C,S: … {after} more messages (use --from SEQ --to SEQ)")
    return "\n".join(lines) + "\n", left_out
