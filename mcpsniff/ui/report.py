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
import heapq
import html
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from mcpsniff.core.error_layers import LAYER_TITLES
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.filter import Filter, MessageView
from mcpsniff.filter.view import FindingsIndex
from mcpsniff.stats.compute import TraceStats
from mcpsniff.trace.codec import TraceError
from mcpsniff.ui.assets import SCRIPTS, static_text
from mcpsniff.ui.collector import collector_paused
from mcpsniff.ui.details import BODY_LIMIT, json_safe, record_detail
from mcpsniff.ui.follow import LINE_LIMIT, Header, OffsetTail, decode_line, trace_records
from mcpsniff.ui.model import SESSION_LIST_LIMIT, SessionModel, TraceModel, bounded
from mcpsniff.ui.queries import context_costs, findings_index, session_views

#: Rows a report holds at most (over all its sessions); the rest is cut, and the page says so.
REPORT_ROWS = 50_000
#: Sessions a report holds at most, the newest, as the live UI's list (the page says how many more).
REPORT_SESSIONS = SESSION_LIST_LIMIT
#: Raw bytes a report keeps per frame (the live UI shows up to 1 MiB).
REPORT_RAW = 64 << 10
#: Raw bytes over the whole report; past it each frame keeps only ``RAW_AFTER_BUDGET``.
REPORT_RAW_TOTAL = 32 << 20
RAW_AFTER_BUDGET = 1 << 10
#: Frame bytes whose bodies a report shows parsed; past it bodies are left out.
REPORT_BODY_TOTAL = 64 << 20
#: What JSON text may hold that a ``<script>`` element may not (or JavaScript before ES2019).
_SCRIPT_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


@dataclass
class ReportResult:
    """What was written: the sessions and rows it holds, and what was cut."""

    sessions: int
    rows: int
    cut: int
    #: Sessions left out (the oldest) past ``REPORT_SESSIONS``.
    sessions_cut: int = 0


@dataclass
class _Budget:
    """What is left of the report's bounds, spent in trace order."""

    rows: int = REPORT_ROWS
    raw: int = REPORT_RAW_TOTAL
    body: int = REPORT_BODY_TOTAL


def load_model(
    path: Path,
    keep: set[str] | None = None,
    findings: FindingsIndex | None = None,
    on_view: Callable[[MessageView], None] | None = None,
) -> TraceModel:
    """The trace at ``path`` as the views see it (only sessions ``keep``, when given).

    ``findings`` and ``on_view`` go to the model (``TraceModel``). Raises ``TraceError``.
    """
    tail = OffsetTail(path)
    model = TraceModel(path, "0", findings=findings, on_view=on_view)
    while True:
        items, more = tail.poll()
        if not more:
            items.extend(tail.finish())  # read once: what a two-lane merge still holds
        for offset, item in items:
            if keep is not None and not isinstance(item, Header) and item.session not in keep:
                continue
            model.feed(offset, item)
        if not more:
            break
    model.flush()
    if tail.first_header is None:
        # The header is judged when its newline comes; a first line that never ends is none.
        what = "it is empty" if tail.consumed == 0 else "its first line never ends"
        raise TraceError(f"{path}: not an mcpsniff trace ({what})")
    return model


def _scan(path: Path, whole: bool) -> tuple[dict[str, float], FindingsIndex | None, set[str]]:
    """When each session starts (its first frame or event), the findings by (session, seq),
    and the sessions whose findings were left out.

    One pass that reads no message record (most of a trace). ``whole``: every
    session's findings are wanted (a filter judges them all), given up (None)
    once the trace holds more than ``REPORT_SESSIONS`` sessions. Otherwise
    only those of the sessions that may still be kept, the newest
    ``REPORT_SESSIONS`` by start so far, as ``_newest`` ranks them: one pushed
    out never comes back (the bar only rises), so its findings are dropped.
    """
    starts: dict[str, float] = {}
    index: FindingsIndex | None = {}
    #: The newest sessions so far, least new first: (start, -order, key).
    newest: list[tuple[float, int, str]] = []
    dropped: set[str] = set()
    #: Each session's seqs in the index, to drop its findings with it.
    named: dict[str, list[int]] = {}
    for record in trace_records(path, messages=False):
        if isinstance(record, FindingRecord):
            if index is None or record.session in dropped:
                continue
            for seq in record.seq:
                found = index.get((record.session, seq))
                if found is None:
                    index[(record.session, seq)] = found = []
                    named.setdefault(record.session, []).append(seq)
                found.append(record)
        elif isinstance(record, FrameRecord | EventRecord) and record.session not in starts:
            starts[record.session] = record.t
            if whole:
                if len(starts) > REPORT_SESSIONS:
                    index = None
                continue
            entry = (record.t or 0, -len(starts), record.session)
            if len(newest) < REPORT_SESSIONS:
                heapq.heappush(newest, entry)
                continue
            _t, _order, out = heapq.heappushpop(newest, entry)
            dropped.add(out)
            if index is not None:
                for seq in named.pop(out, ()):
                    index.pop((out, seq), None)
    return starts, index, dropped


def _newest(starts: dict[str, float], candidates: Iterable[str]) -> set[str]:
    """The newest ``REPORT_SESSIONS`` of ``candidates`` by start, as the UI's list."""
    keys = list(candidates)
    if len(keys) <= REPORT_SESSIONS:
        return set(keys)
    return set(heapq.nlargest(REPORT_SESSIONS, keys, key=lambda k: starts.get(k) or 0))


def _matching_messages(
    path: Path, flt: Filter, index: FindingsIndex | None
) -> dict[str, set[tuple[int, int | None]]]:
    """The messages ``flt`` matches, as (frame seq, batch index) per session (one pass)."""
    matching: dict[str, set[tuple[int, int | None]]] = {}
    for view in session_views(path, index=index):
        if flt.matches(view):
            matching.setdefault(view.session, set()).add((view.seq, view.index))
    return matching


def report_data(path: Path, flt: Filter | None = None) -> tuple[dict[str, Any], ReportResult]:
    """The data the page needs for the sessions of the trace at ``path`` (the newest, capped).

    Sessions are chosen before the model is built, and the model holds only
    them: 200,000 sessions modelled whole took a gigabyte. Without ``flt`` the
    trace is read in two passes, and only the second reads its message records:
    the model's, which also sums up the sessions (``stats``) from the same views
    (each pass that parses every message costs seconds on a batch of 100,000).
    """
    starts, index, dropped = _scan(path, flt is not None)
    matched: dict[str, set[tuple[int, int | None]]] = {}
    if flt is not None:
        matched = _matching_messages(path, flt, index)
    candidates = [key for key in starts if flt is None or key in matched]
    for key in matched:  # a session with no frame or event of its own (hand-cut traces)
        if key not in starts:
            candidates.append(key)
    keep = _newest(starts, candidates)
    if index is None or not keep.isdisjoint(dropped):
        index = findings_index(path, keep)
    # Every kept session's figures, as ``stats`` computes them; a view the filter
    # rejects is still seen (its answer pairs a matching request).
    stats: dict[str, TraceStats] = {key: TraceStats() for key in keep}

    def on_view(view: MessageView) -> None:
        figures = stats.get(view.session)
        if figures is not None:
            figures.add(view, flt is None or flt.matches(view))

    model = load_model(path, keep if len(keep) < len(starts) else None, index, on_view)
    chosen = [s for s in model.sessions.values() if s.key in keep]
    matching: dict[str, set[int]] = {}
    for session in chosen:
        rows = (session.row_for(seq, element) for seq, element in matched.get(session.key, ()))
        matching[session.key] = {n for n in rows if n is not None}
    if flt is not None:
        chosen = [s for s in chosen if matching[s.key]]
    sessions_cut = len(candidates) - len(keep)
    sessions = []
    data: dict[str, Any] = {}
    costs = context_costs(path, [stats[s.key].to_json() for s in chosen])
    budget = _Budget()
    cut = 0
    with open(path, "rb") as trace:
        for session in chosen:
            if flt is not None:
                wanted = sorted(matching[session.key])
            else:
                wanted = list(range(len(session.rows)))
            shown = wanted[: max(0, budget.rows)]
            cut += len(wanted) - len(shown)
            budget.rows -= len(shown)
            summary = session.summary()
            summary["file"] = bounded(path.name)
            summary["rows"] = len(shown)
            summary["cut"] = len(wanted) - len(shown)
            figures = json_safe(stats[session.key].to_json())
            figures["layer_titles"] = dict(LAYER_TITLES)
            if session.key in costs:
                figures["context_cost"] = json_safe(costs[session.key])
            filtered = flt is not None
            data[session.id] = _session_data(trace, session, shown, filtered, figures, budget)
            sessions.append(summary)
    label = f"report · {bounded(path.name)}"
    if flt is not None:
        label += f" · filter: {bounded(flt.expression, 2000)}"
    if cut:
        label += f" · {cut} rows cut (use --filter)"
    if sessions_cut:
        label += f" · the newest {len(keep)} of {len(candidates)} sessions (use --filter)"
    page = {"label": label, "sessions": sessions, "total": len(candidates), "data": data}
    result = ReportResult(len(sessions), REPORT_ROWS - budget.rows, cut, sessions_cut)
    return page, result


def _session_data(
    trace: BinaryIO,
    session: SessionModel,
    keep: list[int],
    filtered: bool,
    stats: dict[str, Any],
    budget: _Budget,
) -> dict[str, Any]:
    """Rows (renumbered), findings and details of the kept rows of ``session``.

    The rows of one frame (a batch and its elements) are consecutive and share
    its offset: the frame is read and parsed once, and its raw text is kept
    once, with the first of them; the others say ``rawOf`` that row. (Read and
    embedded once per element, a batch of 4,000 took 153 s and 1.9 GB.)
    """
    new = {old: i for i, old in enumerate(keep)}
    rows = []
    details = {}
    offset = -1
    record: Record | None = None
    first = 0
    for old in keep:
        row = session.row(old)
        row["n"] = new[old]
        for link in ("pair", "parent", "cancels"):
            if link in row:
                if row[link] in new:
                    row[link] = new[row[link]]
                else:
                    del row[link]
        rows.append(_fragment(row))
        raw_limit: int | None = None
        if session.offsets[old] != offset:
            offset = session.offsets[old]
            record = _record_at(trace, offset)
            first = new[old]
            raw_limit = REPORT_RAW if budget.raw > 0 else RAW_AFTER_BUDGET
        size = len(record.raw) if isinstance(record, FrameRecord) else 0
        body_limit = BODY_LIMIT if budget.body > 0 else -1
        detail = record_detail(record, session, old, raw_limit, body_limit)
        if raw_limit is not None:
            budget.raw -= min(size, raw_limit)
            budget.body -= size
        elif isinstance(record, FrameRecord):
            detail["rawOf"] = first
        if body_limit < 0 and "bodyOmitted" in detail:
            detail["bodyOmitted"] = (
                f"the report shows the bodies of its first {REPORT_BODY_TOTAL >> 20} MiB "
                "of frames; only the raw start of this one"
            )
        detail["n"] = new[old]
        details[new[old]] = _fragment(detail)
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


def _fragment(value: dict[str, Any]) -> orjson.Fragment:
    """``value`` as the JSON text the page will hold: 50,000 rows and details are kept as
    their text until the page is written, not as their objects (several times the size)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        text = orjson.dumps(json_safe(value))
    # orjson's result keeps its 4 KiB buffer (100,000 of them were 400 MB); a copy is its size.
    with memoryview(text) as view:
        return orjson.Fragment(view.tobytes())


def _record_at(trace: BinaryIO, offset: int) -> Record | None:
    """The frame or event record whose line starts at ``offset`` of the open ``trace``."""
    trace.seek(offset)
    return decode_line(trace.readline(LINE_LIMIT))


def _script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>``, ``&`` in it.

    Values from traffic that JSON cannot hold as they are (``1e999`` read as
    infinity, integers beyond 64 bits, lone surrogates) go through ``json_safe``,
    as the live UI's answers do.
    """
    try:
        # The details are keyed by row number: orjson writes int keys as strings.
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except TypeError:
        text = orjson.dumps(json_safe(value)).decode("utf-8")
    # str.replace, one character at a time: several times faster than translate
    # on the tens of megabytes a long trace's page holds.
    for char, escaped in _SCRIPT_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


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
    with collector_paused():
        page, result = report_data(path, flt)
        text = render_html(page)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return result
