"""``mcpsniff report``: one self-contained HTML file with the UI's views of a trace.

The file holds the page's script, styles and the trace's data inline and loads
nothing (it works from ``file://`` and offline, for a bug report or a CI
artifact). Its Content-Security-Policy admits exactly its own inline script
and style, by hash, so a string from traffic that somehow became markup still
could not run. The data sits in a ``<script type="application/json">``
element with every ``<``, ``>`` and ``&`` escaped, so no traffic string can
close that element. A redacted trace stays redacted: the report shows what
the trace holds, nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpsniff.core.error_layers import LAYER_TITLES
from mcpsniff.filter import Filter
from mcpsniff.stats.compute import TraceStats
from mcpsniff.trace.codec import TraceError
from mcpsniff.ui.assets import SCRIPTS, static_text
from mcpsniff.ui.details import json_safe, message_detail
from mcpsniff.ui.follow import OffsetTail
from mcpsniff.ui.model import SessionModel, TraceModel, bounded
from mcpsniff.ui.queries import context_costs, session_views

#: Rows a report holds at most (over all its sessions); the rest is cut, and the page says so.
REPORT_ROWS = 50_000
#: Raw bytes a report keeps per message (the live UI shows up to 1 MiB).
REPORT_RAW = 64 << 10
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
_LINE_SEPARATORS = {0x2028: "\\u2028", 0x2029: "\\u2029"}


@dataclass
class ReportResult:
    """What was written: the sessions and rows it holds, and what was cut."""

    sessions: int
    rows: int
    cut: int


def load_model(path: Path) -> TraceModel:
    """The whole trace at ``path`` as the views see it. Raises ``TraceError``."""
    tail = OffsetTail(path)
    model = TraceModel(path, "0")
    while True:
        items, more = tail.poll()
        for offset, item in items:
            model.feed(offset, item)
        if not more:
            break
    model.flush()
    if tail.first_header is None:
        # The header is judged when its newline comes; a first line that never ends is none.
        what = "it is empty" if tail.consumed == 0 else "its first line never ends"
        raise TraceError(f"{path}: not an mcpsniff trace ({what})")
    return model


def report_data(path: Path, flt: Filter | None = None) -> tuple[dict[str, Any], ReportResult]:
    """The data the page needs for every session of the trace at ``path``."""
    model = load_model(path)
    # One pass over the views: which rows the filter keeps, and each session's stats.
    matching: dict[str, set[int]] = {}
    stats: dict[str, TraceStats] = {}
    for view in session_views(path):
        keep = flt is None or flt.matches(view)
        stats.setdefault(view.session, TraceStats()).add(view, keep)
        if keep and flt is not None:
            session = model.sessions.get(view.session)
            n = session.row_for(view.seq, view.index) if session is not None else None
            if n is not None:
                matching.setdefault(view.session, set()).add(n)
    sessions = []
    data: dict[str, Any] = {}
    costs = context_costs(path, [s.to_json() for s in stats.values()])
    budget = REPORT_ROWS
    cut = 0
    for session in model.sessions.values():
        if flt is not None:
            wanted = sorted(matching.get(session.key, ()))
            if not wanted:
                continue
        else:
            wanted = list(range(len(session.rows)))
        shown = wanted[: max(0, budget)]
        cut += len(wanted) - len(shown)
        budget -= len(shown)
        summary = session.summary()
        summary["file"] = bounded(path.name)
        summary["rows"] = len(shown)
        summary["cut"] = len(wanted) - len(shown)
        figures = json_safe(stats.get(session.key, TraceStats()).to_json())
        figures["layer_titles"] = dict(LAYER_TITLES)
        if session.key in costs:
            figures["context_cost"] = json_safe(costs[session.key])
        data[session.id] = _session_data(path, session, shown, flt is not None, figures)
        sessions.append(summary)
    label = f"report · {bounded(path.name)}"
    if flt is not None:
        label += f" · filter: {bounded(flt.expression, 2000)}"
    if cut:
        label += f" · {cut} rows cut (use --filter)"
    page = {"label": label, "sessions": sessions, "data": data}
    return page, ReportResult(len(sessions), REPORT_ROWS - budget, cut)


def _session_data(
    path: Path, session: SessionModel, keep: list[int], filtered: bool, stats: dict[str, Any]
) -> dict[str, Any]:
    """Rows (renumbered), findings and details of the kept rows of ``session``."""
    new = {old: i for i, old in enumerate(keep)}
    rows = []
    details = {}
    for old in keep:
        row = session.row(old)
        row["n"] = new[old]
        for link in ("pair", "parent", "cancels"):
            if link in row:
                if row[link] in new:
                    row[link] = new[row[link]]
                else:
                    del row[link]
        rows.append(row)
        detail = message_detail(path, session, old, raw_limit=REPORT_RAW)
        if detail is not None:
            detail["n"] = new[old]
            details[new[old]] = detail
    findings = []
    for finding in session.findings:
        linked = [new[r] for r in finding["rows"] if r in new]
        if filtered and not linked:
            continue
        entry = dict(finding)
        entry["rows"] = linked
        entry["n"] = len(findings)
        findings.append(entry)
    return {"rows": rows, "findings": findings, "details": details, "stats": stats}


def _script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>``, ``&`` in it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_JSON_ESCAPES).translate(_LINE_SEPARATORS)


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def render_html(page: dict[str, Any]) -> str:
    """The report page: the UI's HTML with its assets and ``page`` inline."""
    css = static_text("app.css")
    scripts = [static_text(name) for name in SCRIPTS]
    for script in scripts:
        # An inline script ends at the first "</script" whatever its context.
        if "</script" in script.lower():
            raise ValueError("a page script contains '</script'")
    csp = (
        "default-src 'none'; "
        f"script-src {' '.join(_sha256(s) for s in scripts)}; "
        f"style-src {_sha256(css)}; img-src data:; base-uri 'none'; form-action 'none'"
    )
    template = static_text("index.html")
    head = (
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">\n'
        f"<style>{css}</style>\n" + "".join(f"<script>{s}</script>\n" for s in scripts)
    )
    out = template.replace('<link rel="stylesheet" href="/static/app.css">\n', "")
    for name in SCRIPTS:
        out = out.replace(f'<script src="/static/{name}" defer></script>\n', "")
    out = out.replace("<title>mcpsniff</title>", "<title>mcpsniff report</title>\n" + head, 1)
    data = f'<script type="application/json" id="mcpsniff-data">{_script_json(page)}</script>'
    return out.replace("<!--PAGE-->", data, 1)


def write_report(path: Path, out: Path, flt: Filter | None = None) -> ReportResult:
    """Write the report of the trace at ``path`` to ``out`` (mode 0600: it holds traffic)."""
    page, result = report_data(path, flt)
    text = render_html(page)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return result
