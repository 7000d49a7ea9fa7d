"""The tools ``mcpsniff mcp`` offers: what an agent may ask about the recorded traffic.

Each tool is a definition (name, description, input schema, read-only
annotations) and a handler ``(access, arguments) -> value``; the server
quotes the value as untrusted data (``untrusted.quoted``). Lists are paged
(``offset``, ``limit`` with a ceiling) and say how many there were, so an
answer is bounded before it is quoted; a message body is cut at a size the
caller may lower, and the cut is said.

Sessions, filters, statistics, findings and their explanations are the
same code and the same figures as the web UI, ``show --filter``, ``stats``
and ``check --explain``: an agent and a person looking at one trace see the
same thing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from mcpsniff.agent.access import Refused, TraceAccess
from mcpsniff.core import catalog, explain
from mcpsniff.core.rules.severities import severities
from mcpsniff.filter import Filter, FilterError, compile_filter, load_views
from mcpsniff.guard.context_cost import trace_costs
from mcpsniff.guard.tools_report import tools_data
from mcpsniff.stats.compute import compute
from mcpsniff.trace.codec import TraceError
from mcpsniff.ui.details import message_detail
from mcpsniff.ui.follow import file_size
from mcpsniff.ui.model import SessionModel
from mcpsniff.ui.queries import EXPRESSION_LIMIT, cached_key, session_stats, session_views

#: Entries a list returns when the caller gives no limit, and at most.
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
#: Body bytes of one message shown by default, and at most.
DEFAULT_BODY = 8 * 1024
MAX_BODY = 48 * 1024
#: Matches a search keeps per trace (a filter that matches everything still pages).
MATCH_LIMIT = 20_000
#: Longest ``follow_session`` wait, seconds.
MAX_WAIT = 10.0

Handler = Callable[[TraceAccess, dict[str, Any]], Any]


@dataclass(frozen=True)
class Tool:
    """One tool: its MCP definition and the function that answers a call."""

    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    handler: Handler

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` describes it (MCP server/tools, Tool)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": self.properties,
                "required": list(self.required),
                "additionalProperties": False,
            },
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }


class ToolInputError(Exception):
    """Arguments a tool cannot use; the message is one line for the agent."""


_SESSION = {"type": "string", "description": "a session id from list_sessions, e.g. '0:1'"}
_OFFSET = {"type": "integer", "minimum": 0, "description": "entries to skip (paging)"}
_LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIMIT,
    "description": f"entries to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})",
}
_FILTER = {
    "type": "string",
    "description": (
        "an mcpsniff filter expression, e.g. 'method == tools/call and latency > 100ms', "
        "'error.code == -32602', 'severity >= warning', or free text in quotes"
    ),
}


def _int(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if type(value) is not int or not low <= value <= high:
        raise ToolInputError(f"{name} must be an integer from {low} to {high}")
    return value


def _page(items: list[Any], args: dict[str, Any]) -> dict[str, Any]:
    offset = _int(args, "offset", 0, 0, 1 << 62)
    limit = _int(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    shown = items[offset : offset + limit]
    out: dict[str, Any] = {"total": len(items), "offset": offset, "items": shown}
    if offset + len(shown) < len(items):
        out["next_offset"] = offset + len(shown)
    return out


def _filter(args: dict[str, Any]) -> Filter | None:
    expression = args.get("filter")
    if expression is None or expression == "":
        return None
    if not isinstance(expression, str) or len(expression) > EXPRESSION_LIMIT:
        raise ToolInputError(f"filter must be a string of at most {EXPRESSION_LIMIT} characters")
    try:
        return compile_filter(expression)
    except FilterError as exc:
        raise ToolInputError(f"bad filter: {exc}") from None


def _session(access: TraceAccess, args: dict[str, Any]) -> tuple[Path, SessionModel]:
    return access.session(args.get("session"))


def list_sessions(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """Every session, newest first, as the UI's session list shows it; filterable."""
    sessions = access.library.sessions()
    trace = args.get("trace")
    if trace is not None:
        path = str(access.confined(trace))
        sessions = [s for s in sessions if s["path"] == path]
    text = args.get("contains")
    if text is not None:
        if not isinstance(text, str):
            raise ToolInputError("contains must be a string")
        needle = text.lower()
        sessions = [
            s
            for s in sessions
            if any(needle in str(s.get(k) or "").lower() for k in ("name", "client", "file"))
        ]
    transport = args.get("transport")
    if transport is not None:
        sessions = [s for s in sessions if s["transport"] == transport]
    if args.get("with_findings"):
        sessions = [s for s in sessions if any(s["findings"].values())]
    if args.get("live"):
        sessions = [s for s in sessions if s["live"]]
    if args.get("since") is not None:
        since = _instant(args["since"])
        sessions = [s for s in sessions if (s["last"] or s["start"] or 0) >= since]
    page = _page(sessions, args)
    problems = access.library.problems()
    if problems:
        page["unreadable"] = problems[:20]
    return page


def _instant(value: object) -> float:
    """``since`` as Unix seconds: a number, or an ISO 8601 date or time (UTC unless it says)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and len(value) <= 40:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return moment.timestamp()
    raise ToolInputError("since must be Unix seconds or an ISO 8601 date, e.g. 2026-01-01")


def _find(access: TraceAccess, session_id: str) -> dict[str, Any]:
    for entry in access.library.sessions():
        if entry["id"] == session_id:
            return entry
    raise Refused(f"no session {session_id[:100]!r}; list_sessions gives the ids")


def session_summary(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """Identity, timing, counts by method and tool, errors and findings of one session."""
    path, session = _session(access, args)
    entry = _find(access, session.id)
    stats = _session_stats(access, path, session)
    rules = Counter(f["rule"] for f in session.findings)
    return {
        "session": entry,
        "duration_s": _duration(session),
        "by_method": stats.get("methods"),
        "by_tool": stats.get("tools"),
        "errors_by_layer": stats.get("errors_by_layer"),
        "findings_by_rule": dict(rules.most_common(50)),
    }


def _duration(session: SessionModel) -> float | None:
    if session.start is None or session.last is None:
        return None
    return round(session.last - session.start, 6)


def _row_entry(row: dict[str, Any], findings: list[dict[str, Any]]) -> dict[str, Any]:
    keep = ("n", "seq", "index", "t", "kind", "dir", "method", "tool", "target", "id")
    entry = {k: row[k] for k in keep if k in row}
    for key, name in (("latency", "latency_ms"), ("code", "error_code"), ("size", "size")):
        if key in row:
            entry[name] = row[key]
    if row.get("isError"):
        entry["is_error"] = True
    if "pair" in row:
        entry["answers_row"] = row["pair"]
    if "note" in row:
        entry["note"] = row["note"]
    if findings:
        entry["findings"] = [
            {"rule": f["rule"], "severity": f["severity"], "message": f["message"]}
            for f in findings[:10]
        ]
    return entry


def _findings_by_row(session: SessionModel) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for finding in session.findings:
        for n in finding.get("rows") or ():
            out.setdefault(n, []).append(finding)
    return out


def search_messages(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """The messages matching a filter expression, in one session or in every one; paged."""
    flt = _filter(args)
    if args.get("session") is not None:
        path, session = _session(access, args)
        targets = [(path, {session.key: session})]
    else:
        with access.library.lock:
            targets = [
                (followed.tail.path, dict(followed.model.sessions))
                for followed in access.library.traces.values()
                if followed.error is None
            ]
    named = args.get("session") is not None
    rows: list[dict[str, Any]] = []
    capped = False
    for path, sessions in targets:
        what = ("search", flt.expression if flt is not None else None, named)
        key = (str(path), file_size(path), tuple(sorted(sessions)), what)
        found = access.cache.get(key, partial(_matches, path, sessions, flt, named))
        capped = capped or len(found) >= MATCH_LIMIT
        rows.extend(found)
    page = _page(rows, args)
    if capped:
        page["cut"] = f"only the first {MATCH_LIMIT} matches of a trace are kept; narrow the filter"
    return page


def _matches(
    path: Path, sessions: dict[str, SessionModel], flt: Filter | None, named: bool
) -> list[dict[str, Any]]:
    by_row = {key: _findings_by_row(s) for key, s in sessions.items()}
    rows: list[dict[str, Any]] = []
    for view in session_views(path):
        if len(rows) >= MATCH_LIMIT:
            break
        model = sessions.get(view.session)
        if model is None or (flt is not None and not flt.matches(view)):
            continue
        n = model.row_for(view.seq, view.index)
        if n is not None:
            entry = _row_entry(model.row(n), by_row[view.session].get(n, []))
            rows.append(entry if named else {"session": model.id, **entry})
    return rows


def _session_stats(access: TraceAccess, path: Path, session: SessionModel) -> dict[str, Any]:
    key = cached_key(path, session, "stats")
    stats: dict[str, Any] = access.cache.get(key, partial(session_stats, path, session))
    return stats


def get_message(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """One message: its body (as recorded, redacted as stored), bounded, and its findings."""
    path, session = _session(access, args)
    if "row" in args:
        n = _int(args, "row", 0, 0, 1 << 62)
    else:
        seq = _int(args, "seq", 0, 0, 1 << 63)
        index = args.get("index")
        if index is not None and type(index) is not int:
            raise ToolInputError("index must be an integer (a batch element)")
        found = session.row_for(seq, index)
        if found is None:
            raise ToolInputError(f"session {session.id} has no message at seq {seq}")
        n = found
    limit = _int(args, "max_bytes", DEFAULT_BODY, 256, MAX_BODY)
    detail = message_detail(path, session, n, raw_limit=limit)
    if detail is None:
        raise ToolInputError(f"session {session.id} has no row {n}")
    out: dict[str, Any] = {"message": _row_entry(session.row(n), [])}
    if "raw" in detail:
        out["size"] = detail["size"]
        if detail["rawTruncated"]:
            out["text"] = detail["raw"]
            out["truncated"] = (
                f"the frame is {detail['size']} bytes; its first {limit} are shown "
                f"(max_bytes, at most {MAX_BODY})"
            )
        elif "body" in detail:
            out["body"] = detail["body"]
        else:
            out["text"] = detail["raw"]
        if not detail["utf8"]:
            out["utf8"] = False
    for key in ("event", "errorLayer", "meta", "http", "missing"):
        if key in detail:
            out[key] = detail[key]
    findings = _findings_by_row(session).get(n, [])
    if findings:
        out["findings"] = [_finding(f, with_text=False) for f in findings[:20]]
    return out


def _finding(entry: dict[str, Any], with_text: bool = True) -> dict[str, Any]:
    out = {
        "rule": entry["rule"],
        "severity": entry["severity"],
        "message": entry["message"],
        "seq": entry["seq"][:20],
    }
    if entry.get("cause"):
        out["cause"] = entry["cause"]
    if with_text:
        out["spec"] = entry.get("spec")
    return out


def session_findings(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """The findings of a session, each with its rule's explanation (once per rule)."""
    _path, session = _session(access, args)
    minimum = args.get("min_severity", "info")
    rank = {"info": 0, "warning": 1, "error": 2}
    if minimum not in rank:
        raise ToolInputError("min_severity must be info, warning or error")
    findings = [f for f in session.findings if rank.get(f["severity"], 0) >= rank[minimum]]
    page = _page([_finding(f) for f in findings], args)
    rules = sorted({f["rule"] for f in page["items"]})
    page["explanations"] = {rule: explain.explanation(rule) or None for rule in rules}
    return page


def stats(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """``mcpsniff stats --format json`` of one session, or of a whole trace."""
    if args.get("session") is not None:
        path, session = _session(access, args)
        return _session_stats(access, path, session)
    trace = args.get("trace")
    if trace is None:
        raise ToolInputError("give a session or a trace")
    path = access.confined(trace)
    try:
        result = compute(load_views(path), _filter(args))
        document = result.to_json()
        # As `mcpsniff stats --format json`: what each server's definitions cost.
        document["context_cost"] = tools_data(trace_costs(path, result.by_method))
        return document
    except TraceError as exc:
        raise ToolInputError(str(exc)) from None


def explain_rule(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """What a rule of the catalogue checks, where the spec says so, and how to fix it."""
    rule = args.get("rule")
    if not isinstance(rule, str):
        raise ToolInputError("rule must be a rule id such as JR-RESP-ID")
    rule = rule.strip().upper()
    try:
        entry = catalog.get(rule)
    except KeyError:
        raise ToolInputError(f"no rule {rule[:80]!r}; `mcpsniff rules` lists them") from None
    # What the rule's findings carry, strongest first (core/rules/severities.py):
    # the catalogue's keyword alone can name a severity no finding has.
    carried = severities(entry.id)
    note = explain.severity_note(entry.id)
    text = explain.explanation(entry.id)
    return {
        "rule": entry.id,
        "severity": carried[0],
        "severities": list(carried),
        "versions": list(entry.versions),
        "section": entry.section,
        "checks": entry.check,
        "source": entry.source,
        "explanation": f"{text} {note}" if note and text else text or note,
    }


def _profile(access: TraceAccess, path: Path, session: SessionModel) -> dict[str, Any]:
    stats = _session_stats(access, path, session)
    return {
        "methods": {m: s["requests"] + s["notifications"] for m, s in stats["methods"].items()},
        "tools": {t: s["requests"] for t, s in stats["tools"].items()},
        "p50_ms": {m: s["p50_ms"] for m, s in stats["methods"].items() if s["p50_ms"]},
        "errors": {m: s["errors"] for m, s in stats["methods"].items() if s["errors"]},
        "rules": dict(Counter(f["rule"] for f in session.findings)),
    }


def _diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    keys = sorted(set(a) | set(b))
    return {k: {"a": a.get(k), "b": b.get(k)} for k in keys if a.get(k) != b.get(k)}


def compare_sessions(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """How two sessions differ: methods, tools, latency, errors and findings."""
    path_a, a = access.session(args.get("a"))
    path_b, b = access.session(args.get("b"))
    left, right = _profile(access, path_a, a), _profile(access, path_b, b)
    entry_a, entry_b = _find(access, a.id), _find(access, b.id)
    same = ("name", "client", "transport", "version", "messages")
    return {
        "a": a.id,
        "b": b.id,
        "identity": {k: {"a": entry_a[k], "b": entry_b[k]} for k in same},
        "differences": {key: _diff(left[key], right[key]) for key in left},
    }


def follow_session(access: TraceAccess, args: dict[str, Any]) -> dict[str, Any]:
    """The messages a session gained after row ``after``, waiting up to ``wait_seconds``."""
    after = _int(args, "after", 0, 0, 1 << 62)
    wait = args.get("wait_seconds", 0)
    if not isinstance(wait, int | float) or isinstance(wait, bool) or not 0 <= wait <= MAX_WAIT:
        raise ToolInputError(f"wait_seconds must be a number from 0 to {MAX_WAIT}")
    _path, session = _session(access, args)
    if len(session.rows) <= after and wait:
        access.wait_for_growth(float(wait))
        _path, session = _session(access, args)
    limit = _int(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    end = min(len(session.rows), after + limit)
    by_row = _findings_by_row(session)
    rows = [_row_entry(session.row(n), by_row.get(n, [])) for n in range(after, end)]
    entry = _find(access, session.id)
    return {
        "session": session.id,
        "live": entry["live"],
        "ended": entry["ended"],
        "rows": rows,
        "next_after": max(after, end),
        "more": end < len(session.rows),
    }


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "list_sessions",
            "List recorded sessions",
            "The recorded MCP sessions, newest first: id, server name, client, transport, "
            "protocol version, start and last message time, message count, findings by "
            "severity, whether it is live. Filter by trace path, text, transport, findings, "
            "time.",
            {
                "trace": {"type": "string", "description": "only this trace file"},
                "contains": {"type": "string", "description": "text in server, client or file"},
                "transport": {"type": "string", "description": "stdio, http, ..."},
                "with_findings": {"type": "boolean"},
                "live": {"type": "boolean", "description": "only sessions being recorded"},
                "since": {
                    "type": ["string", "number"],
                    "description": "only sessions active since: ISO 8601 (UTC) or Unix seconds",
                },
                "offset": _OFFSET,
                "limit": _LIMIT,
            },
            (),
            list_sessions,
        ),
        Tool(
            "session_summary",
            "Summarize a session",
            "One session: identity, duration, requests, errors and latency percentiles by "
            "method and by tool, errors by layer, and findings counted by rule.",
            {"session": _SESSION},
            ("session",),
            session_summary,
        ),
        Tool(
            "search_messages",
            "Search messages",
            "The messages of a session (or, without one, of every session) matching a filter "
            "expression (the language of `mcpsniff show --filter`), one line each with seq, "
            "direction, kind, method, tool, id, latency, error code and findings. Paged.",
            {"session": _SESSION, "filter": _FILTER, "offset": _OFFSET, "limit": _LIMIT},
            (),
            search_messages,
        ),
        Tool(
            "get_message",
            "Get one message",
            "One message of a session by seq (and batch index) or row: its JSON body as "
            "recorded (credentials redacted as stored), bounded by max_bytes, with the "
            "findings on it.",
            {
                "session": _SESSION,
                "seq": {"type": "integer", "minimum": 0},
                "index": {"type": "integer", "minimum": 0},
                "row": {"type": "integer", "minimum": 0},
                "max_bytes": {"type": "integer", "minimum": 256, "maximum": MAX_BODY},
            },
            ("session",),
            get_message,
        ),
        Tool(
            "session_findings",
            "List a session's findings",
            "The protocol violations found in a session, each with its rule, severity, "
            "message, the seq numbers concerned and the spec link, plus each rule's "
            "explanation. Paged.",
            {
                "session": _SESSION,
                "min_severity": {"type": "string", "enum": ["info", "warning", "error"]},
                "offset": _OFFSET,
                "limit": _LIMIT,
            },
            ("session",),
            session_findings,
        ),
        Tool(
            "stats",
            "Traffic statistics",
            "Counts, errors by layer and latency p50/p95/p99/max per method and per tool, "
            "for one session or a whole trace file (optionally filtered).",
            {
                "session": _SESSION,
                "trace": {"type": "string", "description": "a trace file path"},
                "filter": _FILTER,
            },
            (),
            stats,
        ),
        Tool(
            "explain_rule",
            "Explain a rule",
            "What a rule of mcpsniff's catalogue (e.g. JR-RESP-ID) checks, its severity, "
            "the protocol versions it applies to, its source in the spec and how to fix it.",
            {"rule": {"type": "string", "description": "a rule id, e.g. JR-RESP-ID"}},
            ("rule",),
            explain_rule,
        ),
        Tool(
            "compare_sessions",
            "Compare two sessions",
            "How two sessions differ: identity, methods and tools called, median latency, "
            "errors and findings by rule.",
            {"a": _SESSION, "b": _SESSION},
            ("a", "b"),
            compare_sessions,
        ),
        Tool(
            "follow_session",
            "Follow a live session",
            "The messages a session gained after row `after` (0 for all), waiting up to "
            f"wait_seconds (at most {MAX_WAIT:g}) for new ones; call again with next_after.",
            {
                "session": _SESSION,
                "after": {"type": "integer", "minimum": 0},
                "wait_seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT},
                "limit": _LIMIT,
            },
            ("session",),
            follow_session,
        ),
    )
}
