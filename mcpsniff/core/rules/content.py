"""What results carry: content blocks, resources, annotations and icons (schema.ts shapes).

Each function is one registered rule (``registry.rule``): the catalogue id,
the event (a result) and the methods whose results it reads.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from mcpsniff.core.jsontypes import is_base64
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.rules import repeats
from mcpsniff.core.rules.registry import RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "TOOL-BINARY-BASE64",
    "TOOL-RESOURCE-LINK-SHAPE",
    "TOOL-STRUCTURED-TEXT",
    "TOOL-EMBEDDED-RES-CAP",
    "TOOL-ANNOTATIONS-SHAPE",
    "RES-URI",
    "RES-ANNOTATIONS",
    "PROMPT-EMBEDDED",
    "ICON-SHAPE",
    "ICON-SAFE-SCHEME",
)

#: RFC 3986 §3: scheme ":" hier-part, with no whitespace anywhere.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\s]*$")
_ISO8601 = lazy(r"^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?")
#: At most this many items of one list are looked at (a hostile list may be huge).
MAX_ITEMS = 1000
_NOTHING = object()
#: URIs already found valid: resources are read again and again (bounded).
_VALID_URIS: set[str] = set()
_VALID_URIS_MAX = 4096


def _uri_ok(uri: str) -> bool:
    if uri in _VALID_URIS:
        return True
    if _URI.match(uri) is None:
        return False
    if len(_VALID_URIS) < _VALID_URIS_MAX and len(uri) < 1024:
        _VALID_URIS.add(uri)
    return True


_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _blocks(result: dict[str, Any], key: str = "content") -> list[dict[str, Any]]:
    items = result.get(key)
    if not isinstance(items, list):
        return []
    return [b for b in items[:MAX_ITEMS] if isinstance(b, dict)]


# --------------------------------------------------------------------------- tools/call


@rule(
    "TOOL-BINARY-BASE64",
    "TOOL-RESOURCE-LINK-SHAPE",
    "TOOL-STRUCTURED-TEXT",
    "TOOL-EMBEDDED-RES-CAP",
    "RES-URI",
    "RES-ANNOTATIONS",
    on=RESULT,
    methods=("tools/call",),
)
def tool_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Every content rule of a tools/call result, in one pass over its blocks.

    tools/call is the busiest result: the usual text-only result costs one
    look at each block's type and nothing more.
    """
    content = result.get("content")
    if type(content) is list and len(content) <= MAX_ITEMS:
        # The usual result, only plain text blocks: no rule below can fire but
        # TOOL-STRUCTURED-TEXT, and only with structuredContent.
        for block in content:
            if type(block) is not dict or block.get("type") != "text" or "annotations" in block:
                break
        else:
            if "structuredContent" in result:
                structured_text(session, msg, result)
            return
    kinds: set[Any] = set()
    annotated = False
    if type(content) is list:
        for block in content[:MAX_ITEMS]:
            if type(block) is not dict:
                continue
            kind = block.get("type")
            if kind != "text":
                kinds.add(kind)
            if "annotations" in block:
                annotated = True
    if kinds & {"image", "audio", "resource"}:
        binary_blocks(session, msg, result)
    if kinds & {"resource", "resource_link"}:
        resource_links(session, msg, result)
        embedded_resources(session, msg, result)
        resource_uris(session, msg, result)
    if annotated:
        annotations(session, msg, result)
    if "structuredContent" in result:
        structured_text(session, msg, result)


@rule("TOOL-BINARY-BASE64", on=RESULT, methods=("prompts/get",))
def binary_blocks(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Image and audio blocks carry base64 data and a MIME type; embedded blobs are base64."""
    blocks = _blocks(result) or [
        m["content"] for m in _blocks(result, "messages") if isinstance(m.get("content"), dict)
    ]
    for i, block in enumerate(blocks):
        kind = block.get("type")
        problem = None
        if kind in ("image", "audio"):
            if not is_base64(block.get("data")):
                problem = f"{kind} block {i} has data that is not base64"
            elif not isinstance(block.get("mimeType"), str) or "/" not in block["mimeType"]:
                problem = f"{kind} block {i} has no valid mimeType"
        elif kind == "resource":
            resource = block.get("resource")
            if (
                isinstance(resource, dict)
                and "blob" in resource
                and not is_base64(resource["blob"])
            ):
                problem = f"the embedded resource of block {i} has a blob that is not base64"
        if problem is not None:
            session.report("TOOL-BINARY-BASE64", problem, [msg.frame], index=i)
            return


def resource_links(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A resource_link block is a Resource: it has a uri and a name."""
    for i, block in enumerate(_blocks(result)):
        if block.get("type") == "resource_link" and not (
            isinstance(block.get("uri"), str) and isinstance(block.get("name"), str)
        ):
            session.report(
                "TOOL-RESOURCE-LINK-SHAPE",
                f"resource_link block {i} needs a string uri and name",
                [msg.frame],
                index=i,
            )
            return


def structured_text(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """With structuredContent, a text block SHOULD hold the same JSON (for older clients)."""
    if "structuredContent" not in result or result.get("isError") is True:
        return
    structured = result["structuredContent"]
    # SDKs wrap a tool's plain return value as {"result": value} (their outputSchema
    # says so) and put the value itself in the text block: that text carries the
    # same information, so it counts.
    wrapped = (
        next(iter(structured.values()))
        if isinstance(structured, dict) and len(structured) == 1
        else _NOTHING
    )
    compact = _compact(structured)
    for block in _blocks(result):
        text = block.get("text")
        if block.get("type") != "text" or not isinstance(text, str):
            continue
        if text in (wrapped, compact):
            return
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        if value in (structured, wrapped):
            return
    session.report(
        "TOOL-STRUCTURED-TEXT",
        "the tool result has structuredContent but no text block holding the same JSON; "
        "clients without structured output see nothing of it",
        [msg.frame],
        severity="warning",
    )


def _compact(value: Any) -> str | object:
    """``value`` as compact JSON text (orjson's), when that text parses back to ``value``.

    ``structured_text``'s usual match, found without parsing the text block:
    servers write the block with a compact serializer (orjson, JSON.stringify),
    and a text equal to this one parses to ``value``, which the parse would
    have found equal (1K-byte results: a third of the parse and the
    comparison). orjson writes a NaN or an infinity (which only the exact
    parser of a trace line reads) as ``null``, which parses back to None: a
    text holding ``null`` is left to the parse, and so is any value orjson
    does not write (an integer beyond 64 bits, a lone surrogate, deep nesting).
    """
    try:
        raw = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is one
        return _NOTHING
    # find, not ``in``: CPython 3.11's ``bytes in bytes`` first tries the operand
    # as an integer and clears the TypeError (about 1.8K instructions).
    if raw.find(b"null") >= 0:
        return _NOTHING
    return raw.decode()


def embedded_resources(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A server that returns embedded resources SHOULD implement the resources capability."""
    caps = session.state.server_caps
    if caps is None or "resources" in caps:
        return
    if any(block.get("type") == "resource" for block in _blocks(result)):
        session.report(
            "TOOL-EMBEDDED-RES-CAP",
            "the tool result embeds a resource, but the server does not declare the resources "
            "capability",
            [msg.frame],
        )


@rule("TOOL-ANNOTATIONS-SHAPE", on=RESULT, methods=("tools/list",))
def tool_annotations(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Tool annotations: the four hints are booleans, title is a string."""
    # The verdict is the result's alone: a listing sent again byte for byte
    # after one without a finding has none either (rules/repeats.py).
    if repeats.clean_before(session, msg, result, "TOOL-ANNOTATIONS-SHAPE"):
        return
    clean = True
    for tool in _blocks(result, "tools"):
        annotations = tool.get("annotations")
        if annotations is None:
            continue
        bad = (
            ["annotations"]
            if not isinstance(annotations, dict)
            else [h for h in _HINTS if h in annotations and not isinstance(annotations[h], bool)]
            + (
                ["title"]
                if "title" in annotations and not isinstance(annotations["title"], str)
                else []
            )
        )
        if bad:
            session.report(
                "TOOL-ANNOTATIONS-SHAPE",
                f"tool {str(tool.get('name'))[:80]!r} has malformed annotations: " + ", ".join(bad),
                [msg.frame],
                tool=tool.get("name"),
                fields=bad,
            )
            clean = False
    if clean:
        repeats.judged_clean(session, msg, result, "TOOL-ANNOTATIONS-SHAPE")


# --------------------------------------------------------------------------- resources


def _uris(method: str, result: dict[str, Any]) -> list[Any]:
    if method == "resources/list":
        return [r.get("uri") for r in _blocks(result, "resources")]
    if method == "resources/read":
        return [c.get("uri") for c in _blocks(result, "contents")]
    return [
        b.get("uri") if b.get("type") == "resource_link" else (b.get("resource") or {}).get("uri")
        for b in _blocks(result)
        if b.get("type") in ("resource_link", "resource")
        and isinstance(b.get("resource", {}), dict)
    ]


def _report_bad_uri(session: Session, msg: Msg, uri: str) -> None:
    session.report(
        "RES-URI",
        f"resource uri {uri[:120]!r} is not a valid URI (RFC 3986: a scheme, ':', no whitespace)",
        [msg.frame],
        uri=uri[:500],
    )


def resource_uris(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Resource URIs are RFC 3986 URIs: a scheme, a colon, and no whitespace."""
    method = msg.request.method if msg.request is not None else ""
    for uri in _uris(method, result):
        if isinstance(uri, str) and not _uri_ok(uri):
            _report_bad_uri(session, msg, uri)
            return


def _annotation_problems(annotations: Any) -> list[str]:
    if not isinstance(annotations, dict):
        return ["annotations is not an object"]
    problems = []
    audience = annotations.get("audience")
    if "audience" in annotations and not (
        isinstance(audience, list) and all(a in ("user", "assistant") for a in audience)
    ):
        problems.append("audience must list only 'user' and 'assistant'")
    priority = annotations.get("priority")
    if "priority" in annotations and not (
        isinstance(priority, int | float) and not isinstance(priority, bool) and 0 <= priority <= 1
    ):
        problems.append("priority must be a number from 0 to 1")
    modified = annotations.get("lastModified")
    if "lastModified" in annotations and not (
        isinstance(modified, str) and _ISO8601.match(modified)
    ):
        problems.append("lastModified must be an ISO 8601 date-time")
    return problems


def annotations(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Annotations: audience within user/assistant, priority in [0, 1], lastModified ISO 8601."""
    items = (
        _blocks(result, "resources")
        + _blocks(result, "resourceTemplates")
        + _blocks(result, "contents")
        + _blocks(result)
    )
    for item in items:
        if "annotations" in item:
            problems = _annotation_problems(item["annotations"])
            if problems:
                session.report(
                    "RES-ANNOTATIONS",
                    "malformed annotations: " + "; ".join(problems),
                    [msg.frame],
                    problems=problems,
                )
                return


_RESOURCE_KEYS = {
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "resources/read": "contents",
}


@rule("RES-URI", "RES-ANNOTATIONS", on=RESULT, methods=tuple(_RESOURCE_KEYS))
def resource_items(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Resource URIs and annotations of a resources/* result, in one pass over its items."""
    method = msg.request.method if msg.request is not None else ""
    items = result.get(_RESOURCE_KEYS.get(method, ""))
    if type(items) is not list:
        return
    # A listing's verdict is its own (a read's contents differ each time): one
    # sent again byte for byte after one without a finding has none either.
    listing = method != "resources/read"
    if listing and repeats.clean_before(session, msg, result, "RES-URI"):
        return
    bad_uri = annotated = False
    for item in items[:MAX_ITEMS]:
        if type(item) is not dict:
            continue
        uri = item.get("uri")
        if not bad_uri and type(uri) is str and not _uri_ok(uri):
            bad_uri = True
            _report_bad_uri(session, msg, uri)
        if "annotations" in item:
            annotated = True
    if annotated:
        annotations(session, msg, result)  # judged afresh each time
    elif listing and not bad_uri:
        repeats.judged_clean(session, msg, result, "RES-URI")


# --------------------------------------------------------------------------- prompts


@rule("PROMPT-EMBEDDED", on=RESULT, methods=("prompts/get",))
def prompt_embedded(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """An embedded resource in a prompt has a valid URI and text or a base64 blob."""
    for i, message in enumerate(_blocks(result, "messages")):
        content = message.get("content")
        if not isinstance(content, dict) or content.get("type") != "resource":
            continue
        resource = content.get("resource")
        ok = (
            isinstance(resource, dict)
            and isinstance(resource.get("uri"), str)
            and _URI.match(resource["uri"]) is not None
            and (isinstance(resource.get("text"), str) or is_base64(resource.get("blob")))
        )
        if not ok:
            session.report(
                "PROMPT-EMBEDDED",
                f"prompt message {i} embeds a resource without a valid uri and text or blob",
                [msg.frame],
                index=i,
            )
            return


# --------------------------------------------------------------------------- icons


def _icons(method: str, result: dict[str, Any]) -> list[Any]:
    owners: list[dict[str, Any]] = []
    if method == "initialize":
        info = result.get("serverInfo")
        owners = [info] if isinstance(info, dict) else []
    else:
        for key in ("tools", "prompts", "resources", "resourceTemplates"):
            owners += _blocks(result, key)
    icons: list[Any] = []
    for owner in owners:
        value = owner.get("icons")
        if value is not None:
            icons += value[:MAX_ITEMS] if isinstance(value, list) else [value]
    return icons


_ICON_METHODS = (
    "initialize",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
)


@rule("ICON-SHAPE", "ICON-SAFE-SCHEME", on=RESULT, methods=_ICON_METHODS)
def icons(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Icons: a src URI (https: or data:), optional mimeType, sizes[], theme light|dark."""
    method = msg.request.method if msg.request is not None else ""
    # The verdict is the result's alone: a listing sent again byte for byte
    # after one without a finding has none either (rules/repeats.py).
    if method != "initialize" and repeats.clean_before(session, msg, result, "ICON-SHAPE"):
        return
    for icon in _icons(method, result):
        src = icon.get("src") if isinstance(icon, dict) else None
        sizes = icon.get("sizes") if isinstance(icon, dict) else None
        ok = (
            isinstance(src, str)
            and (
                sizes is None
                or (isinstance(sizes, list) and all(isinstance(z, str) for z in sizes))
            )
            and icon.get("theme", "light") in ("light", "dark")
            and ("mimeType" not in icon or isinstance(icon["mimeType"], str))
        )
        if not ok:
            session.report(
                "ICON-SHAPE",
                "an icon needs a string src (and sizes as strings, theme light or dark)",
                [msg.frame],
            )
            return
        scheme = src.split(":", 1)[0].lower() if ":" in src else ""
        if scheme not in ("https", "data"):
            session.report(
                "ICON-SAFE-SCHEME",
                f"icon src {src[:80]!r} uses {scheme or 'no'} scheme; clients accept only "
                "https: and data: icons (and must reject others)",
                [msg.frame],
                scheme=scheme,
                severity="warning",  # HEUR for the server that emits it (catalogue)
            )
            return
    if method != "initialize":
        repeats.judged_clean(session, msg, result, "ICON-SHAPE")
