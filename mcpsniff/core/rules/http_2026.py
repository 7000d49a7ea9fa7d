"""2026-07-28 Streamable HTTP request metadata: the headers a client mirrors from the body.

``basic/transports/streamable-http.mdx`` (2026-07-28) § Request Metadata:

* MOD-HTTP-PROTO-HEADER: "Every POST request to the MCP endpoint **MUST**
  include an ``MCP-Protocol-Version`` header", and "The header value **MUST**
  match the ``io.modelcontextprotocol/protocolVersion`` field carried in the
  request body's ``_meta``". The comparison is with *this* request's ``_meta``:
  a client asking for a version the server does not support sends it in both
  places, and that is version negotiation (rules/negotiation.py), not a
  mismatch.
* MOD-HTTP-STD-HEADERS: ``Mcp-Method`` (all requests) and ``Mcp-Name``
  (``tools/call``, ``prompts/get``: ``params.name``; ``resources/read``:
  ``params.uri``) "are **REQUIRED** for compliance".
* MOD-HTTP-BASE64: a value that "cannot be safely represented as a plain
  ASCII header value" travels as ``=?base64?...?=``; "servers **MUST** decode an
  encoded ``Mcp-Name`` or ``Mcp-Param-{Name}`` value before comparing it".
* MOD-HTTP-PARAM-HEADERS: "When a server's tool definition includes
  ``x-mcp-header`` annotations, conforming clients **MUST** mirror the
  designated parameter values into HTTP headers"; a null or absent value
  omits the header; and tools.mdx § x-mcp-header: the server's annotations must
  be valid, and "Clients using the Streamable HTTP transport **MUST** reject
  tool definitions where any ``x-mcp-header`` value violates these constraints".

Notification POSTs are not judged: "header requirements for notification
POSTs are not defined by this revision". What a client got wrong is kept per
request (``faults``) so that rules/http_status_2026.py can judge a server that
accepted it: "Servers **MUST** reject requests where the values specified in
the headers do not match the corresponding values in the request body".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core import mcp_headers
from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import C2S, REQUEST
from mcpsniff.core.protocol import META_VERSION, STATELESS, V5
from mcpsniff.core.redact import MARK
from mcpsniff.core.rules import http
from mcpsniff.core.rules.registry import FRAME, RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.core.session import Session

RULES = (
    "MOD-HTTP-PROTO-HEADER",
    "MOD-HTTP-STD-HEADERS",
    "MOD-HTTP-BASE64",
    "MOD-HTTP-PARAM-HEADERS",
)
#: Methods whose request carries Mcp-Name, and the params member it mirrors.
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: Requests remembered with the header faults their client made (for the server's answer).
FAULT_WINDOW = 4096
#: Tools whose annotations are remembered (one tools/list's worth, and some).
TOOL_WINDOW = 4096


def faults(session: Session) -> BoundedMap:
    """Request seq -> ``[(rule, what was wrong)]`` for requests whose headers failed."""
    found = session.state.rule_state.get("header_faults")
    if found is None:
        found = session.state.rule_state["header_faults"] = BoundedMap(FAULT_WINDOW)
    return found  # type: ignore[no-any-return]


def encoded(session: Session) -> BoundedMap:
    """Request seq -> the headers that matched the body only once Base64-decoded."""
    found = session.state.rule_state.get("header_encoded")
    if found is None:
        found = session.state.rule_state["header_encoded"] = BoundedMap(FAULT_WINDOW)
    return found  # type: ignore[no-any-return]


def stateless_post(
    session: Session, frame: FrameRecord, direction: str, messages: list[MessageRecord]
) -> http.ExchangeFacts | None:
    """The POST exchange of a stateless-era session that ``frame``, sent in ``direction``, is in.

    None for a frame sent the other way, in another era, with no message, or
    outside a Streamable HTTP POST: the 2026-07-28 header and status rules
    judge only such a POST (the request's body, or the server's reply to it).
    """
    if frame.direction != direction or session.state.era != STATELESS or not messages:
        return None
    return http.streamable_exchange(session, frame, "POST")


def _redacted(*values: Any) -> bool:
    """A credential was cut out of one side: the two cannot be compared."""
    return any(isinstance(v, str) and MARK in v for v in values)


@rule(*RULES, on=FRAME, keys=("parsed",))
def request_headers(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """The headers of a 2026-07-28 POST against the request in its body."""
    exchange = stateless_post(session, frame, C2S, messages)
    if exchange is None:
        return
    for message in exchange.methods:
        if message.kind == REQUEST and message.frame == frame.seq:
            _judge(session, exchange, message)


def _judge(session: Session, exchange: http.ExchangeFacts, message: MessageRecord) -> None:
    headers = exchange.headers
    params = message.params or {}
    # (rule, what is wrong, the header's value as sent)
    found: list[tuple[str, str, str | None]] = []
    seq = [message.frame]
    body_meta = params.get("_meta")
    body_version = body_meta.get(META_VERSION) if isinstance(body_meta, dict) else None
    version = headers.get("mcp-protocol-version")
    if version is None:
        found.append(
            (
                "MOD-HTTP-PROTO-HEADER",
                "no MCP-Protocol-Version header; every 2026-07-28 POST must carry one",
                None,
            )
        )
    elif isinstance(body_version, str) and version != body_version:
        found.append(
            (
                "MOD-HTTP-PROTO-HEADER",
                f"MCP-Protocol-Version {version[:40]!r} but _meta {META_VERSION} "
                f"{body_version[:40]!r}; the header must match the body",
                version,
            )
        )
    method = message.method or ""
    method_header = headers.get("mcp-method")
    if method_header != method:
        found.append(
            (
                "MOD-HTTP-STD-HEADERS",
                "no Mcp-Method header (every request needs one)"
                if method_header is None
                else f"Mcp-Method {method_header[:60]!r} but the body's method is {method[:60]!r}",
                method_header,
            )
        )
    decoded: list[str] = []
    member = NAMED.get(method)
    if member is not None and isinstance(params.get(member), str):
        raw = headers.get("mcp-name")
        problem = _mirrored(raw, params[member], "Mcp-Name", f"params.{member}")
        if problem is not None:
            found.append((*problem, raw))
        elif raw is not None and mcp_headers.is_sentinel(raw):
            decoded.append("Mcp-Name")
    if method == "tools/call" and isinstance(params.get("name"), str):
        found.extend(_tool_parameters(session, headers, params, decoded))
    if decoded and not found:
        encoded(session).put(message.frame, decoded)
    for rule_id, what, value in found:
        session.report(
            rule_id,
            f"the client's {method[:60]} POST: {what}",
            seq,
            header=None if value is None else value[:200],
            header_fault=what,
        )
    if found:
        faults(session).put(message.frame, [(rule_id, what) for rule_id, what, _ in found])


def _mirrored(raw: str | None, value: Any, header: str, source: str) -> tuple[str, str] | None:
    """What is wrong with header ``header`` mirroring body value ``value``, if anything."""
    expected = mcp_headers.rendered(value)
    if raw is None:
        if expected is None:
            return None
        return (
            "MOD-HTTP-STD-HEADERS" if header == "Mcp-Name" else "MOD-HTTP-PARAM-HEADERS",
            (f"no {header} header although {source} is in the body"),
        )
    mismatch_rule = "MOD-HTTP-STD-HEADERS" if header == "Mcp-Name" else "MOD-HTTP-PARAM-HEADERS"
    if _redacted(raw, value):
        return None
    read = mcp_headers.read(raw)
    if read.problem is not None:
        return ("MOD-HTTP-BASE64", f"{header} {raw[:60]!r}, which is unusable: {read.problem}")
    if expected is None:
        return (
            mismatch_rule,
            f"{header} {raw[:60]!r} although {source} is no string, integer or boolean",
        )
    assert read.text is not None
    if not mcp_headers.same_value(read.text, value):
        reason = mcp_headers.why_encode(expected)
        if not read.encoded and reason is not None and expected.strip(" \t") == read.text:
            return ("MOD-HTTP-BASE64", f"{header} {raw[:60]!r} sent plain though {reason}")
        hint = ""
        if raw.lower().startswith(mcp_headers.PREFIX) and not read.encoded:
            hint = " (the =?base64?...?= markers are lowercase and case-sensitive)"
        shown = read.text if read.encoded else raw
        return (
            mismatch_rule,
            f"{header} {shown[:60]!r}{' (decoded)' if read.encoded else ''} but {source} is "
            f"{expected[:60]!r}{hint}",
        )
    if not read.encoded:
        reason = mcp_headers.why_encode(expected)
        if reason is not None:
            return (
                "MOD-HTTP-BASE64",
                f"{header} sent plain though {reason}; it must be Base64-encoded",
            )
    return None


def _tool_parameters(
    session: Session, headers: dict[str, str], params: dict[str, Any], decoded: list[str]
) -> list[tuple[str, str, str | None]]:
    """The ``Mcp-Param-*`` headers of a tools/call against the tool's annotations."""
    tools = session.state.tools
    name = params["name"]
    tool = tools.get(name) if tools is not None else None
    if tool is None:
        return []  # no listing says what the tool's schema is
    annotations = annotations_of(session, name, tool.input_schema)
    if annotations.problem is not None:
        return [
            (
                "MOD-HTTP-PARAM-HEADERS",
                f"it calls tool {name[:60]!r}, whose definition is invalid "
                f"({annotations.problem}); a client must drop such a tool",
                None,
            )
        ]
    arguments = params.get("arguments")
    found: list[tuple[str, str, str | None]] = []
    for annotation in annotations.annotations:
        header = f"Mcp-Param-{annotation.name}"
        raw = headers.get(mcp_headers.PARAM_HEADER + annotation.name.lower())
        value = mcp_headers.value_at(arguments, annotation.path)
        source = "arguments." + ".".join(annotation.path)
        if value is None:
            if raw is not None:
                found.append(
                    (
                        "MOD-HTTP-PARAM-HEADERS",
                        f"{header} although {source[:80]} is "
                        + ("null" if _is_null(arguments, annotation.path) else "absent")
                        + " (the header must then be omitted)",
                        raw,
                    )
                )
            continue
        problem = _mirrored(raw, value, header, source[:80])
        if problem is not None:
            found.append((*problem, raw))
        elif raw is not None and mcp_headers.is_sentinel(raw):
            decoded.append(header)
    return found


def _is_null(arguments: Any, path: tuple[str, ...]) -> bool:
    node = mcp_headers.value_at(arguments, path[:-1]) if len(path) > 1 else arguments
    return isinstance(node, dict) and path[-1] in node


def annotations_of(session: Session, name: str, schema: Any) -> mcp_headers.ToolHeaders:
    """A tool's ``x-mcp-header`` annotations, read once per schema (the listings repeat)."""
    return _annotations(session, name, schema)[0]


def _annotations(session: Session, name: str, schema: Any) -> tuple[mcp_headers.ToolHeaders, bool]:
    """``(annotations, whether they were read now)``: cached by the schema object."""
    cache = session.state.rule_state.get("tool_headers")
    if cache is None:
        cache = session.state.rule_state["tool_headers"] = BoundedMap(TOOL_WINDOW)
    known = cache.get(name)
    if known is not None and known[0] is schema:
        return known[1], False
    found = mcp_headers.tool_headers(schema)
    cache.put(name, (schema, found))
    return found, True


@rule("MOD-HTTP-PARAM-HEADERS", on=RESULT, methods=("tools/list",), modern=True)
def tool_annotations(session: Session, msg: MessageRecord, result: dict[str, Any]) -> None:
    """A 2026-07-28 server's tools: their ``x-mcp-header`` annotations must be valid.

    Read from the complete listing rules/methods.py kept (``state.tools``): a
    listing sent again byte for byte keeps its schema objects, so it is
    neither walked nor reported again.
    """
    tools = session.state.tools
    if session.state.version != V5 or isinstance(result.get("nextCursor"), str) or not tools:
        return
    for name, tool in tools.items():
        annotations, fresh = _annotations(session, name, tool.input_schema)
        if fresh and annotations.problem is not None:
            session.report(
                "MOD-HTTP-PARAM-HEADERS",
                f"the server's tool {name[:60]!r} is invalid: {annotations.problem}; "
                "Streamable HTTP clients must drop it",
                [msg.frame],
                tool=name[:200],
            )
