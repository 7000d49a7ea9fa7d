"""A trace as archive rows: one per JSON-RPC message, one per finding (schema in docs/archive.md).

Rows are plain dicts whose keys are the archive's columns, so this module
needs no Parquet library. A message row is keyed by (trace, session, seq,
batch_index) and a finding row by (trace, finding_no): ``trace`` is a
digest of the trace file's header line, which the writer never rewrites,
so it names the same recording on every host and after a rename.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.error_layers import TOOL_ERROR, error_layer
from mcpsniff.core.model import BATCH, ERROR, REQUEST, RESPONSE, FindingRecord, Record
from mcpsniff.core.protocol import META_SERVER_INFO
from mcpsniff.filter import MessageView, build_views, index_findings
from mcpsniff.filter.analyzed import AnalyzedRecords, frames_only
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.trace.codec import TraceError

#: The version of the archive's schema (docs/archive.md says what changes it).
SCHEMA_VERSION = 1
#: A partition value when the server's name is not known (the Hive convention).
UNKNOWN = "__HIVE_DEFAULT_PARTITION__"
_HEADER_LIMIT = 1 << 20
_INT64 = 1 << 63


def trace_id(path: Path) -> str:
    """The digest naming a trace: SHA-256 of its first line, 16 hex digits.

    Raises ``TraceError`` when the file cannot be read.
    """
    try:
        with open(path, "rb") as handle:
            first = handle.readline(_HEADER_LIMIT)
    except OSError as exc:
        raise TraceError(f"{path}: cannot open: {exc.strerror or exc}") from None
    return hashlib.sha256(first).hexdigest()[:16]


@dataclass
class SessionIdentity:
    """What a session says about its peers, learned from its handshake or ``_meta``."""

    server: str | None = None
    server_version: str | None = None
    client: str | None = None
    protocol_version: str | None = None


@dataclass
class TraceRows:
    """The rows of one trace, and what was learned on the way."""

    trace: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)


def _day(t: float | None) -> str:
    if t is None:
        return UNKNOWN
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return UNKNOWN


def _text(value: Any, limit: int = 1000) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:limit].encode("utf-8", "replace").decode("utf-8")


def _id_text(view: MessageView) -> str | None:
    if not view.has_id:
        return None
    try:
        return orjson.dumps(view.id).decode("utf-8")
    except TypeError:
        return _text(repr(view.id))


def _body(view: MessageView) -> str:
    frame = view.frame
    if frame is None:
        return ""
    if view.index is None:
        return frame.raw.rstrip(b"\r\n").decode("utf-8", "replace")
    body = view.body
    try:
        return orjson.dumps(body).decode("utf-8")
    except TypeError:
        return _text(repr(body), 1 << 20) or ""


def _learn(identity: SessionIdentity, view: MessageView) -> None:
    """Fill ``identity`` from an initialize exchange or a 2026-07-28 ``_meta``."""
    if view.method != "initialize" and (view.kind != RESPONSE or identity.server is not None):
        return  # the common case: nothing left to learn, no body parsed
    body = view.body
    if not isinstance(body, dict):
        return
    if view.kind == REQUEST:
        params = body.get("params")
        if isinstance(params, dict):
            info = params.get("clientInfo")
            if isinstance(info, dict) and identity.client is None:
                identity.client = _text(info.get("name"), 200)
            if identity.protocol_version is None:
                identity.protocol_version = _text(params.get("protocolVersion"), 40)
        return
    result = body.get("result")
    if not isinstance(result, dict):
        return
    info = result.get("serverInfo") if view.method == "initialize" else None
    if info is None:
        meta = result.get("_meta")
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    if isinstance(info, dict) and identity.server is None:
        identity.server = _text(info.get("name"), 200)
        identity.server_version = _text(info.get("version"), 100)
    if view.method == "initialize" and isinstance(result.get("protocolVersion"), str):
        identity.protocol_version = _text(result["protocolVersion"], 40)


def _error_code(view: MessageView) -> int | None:
    code = view.error_code
    if type(code) is int and -_INT64 <= code < _INT64:
        return code
    return None


def _layer(view: MessageView) -> str | None:
    if view.is_error:
        return TOOL_ERROR.layer
    if view.kind != ERROR:
        return None
    return error_layer(view.error_code).layer


def message_row(trace: str, file: str, view: MessageView) -> dict[str, Any]:
    """The archive row of one message view (server columns are filled per session later)."""
    frame = view.frame
    return {
        "trace": trace,
        "trace_file": file,
        "session": _text(view.session),
        "seq": view.seq,
        "batch_index": view.index,
        "t": view.t,
        "transport": frame.transport if frame is not None else None,
        "direction": view.direction,
        "kind": view.kind,
        "method": _text(view.method),
        "id": _id_text(view),
        "tool": _text(view.tool),
        "target": _text(view.target),
        "latency_ms": view.latency_ms,
        "error_code": _error_code(view),
        "error_layer": _layer(view),
        "is_error": view.is_error,
        "size": len(frame.raw) if frame is not None else None,
        "findings": len(view.findings),
        "body": _body(view),
    }


def trace_rows(path: Path) -> TraceRows:
    """Every message and finding of the trace at ``path`` as archive rows.

    Raises ``TraceError`` when the file is not a readable trace.
    """
    out = TraceRows(trace_id(path))
    file = str(path)
    identities: dict[str, SessionIdentity] = {}
    times: dict[tuple[str, int], float] = {}
    # The reader ``stats`` uses: a frame's body stays unparsed unless a view needs it.
    # Frames without message records (written without analysis) are analyzed, as
    # ``stats`` and ``check`` do, or they would archive nothing.
    reading = AnalyzedRecords if frames_only(path) else LazyTraceRecords
    index = index_findings(reading(path, on_skip=_quiet))
    recorded: list[FindingRecord] = []
    for view in build_views(_keeping_findings(reading(path), recorded), index):
        if view.t is not None:
            times.setdefault((view.session, view.seq), view.t)
        if view.message is None or view.kind == BATCH:
            continue
        identity = identities.setdefault(view.session, SessionIdentity())
        _learn(identity, view)
        out.messages.append(message_row(out.trace, file, view))
    for row in out.messages:
        _fill_identity(row, identities.get(row["session"]))
    for number, finding in enumerate(recorded):
        first = finding.seq[0] if finding.seq else None
        t = times.get((finding.session, first)) if first is not None else None
        row = {
            "trace": out.trace,
            "trace_file": file,
            "session": _text(finding.session),
            "finding_no": number,
            "rule": _text(finding.rule, 80),
            "severity": _text(finding.severity, 20),
            "message": _text(finding.message, 4000),
            "seq": first,
            "seqs": orjson.dumps(finding.seq[:1000]).decode(),
            "t": t,
        }
        _fill_identity(row, identities.get(finding.session))
        out.findings.append(row)
    return out


def _keeping_findings(records: Iterable[Record], found: list[FindingRecord]) -> Iterator[Record]:
    """``records`` unchanged, with each finding also appended to ``found`` (trace order)."""
    for record in records:
        if isinstance(record, FindingRecord):
            found.append(record)
        yield record


def _quiet(message: str) -> None:
    """Skipped lines are reported once, by the second pass; the index pass is silent."""


def _fill_identity(row: dict[str, Any], identity: SessionIdentity | None) -> None:
    identity = identity or SessionIdentity()
    row["server_name"] = identity.server
    row["server_version"] = identity.server_version
    row["client_name"] = identity.client
    row["protocol_version"] = identity.protocol_version
    row["day"] = _day(row["t"])
    row["server"] = identity.server or UNKNOWN


def iter_trace_files(paths: list[Path]) -> Iterator[Path]:
    """The trace files named by ``paths``: files as given, folders' ``*.jsonl``, sorted."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.glob("*.jsonl") if p.is_file())
        else:
            yield path
