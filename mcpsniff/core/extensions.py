"""Official MCP extensions: their identifiers, and who declared them.

Extensions are negotiated in the ``extensions`` member of the capabilities
(``S/2026-07-28/changelog.mdx § Minor changes`` 1; ``docs/extensions/overview.mdx
§ Negotiation``): "Clients advertise extension support in
``_meta["io.modelcontextprotocol/clientCapabilities"]`` within each request", so
in the stateless era a declaration counts for the request that carries it; in
the handshake era the ``initialize`` capabilities hold for the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.protocol import META_CLIENT_CAPS, STATELESS

if TYPE_CHECKING:
    from mcpsniff.core.session import Session

#: The tasks extension (ext-tasks ``specification/draft/tasks.md``).
TASKS = "io.modelcontextprotocol/tasks"
#: MCP Apps (ext-apps ``specification/2026-01-26/apps.mdx``).
UI = "io.modelcontextprotocol/ui"


def client_caps_for(session: Session, params: dict[str, Any] | None) -> dict[str, Any] | None:
    """The client capabilities in force for a request with ``params``; None when unknown.

    Stateless era: the request's own ``_meta`` clientCapabilities (None when
    it carries none, which MOD-META-REQUIRED reports). Handshake era: the
    capabilities of ``initialize``.
    """
    if session.state.era != STATELESS:
        return session.state.client_caps
    meta = params.get("_meta") if params is not None else None
    caps = meta.get(META_CLIENT_CAPS) if type(meta) is dict else None
    return caps if type(caps) is dict else None


def declares(caps: dict[str, Any] | None, extension: str) -> bool | None:
    """Whether ``caps`` declare ``extension`` (an object under ``extensions``); None if unknown."""
    if caps is None:
        return None
    found = caps.get("extensions")
    return type(found) is dict and type(found.get(extension)) is dict
