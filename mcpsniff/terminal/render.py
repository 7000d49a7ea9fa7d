"""Turning records into text a person reads: the timeline and the findings report.

Pure functions and small classes over records; the CLI decides where the
text goes and whether it is coloured.

Every string in a record came from traffic or from a trace file, and may hold
terminal control sequences (``ESC ] 52 ; c ; ...`` writes the clipboard) or
bidi overrides (docs/architecture.md, invariant 6). Escaping is structural here: every
line this module hands out is built by ``_line``, which passes each piece
through ``terminal_safe`` unless the piece is ``Trusted`` (text this module
wrote itself, such as a style's escape codes), and ``Style`` escapes the text it
colours. A record field therefore cannot reach the output unescaped, whoever
forgets what; the worst a slip can do is show one of our own colour codes as
visible text.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.core import catalog
from mcpsniff.core.error_layers import error_layer
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.grouping import group_findings
from mcpsniff.core.ids import show_id
from mcpsniff.core.model import (
    BATCH,
    C2S,
    ERROR,
    INVALID,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    UNPARSEABLE,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.spec_links import spec_link, spec_quote

_RESET = "\x1b[0m"
_STYLES = {
    "c2s": "\x1b[36m",
    "s2c": "\x1b[35m",
    "error": "\x1b[1;31m",
    "warning": "\x1b[33m",
    "info": "\x1b[2m",
    "dim": "\x1b[2m",
    "bold": "\x1b[1m",
}
ARROWS = {C2S: "C→S", "s2c": "S→C"}
_KIND_LABEL = {
    REQUEST: "request",
    NOTIFICATION: "notify",
    RESPONSE: "result",
    ERROR: "error",
    BATCH: "batch",
    INVALID: "invalid",
    UNPARSEABLE: "UNPARSEABLE",
}
#: How many request methods the timeline remembers to label their responses.
_METHOD_MEMORY = 100_000


class Trusted(str):
    """Text this module wrote itself: the only ``str`` that ``_line`` does not escape."""

    __slots__ = ()


#: The longest piece of traffic text one timeline or report line shows: a peer's
#: 2 MB method name must not become a 2 MB line (``show -v`` prints bodies whole).
MAX_PIECE = 2000


def _safe(part: object) -> str:
    """``part`` as output text: escaped and bounded unless this module wrote it."""
    if type(part) is Trusted:
        return part
    text = part if type(part) is str else str(part)
    if len(text) > MAX_PIECE:
        text = f"{text[:MAX_PIECE]}… ({len(text) - MAX_PIECE} more characters)"
    return terminal_safe(text)


def _line(*parts: object) -> Trusted:
    """One output line from its pieces, each escaped unless ``Trusted``."""
    return Trusted("".join(_safe(part) for part in parts))


class Style:
    """ANSI styling that is a no-op when colour is off; the styled text is escaped."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, name: str, text: object) -> Trusted:
        safe = _safe(text)
        code = _STYLES.get(name)
        if not self.enabled or code is None:
            return Trusted(safe)
        return Trusted(f"{code}{safe}{_RESET}")


def format_time(t: float) -> str:
    """Wall-clock time of a record, to the millisecond, local time zone."""
    whole = int(t)
    return time.strftime("%H:%M:%S", time.localtime(whole)) + f".{int((t - whole) * 1000):03d}"


@dataclass
class _PendingFrame:
    frame: FrameRecord
    messages: list[MessageRecord] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)
    #: Text a caller appends to a message's line, by batch index.
    suffixes: dict[int | None, Trusted] = field(default_factory=dict)


class Timeline:
    """Renders records as timeline lines, one per message, findings inline.

    Records arrive in trace order (a frame, its messages, its findings), so a
    frame's lines are emitted when the next frame or event starts, or on
    ``flush``.
    """

    def __init__(self, style: Style, *, time_format: Any = format_time) -> None:
        self.style = style
        self.time_format = time_format
        self._current: _PendingFrame | None = None
        self._methods: dict[tuple[int, int | None], str] = {}
        self._multi_session = False
        self._sessions: set[str] = set()

    def feed(self, record: Record) -> list[str]:
        """Lines that became complete with this record."""
        if isinstance(record, FrameRecord):
            lines = self.flush()
            self._sessions.add(record.session)
            self._multi_session = len(self._sessions) > 1
            self._current = _PendingFrame(record)
            return lines
        if isinstance(record, MessageRecord):
            if self._current is not None and record.frame == self._current.frame.seq:
                self._current.messages.append(record)
            return []
        if isinstance(record, FindingRecord):
            if self._current is not None and self._current.frame.seq in record.seq:
                self._current.findings.append(record)
                return []
            return [*self.flush(), *self._finding_lines(record, standalone=True)]
        if isinstance(record, EventRecord):
            return [*self.flush(), *self._event_lines(record)]
        return []

    def add_suffix(self, message: MessageRecord, text: Trusted) -> None:
        """Append ``text`` (already styled and escaped) to ``message``'s line, fed just before."""
        current = self._current
        if current is not None and message.frame == current.frame.seq:
            current.suffixes[message.index] = text

    def flush(self) -> list[str]:
        """Emit the lines of the frame being collected."""
        current, self._current = self._current, None
        if current is None:
            return []
        return self._frame_lines(current)

    def _frame_lines(self, pending: _PendingFrame) -> list[str]:
        frame = pending.frame
        s = self.style
        when = self.time_format(frame.t)
        head = _line(s("dim", when), " ", s(frame.direction, ARROWS.get(frame.direction, "?")))
        tag = self._session_tag(frame.session)
        if tag:
            head = _line(head, " ", tag)
        lines: list[str] = []
        messages = pending.messages
        if not messages:
            lines.append(_line(head, " ", s("dim", "frame"), " ", s("dim", _excerpt(frame.raw))))
        for message in messages:
            if message.index is not None:
                indent = Trusted(" " * (len(when) + 5))
                prefix = _line("  ", s("dim", "└"), f" [{message.index}]")
                line = _line(indent, prefix, " ", self._describe(message))
            else:
                line = _line(head, " ", self._describe(message))
            suffix = pending.suffixes.get(message.index)
            lines.append(_line(line, " ", suffix) if suffix else line)
        for finding in pending.findings:
            lines.extend(self._finding_lines(finding, standalone=False))
        return lines

    def _session_tag(self, key: str) -> Trusted | None:
        """``[session]`` on the lines of a trace of several sessions, short."""
        if not self._multi_session or not key:
            return None
        label = key if len(key) <= 24 else f"{key[:11]}…{key[-8:]}"
        return self.style("dim", _line("[", label, "]"))

    def _describe(self, message: MessageRecord) -> Trusted:
        s = self.style
        kind = message.kind
        label = _KIND_LABEL.get(kind, kind)
        # Every kind padded alike, so that the ids and methods line up in one column.
        if kind == ERROR:
            parts = [s("error", f"{'error':<8}")]
        elif kind in (UNPARSEABLE, INVALID):
            parts = [s("error", f"{label:<8}")]
        else:
            parts = [_line(f"{label:<8}")]
        if message.has_id:
            parts.append(_line("id=", show_id(message.id)))
        if kind in (REQUEST, NOTIFICATION):
            if message.method is not None:
                parts.append(s("bold", message.method))
            if message.target is not None:
                parts.append(_line(message.target))
            if kind == REQUEST:
                if len(self._methods) > _METHOD_MEMORY:
                    self._methods.clear()
                label = message.method or "?"
                if message.target is not None:
                    label = f"{label} {message.target}"
                self._methods[(message.frame, message.index)] = label
        elif kind in (RESPONSE, ERROR):
            if message.answers is not None:
                method = self._methods.get((message.answers, message.request_index))
                if method:
                    parts.append(_line(method))
            if message.error_code is not None:
                # Name the layer of every error code (JSON-RPC 2.0 §5.1 ranges, MCP's codes).
                layer = error_layer(message.error_code)
                parts.append(_line("code=", message.error_code, " ", s("dim", layer.label)))
            if message.latency_ms is not None:
                parts.append(s("dim", f"({_latency(message.latency_ms)})"))
            if message.answers is not None and message.latency_ms is None:
                parts.append(s("dim", f"(→ seq {message.answers})"))
        if message.note:
            parts.append(s("warning", _line("[", message.note, "]")))
        return Trusted(" ".join(parts))

    def _finding_lines(self, finding: FindingRecord, *, standalone: bool) -> list[str]:
        s = self.style
        indent = "" if standalone else "      "
        mark = _MARKS.get(finding.severity, "•")
        return [
            _line(indent, s(finding.severity, _line(mark, " ", finding.rule)), " ", finding.message)
        ]

    def _event_lines(self, event: EventRecord) -> list[str]:
        s = self.style
        detail = _event_detail(event)
        if detail is None:
            return []
        when = s("dim", self.time_format(event.t))
        # A stderr or exit line names its session as a message line does.
        tag = self._session_tag(event.session)
        if tag:
            when = _line(when, " ", tag)
        return [_line(when, " ", s("dim", "···"), " ", s("dim", event.event), " ", detail).rstrip()]


_MARKS = {"error": "✖", "warning": "⚠", "info": "ℹ"}


def _event_detail(event: EventRecord) -> str | None:
    """One line about a transport event, or None for events a timeline leaves out.

    The text is the event's, unescaped: ``_line`` escapes it.
    """
    data = event.data
    name = event.event
    if name == "stderr":
        return str(data.get("line", ""))[:160]
    if name == "http-request":
        return f"#{data.get('exchange')} {data.get('method')} {data.get('path')}"
    if name == "http-response":
        headers = {
            str(pair[0]).lower(): pair[1]
            for pair in data.get("headers") or []
            if isinstance(pair, list | tuple) and len(pair) == 2
        }
        kind = str(headers.get("content-type", "")).split(";")[0]
        return f"#{data.get('exchange')} {data.get('status')} {kind}".rstrip()
    if name == "http-end":
        outcome = data.get("outcome")
        return None if outcome == "complete" else f"#{data.get('exchange')} {outcome}"
    if name == "sse-event":
        return None
    if name == "fault":
        return fault_text(data)
    if not data:
        return ""
    return " ".join(f"{k}={v}" for k, v in list(data.items())[:6])[:200]


def fault_text(data: dict[str, Any]) -> str:
    """A fault mcpsniff injected (docs/faults.md): what, to which message, delivered or not."""
    action = str(data.get("action", "?"))
    for key in ("delay_ms", "corruption", "code"):
        if key in data:
            value = data[key]
            action += (
                f" {value:.0f} ms"
                if key == "delay_ms" and isinstance(value, int | float)
                else f" {value}"
            )
            break
    target = f"{data.get('dir', '?')} {data.get('kind', '?')}"
    if data.get("method"):
        target += f" {data['method']}"
    if "id" in data:
        target += f" id={data['id']}"
    state = "" if data.get("delivered", True) else " (not delivered)"
    return f"injected {action} to {target}{state}  [{str(data.get('spec', ''))[:80]}]"


def _latency(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 1000:
        return f"{ms:.1f} ms"
    return f"{ms / 1000:.2f} s"


def _excerpt(raw: bytes, limit: int = 60) -> str:
    text = raw.decode("utf-8", errors="backslashreplace").rstrip("\r\n")
    text = terminal_safe(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- findings report


@dataclass
class FindingSummary:
    """Counts per severity over all sessions."""

    by_severity: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    sessions: int = 0

    @property
    def total(self) -> int:
        return sum(self.by_severity.values())


def finding_json(finding: FindingRecord, version: str | None = None) -> dict[str, Any]:
    """The ``check --format json`` object for one finding; ``version``: its session's."""
    return {
        "rule": finding.rule,
        "severity": finding.severity,
        "message": finding.message,
        "session": finding.session,
        "seq": finding.seq,
        "data": finding.data,
        "spec": spec_link(finding.rule, version),
    }


def report_lines(
    findings_by_session: dict[str, list[FindingRecord]],
    style: Style,
    versions: Mapping[str, str | None] | None = None,
    titles: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """The text report of ``mcpsniff check``: findings grouped by session.

    ``versions``: each session's protocol version, for the spec links;
    ``titles``: each session's one-line identity (server, client, how it ended).
    """
    s = style
    for session, findings in findings_by_session.items():
        version = versions.get(session) if versions is not None else None
        counts = _counts(findings)
        yield _line(s("bold", _line("session ", session)), ": ", counts)
        title = titles.get(session) if titles is not None else None
        if title:
            yield _line("  ", s("dim", title))
        # Repeats fold into one entry and dependents sit under their root
        # (core/grouping.py); --format json keeps every finding.
        for group in group_findings(findings):
            finding = group.first
            mark = _MARKS.get(finding.severity, "•")
            if group.repeated:
                where = f"  {group.count} times, {group.span()}"
            elif len(finding.seq) > 6:
                where = f"  {group.span()} ({len(finding.seq)} frames)"
            else:
                where = "  seq " + ",".join(str(q) for q in finding.seq)
            yield _line(
                "  ",
                s(finding.severity, _line(mark, " ", f"{finding.severity:<7}")),
                " ",
                s("bold", finding.rule),
                where,
            )
            yield _line("      ", finding.message)
            if group.repeated:
                yield _line(
                    "      (the first of ",
                    str(group.count),
                    "; the others differ only in ids and numbers)",
                )
            for dependent in group.dependents:
                yield _line("      ↳ so also ", s("bold", dependent.rule), ": ", dependent.message)
            data = {k: v for k, v in finding.data.items() if k not in ("explanation",)}
            if "cause" in data:
                excerpt = ("   excerpt: ", data["excerpt"]) if "excerpt" in data else ()
                yield _line("      cause: ", data["cause"], *excerpt)
            code = data.get("code")
            if type(code) is int:
                # Name the layer of every error code (JSON-RPC 2.0 §5.1 ranges).
                layer = error_layer(code)
                named = f" {layer.meaning}" if layer.meaning else ""
                yield _line("      error ", str(code), named, ": ", layer.title)
            try:
                entry = catalog.get(finding.rule)
            except KeyError:
                continue
            yield s("dim", _line("      spec: ", spec_link(finding.rule, version)))
            if quote := spec_quote(entry.source):
                yield s("dim", _line("            ", quote[:240]))


def _counts(findings: Iterable[FindingRecord]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for finding in findings:
        counts[finding.severity] += 1
    parts = [
        f"{counts[sev]} {sev}{'s' if counts[sev] != 1 else ''}"
        for sev in ("error", "warning", "info")
        if counts[sev]
    ]
    return ", ".join(parts) if parts else "no findings"
