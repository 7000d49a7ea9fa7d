"""MCP Apps (``io.modelcontextprotocol/ui``, EXT-APPS-*): tools that render a ``ui://`` view.

A tool declares its view in ``_meta.ui.resourceUri``; the host reads that
resource with ``resources/read`` and renders the HTML in a sandboxed iframe
(ext-apps ``specification/2026-01-26/apps.mdx``). The extension is negotiated
like any other, in ``capabilities.extensions`` (the client's ``initialize``
capabilities, or each request's clientCapabilities in 2026-07-28).

* EXT-APPS-RESOURCE: "URI MUST start with ``ui://`` scheme", "``mimeType`` MUST
  be ``text/html;profile=mcp-app``" (§ UI Resource Format > Content
  Requirements), judged on ``resources/read`` of a ``ui://`` URI (the prefix
  "will be reserved for MCP Apps"); that the HTML is in ``text`` or ``blob`` is
  any resource's rule (RES-READ-SHAPE).
* EXT-APPS-TOOL-URI: the tool's ``resourceUri`` is a ``ui://`` URI and
  "Resource MUST exist on the server" (§ Resource Discovery > Behavior).
  Servers "MAY omit UI-only resources from resources/list", so only a failed
  read shows a missing resource.
* EXT-APPS-NEGOTIATED: "Servers SHOULD check client capabilities before
  registering UI-enabled tools" (§ Client<>Server Capability Negotiation >
  Server Behavior).
* EXT-APPS-VISIBILITY: ``McpUiToolMeta.visibility?: Array<"model" | "app">``
  (§ Resource Discovery): "Who can access this tool", "defaults to
  ``["model", "app"]`` if omitted". The host hides a tool from the model, or
  refuses the app's calls, by these values, so a value of another type or an
  unknown member leaves the tool's audience undefined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.extensions import UI, client_caps_for, declares
from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import S2C
from mcpsniff.core.rules.registry import ERROR, RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("EXT-APPS-RESOURCE", "EXT-APPS-TOOL-URI", "EXT-APPS-NEGOTIATED", "EXT-APPS-VISIBILITY")
#: The audiences ``_meta.ui.visibility`` may name.
AUDIENCES = frozenset({"model", "app"})

SCHEME = "ui://"
MIME_TYPE = "text/html;profile=mcp-app"
VIEW_WINDOW = 1024
_VIEWS = "app_views"


def _views(session: Session) -> BoundedMap:
    """resourceUri -> the tool that named it, from the tools/list results."""
    found = session.state.rule_state.get(_VIEWS)
    if found is None:
        found = session.state.rule_state[_VIEWS] = BoundedMap(VIEW_WINDOW)
    return found


def _mime(value: Any) -> str | None:
    """A MIME type compared as RFC 2045 does: case-blind type, no spaces, no quotes."""
    if not isinstance(value, str):
        return None
    kind, _, parameters = value.partition(";")
    parameters = parameters.replace(" ", "").replace('"', "")
    return kind.strip().lower() + (";" + parameters if parameters else "")


@rule(
    "EXT-APPS-TOOL-URI",
    "EXT-APPS-NEGOTIATED",
    "EXT-APPS-VISIBILITY",
    on=RESULT,
    methods=("tools/list",),
)
def tools_listed(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Tools with a view: a ``ui://`` resourceUri, for a client that declared the extension."""
    tools = result.get("tools")
    request = msg.request
    if not isinstance(tools, list) or request is None or msg.direction != S2C:
        return
    with_view = []
    for tool in tools[:1000]:
        meta = tool.get("_meta") if type(tool) is dict else None
        ui = meta.get("ui") if type(meta) is dict else None
        if type(ui) is not dict:
            continue
        if "visibility" in ui:
            _visibility(session, msg, str(tool.get("name"))[:60], ui["visibility"])
        if "resourceUri" not in ui:
            continue
        name = str(tool.get("name"))[:60]
        with_view.append(name)
        uri = ui["resourceUri"]
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            session.report(
                "EXT-APPS-TOOL-URI",
                f"tool {name!r} names its view {str(uri)[:80]!r}; _meta.ui.resourceUri must be "
                "a ui:// URI",
                [msg.frame],
                tool=name,
            )
            continue
        _views(session).put(uri, name)
    if with_view and declares(client_caps_for(session, request.params), UI) is False:
        names = ", ".join(repr(n) for n in with_view[:3]) + (", ..." if len(with_view) > 3 else "")
        session.report(
            "EXT-APPS-NEGOTIATED",
            f"the server lists tools with an MCP App view ({names}), but the client did not "
            f"declare the {UI} "
            "extension; a server should offer those tools only to a client that renders them",
            [msg.frame],
            tools=with_view[:20],
        )


def _visibility(session: Session, msg: Msg, name: str, visibility: Any) -> None:
    """``_meta.ui.visibility``: an array of "model" and "app"."""
    if isinstance(visibility, list) and all(
        isinstance(v, str) and v in AUDIENCES for v in visibility
    ):
        return
    shown = str(visibility)[:80]
    session.report(
        "EXT-APPS-VISIBILITY",
        f'tool {name!r} has _meta.ui.visibility {shown}; it must be an array of "model" and '
        '"app" (who may see and call the tool), so the host cannot tell who may use it',
        [msg.frame],
        tool=name,
    )


@rule("EXT-APPS-RESOURCE", "EXT-APPS-TOOL-URI", on=RESULT, methods=("resources/read",))
def view_read(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A ``ui://`` resource is HTML of the MCP App profile, and it exists."""
    request = msg.request
    uri = (request.params or {}).get("uri") if request is not None else None
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or msg.direction != S2C:
        return
    contents = result.get("contents")
    if isinstance(contents, list) and not contents:
        _missing(session, msg, uri, "an empty contents array")
        return
    if not isinstance(contents, list):
        return  # the resources/read shape is methods.py's
    problems = []
    for item in contents[:50]:
        if type(item) is not dict or not str(item.get("uri", "")).startswith(SCHEME):
            continue
        if _mime(item.get("mimeType")) != MIME_TYPE:
            problems.append(f"mimeType {str(item.get('mimeType'))[:60]!r}, not {MIME_TYPE!r}")
    if problems:
        session.report(
            "EXT-APPS-RESOURCE",
            f"the MCP App view {uri[:80]!r} was read with " + "; ".join(problems[:4]),
            [request.seq, msg.frame],
            uri=uri[:200],
            problems=problems[:10],
        )


@rule("EXT-APPS-TOOL-URI", on=ERROR, methods=("resources/read",))
def view_missing(session: Session, msg: Msg) -> None:
    """Reading the view a tool names fails: the resource does not exist."""
    request = msg.request
    uri = (request.params or {}).get("uri") if request is not None else None
    if isinstance(uri, str) and msg.direction == S2C:
        _missing(session, msg, uri, f"error {msg.error_code!r}")


def _missing(session: Session, msg: Msg, uri: str, answer: str) -> None:
    tool = _views(session).get(uri)
    if tool is None:
        return
    request = msg.request
    session.report(
        "EXT-APPS-TOOL-URI",
        f"tool {tool!r} names the view {uri[:80]!r}, but reading it got {answer}; the "
        "resource a tool's _meta.ui.resourceUri names must exist on the server",
        [request.seq, msg.frame] if request is not None else [msg.frame],
        tool=tool,
        uri=uri[:200],
    )
