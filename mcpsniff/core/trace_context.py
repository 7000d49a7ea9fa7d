"""W3C Trace Context carried in ``params._meta``: extracted and checked, never trusted.

MCP lets a sender put OpenTelemetry's propagation keys in ``_meta``: the
2026-07-28 ``_meta`` section names ``traceparent``, ``tracestate`` and
``baggage`` as the allowed exceptions to its key format (mcp-rules.md,
MSG-META-KEYS), and the OpenTelemetry MCP conventions say to "inject
traceparent and tracestate to the MCP message params._meta ... and extract them
on the receiver side to use as the remote parent". No catalogue rule judges the
*value*, so a malformed one is reported as a ``problem`` on the context (shown
by ``show``), not as a finding.

The format is W3C Trace Context Level 1, §3.2 (``traceparent``) and §3.3
(``tracestate``)::

    traceparent = version "-" trace-id "-" parent-id "-" trace-flags
    version     = 2 HEXDIGLC, "ff" forbidden
    trace-id    = 32 HEXDIGLC, not all zeros
    parent-id   = 16 HEXDIGLC, not all zeros
    trace-flags = 2 HEXDIGLC

Version ``00`` has exactly these four fields (55 characters). A later version
"may have more fields": a parser reads the first 55 characters as version 00
does and then requires a ``-`` before whatever follows (§3.2.4, "Versioning of
traceparent"). HEXDIGLC is lowercase: ``4BF9...`` is not a valid trace-id.
This module is pure (no I/O, no clock) like the rest of the core.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from mcpsniff.core.jsontypes import json_type
from mcpsniff.core.lazy_pattern import lazy

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"
BAGGAGE: Final = "baggage"
#: Longest ``traceparent`` kept as text; a longer one is cut (and is invalid anyway
#: unless a future version really is that long: still bounded in memory).
MAX_TRACEPARENT: Final = 512
#: W3C §3.3.1.1: "Vendors SHOULD propagate at least 512 characters of a combined header."
MAX_TRACESTATE: Final = 512
#: W3C §3.3.1.1: "There can be a maximum of 32 list-members in a list."
MAX_TRACESTATE_MEMBERS: Final = 32

_V00_LENGTH: Final = 55
_HEX = lazy(r"[0-9a-f]*")
_ANY_HEX = lazy(r"[0-9a-fA-F]*")
# W3C §3.3.1.3.1: key = simple-key / multi-tenant-key.
_SIMPLE_KEY = r"[a-z][_0-9a-z\-*/]{0,255}"
_TENANT_KEY = r"[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}"
_STATE_KEY = lazy(rf"(?:{_SIMPLE_KEY}|{_TENANT_KEY})")
# W3C §3.3.1.3.2: value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr;
# nblk-chr = %x21-2B / %x2D-3C / %x3E-7E (printable ASCII except "," and "=").
_STATE_VALUE = lazy(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
# W3C Baggage §3.3.1: key = token (RFC 7230 § 3.2.6); value = *baggage-octet, where
# baggage-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E (no space, '"', ',',
# ';' or '\\'); a property is key [OWS "=" OWS value].
_BAGGAGE_KEY = lazy(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAGGAGE_VALUE = lazy(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
#: W3C Baggage §3.3.2: "a maximum of 64 list-members" and "8192 bytes" per baggage-string.
MAX_BAGGAGE_MEMBERS: Final = 64
MAX_BAGGAGE_BYTES: Final = 8192


@dataclass(frozen=True, slots=True)
class TraceContext:
    """The trace context of one message: its ``traceparent`` fields, or why it has none.

    ``trace_id`` and ``parent_id`` are set only when the whole ``traceparent``
    is valid (``problem`` is then ``None``); ``text`` is the value as sent,
    bounded, for display.
    """

    text: str
    version: str | None = None
    trace_id: str | None = None
    parent_id: str | None = None
    flags: int | None = None
    #: Why the ``traceparent`` is invalid; ``None`` when it is valid.
    problem: str | None = None
    #: The ``tracestate`` as sent (bounded), when it is a string.
    tracestate: str | None = None
    #: Why the ``tracestate`` is invalid; ``None`` when valid or absent.
    tracestate_problem: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the ``traceparent`` names a usable remote parent."""
        return self.problem is None

    @property
    def sampled(self) -> bool:
        """The ``sampled`` flag (bit 0 of trace-flags, W3C §3.2.2.5.1)."""
        return bool(self.flags is not None and self.flags & 1)

    @property
    def short_id(self) -> str | None:
        """The first 8 hex digits of the trace-id, as trace viewers abbreviate it."""
        return self.trace_id[:8] if self.trace_id else None

    def as_json(self) -> dict[str, Any]:
        """The context as ``show --format json`` gives it."""
        obj: dict[str, Any] = {"traceparent": self.text, "valid": self.valid}
        if self.valid:
            obj.update(
                version=self.version,
                trace_id=self.trace_id,
                parent_id=self.parent_id,
                flags=f"{self.flags:02x}",
                sampled=self.sampled,
            )
        else:
            obj["problem"] = self.problem
        if self.tracestate is not None:
            obj["tracestate"] = self.tracestate
        if self.tracestate_problem is not None:
            obj["tracestate_problem"] = self.tracestate_problem
        return obj


def slim(context: TraceContext) -> TraceContext:
    """``context`` without the sender's texts: the ids, flags and problem only."""
    if not context.text and context.tracestate is None:
        return context
    return replace(context, text="", tracestate=None, tracestate_problem=None)


def meta_of(message: Any) -> dict[str, Any] | None:
    """``params._meta`` of a JSON-RPC message, or ``None`` when it has none."""
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def extract(message: Any) -> TraceContext | None:
    """The trace context in ``params._meta`` of ``message``; ``None`` when it has no traceparent.

    A ``tracestate`` without a ``traceparent`` is ignored, as W3C §3.3 says a
    receiver must when the ``traceparent`` is missing.
    """
    meta = meta_of(message)
    if meta is None or TRACEPARENT not in meta:
        return None
    return parse(meta[TRACEPARENT], meta.get(TRACESTATE))


def parse(traceparent: Any, tracestate: Any = None) -> TraceContext:
    """Check a ``traceparent`` value (and its ``tracestate``) against W3C Trace Context."""
    if not isinstance(traceparent, str):
        shown = _json_type(traceparent)
        return TraceContext(f"<{shown}>", problem=f"traceparent is {shown}, not a string")
    text = _bounded(traceparent, MAX_TRACEPARENT)
    problem, fields = _check_traceparent(traceparent)
    state, state_problem = _tracestate(tracestate)
    if problem is not None:
        return TraceContext(text, problem=problem, tracestate=state)
    version, trace_id, parent_id, flags = fields
    return TraceContext(
        text,
        version,
        trace_id,
        parent_id,
        int(flags, 16),
        tracestate=state,
        tracestate_problem=state_problem,
    )


def _check_traceparent(value: str) -> tuple[str | None, tuple[str, str, str, str]]:
    """``(problem, (version, trace-id, parent-id, flags))``; problem ``None`` when valid."""
    none = ("", "", "", "")
    version = value[:2]
    if len(version) < 2 or not _is_hex(version):
        return _hex_problem("version", version, 2), none
    if version == "ff":
        return "version ff is forbidden (W3C Trace Context §3.2.2.1)", none
    if len(value) < _V00_LENGTH:
        shorter = "shorter than the 55 of version-traceid-parentid-flags"
        return f"{len(value)} characters, {shorter}", none
    head, rest = value[:_V00_LENGTH], value[_V00_LENGTH:]
    if version == "00" and rest:
        return f"version 00 has exactly 4 fields (55 characters); {len(value)} given", none
    if rest and not rest.startswith("-"):
        return "after the 4th field a later version needs a '-' before its next field", none
    parts = head.split("-")
    if len(parts) != 4:
        return "not 4 fields separated by '-' (version-traceid-parentid-flags)", none
    _, trace_id, parent_id, flags = parts
    for name, field, size in (("trace-id", trace_id, 32), ("parent-id", parent_id, 16)):
        if len(field) != size or not _is_hex(field):
            return _hex_problem(name, field, size), none
        if field == "0" * size:
            return f"{name} is all zeros, which W3C Trace Context forbids", none
    if len(flags) != 2 or not _is_hex(flags):
        return _hex_problem("trace-flags", flags, 2), none
    return None, (version, trace_id, parent_id, flags)


def _tracestate(value: Any) -> tuple[str | None, str | None]:
    """``(tracestate as text, problem)``: both ``None`` when absent."""
    if value is None:
        return None, None
    if not isinstance(value, str):
        return None, f"tracestate is {_json_type(value)}, not a string"
    text = _bounded(value, MAX_TRACESTATE)
    if len(value) > MAX_TRACESTATE:
        return text, f"{len(value)} characters; W3C asks for at most {MAX_TRACESTATE}"
    members = [m.strip(" \t") for m in value.split(",")]
    members = [m for m in members if m]  # empty list-members are allowed (§3.3.1.1)
    if len(members) > MAX_TRACESTATE_MEMBERS:
        return text, f"{len(members)} list-members; W3C allows {MAX_TRACESTATE_MEMBERS}"
    seen: set[str] = set()
    for member in members:
        key, sep, val = member.partition("=")
        if not sep or _STATE_KEY.fullmatch(key) is None:
            return text, "a list-member is not key=value with a lowercase key (W3C §3.3.1.3)"
        if _STATE_VALUE.fullmatch(val) is None:
            return text, f"the value of {key!r} is not printable ASCII without ',' and '='"
        if key in seen:
            return text, f"key {key!r} appears twice (W3C §3.3.1.1)"
        seen.add(key)
    return text, None


def baggage_problem(value: Any) -> str | None:
    """Why a ``baggage`` value is not W3C Baggage (§3.3.1 grammar), or None when it is.

    ``baggage-string = list-member 0*179( OWS "," OWS list-member )``, each
    ``key OWS "=" OWS value *( OWS ";" OWS property )``.
    """
    if not isinstance(value, str):
        return f"baggage is {_json_type(value)}, not a string"
    if len(value.encode("utf-8", "replace")) > MAX_BAGGAGE_BYTES:
        return f"baggage is longer than the {MAX_BAGGAGE_BYTES} bytes W3C Baggage allows"
    members = value.split(",")
    if len(members) > MAX_BAGGAGE_MEMBERS:
        return f"{len(members)} list-members; W3C Baggage allows {MAX_BAGGAGE_MEMBERS}"
    for member in members:
        pair, *properties = member.split(";")
        key, sep, val = pair.partition("=")
        key, val = key.strip(" \t"), val.strip(" \t")
        if not sep or _BAGGAGE_KEY.fullmatch(key) is None:
            return "a list-member is not key=value with a token key (W3C Baggage §3.3.1)"
        if _BAGGAGE_VALUE.fullmatch(val) is None:
            return (
                f"the value of {key[:40]!r} has characters W3C Baggage does not allow "
                "(spaces, quotes, commas, semicolons, backslashes and non-ASCII are "
                "percent-encoded)"
            )
        for prop in properties:
            name, _, pval = prop.partition("=")
            if _BAGGAGE_KEY.fullmatch(name.strip(" \t")) is None or (
                _BAGGAGE_VALUE.fullmatch(pval.strip(" \t")) is None
            ):
                return f"a property of {key[:40]!r} is not key or key=value (W3C Baggage §3.3.1)"
    return None


def _hex_problem(name: str, field: str, size: int) -> str:
    if len(field) == size and _ANY_HEX.fullmatch(field):
        return f"{name} has uppercase hex digits; W3C Trace Context requires lowercase"
    return f"{name} is not {size} lowercase hex digits"


def _is_hex(text: str) -> bool:
    return _HEX.fullmatch(text) is not None


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_WITH_ARTICLE = {
    "null": "null",
    "boolean": "a boolean",
    "number": "a number",
    "array": "an array",
    "object": "an object",
}


def _json_type(value: Any) -> str:
    """A JSON value's type with its article (``a number``); any other value's class name."""
    kind = json_type(value)
    if kind == "string" or (kind == "object" and not isinstance(value, dict)):
        return type(value).__name__
    return _WITH_ARTICLE[kind]
