"""Facts about MCP protocol versions: eras, methods and who may send them.

The method table is the catalogue's §12, generated there from each version's
``schema.ts`` unions ``ClientRequest``, ``ServerRequest``, ``ClientNotification``
and ``ServerNotification``.
"""

from __future__ import annotations

import re

V1, V2, V3, V4, V5 = "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"
VERSIONS = (V1, V2, V3, V4, V5)
HANDSHAKE_VERSIONS = (V1, V2, V3, V4)

HANDSHAKE = "handshake"
STATELESS = "stateless"

#: Per-request version key of the stateless era (S/2026-07-28/basic/index.mdx § _meta).
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

VERSION_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}$")

#: JSON-RPC 2.0 §4: "Method names that begin with the word rpc followed by a
#: period character (U+002E or ASCII 46) are reserved for rpc-internal methods".
RESERVED_PREFIX = "rpc."
#: What the name of every MCP notification begins with (schema.ts).
NOTIFICATION_PREFIX = "notifications/"

C, S, BOTH = "c2s", "s2c", "both"
_ALL4 = (V1, V2, V3, V4)

# method -> {version: direction}; a version missing from the map lacks the method.
_TABLE: dict[str, dict[str, str]] = {}


def _add(method: str, direction: str, versions: tuple[str, ...], v5: str | None = None) -> None:
    entry = {v: direction for v in versions}
    if v5 is not None:
        entry[V5] = v5
    _TABLE[method] = entry


_add("completion/complete", C, _ALL4, C)
_add("elicitation/create", S, (V3, V4))
_add("initialize", C, _ALL4)
_add("logging/setLevel", C, _ALL4)
_add("notifications/cancelled", BOTH, _ALL4, BOTH)
_add("notifications/elicitation/complete", S, (V4,))
_add("notifications/initialized", C, _ALL4)
_add("notifications/message", S, _ALL4, S)
_add("notifications/progress", BOTH, _ALL4, S)
_add("notifications/prompts/list_changed", S, _ALL4, S)
_add("notifications/resources/list_changed", S, _ALL4, S)
_add("notifications/resources/updated", S, _ALL4, S)
_add("notifications/roots/list_changed", C, _ALL4)
_add("notifications/subscriptions/acknowledged", S, (), S)
_add("notifications/tasks/status", BOTH, (V4,))
_add("notifications/tools/list_changed", S, _ALL4, S)
_add("ping", BOTH, _ALL4)
_add("prompts/get", C, _ALL4, C)
_add("prompts/list", C, _ALL4, C)
_add("resources/list", C, _ALL4, C)
_add("resources/read", C, _ALL4, C)
_add("resources/subscribe", C, _ALL4)
_add("resources/templates/list", C, _ALL4, C)
_add("resources/unsubscribe", C, _ALL4)
_add("roots/list", S, _ALL4)
_add("sampling/createMessage", S, _ALL4)
_add("server/discover", C, (), C)
_add("subscriptions/listen", C, (), C)
for _m in ("tasks/cancel", "tasks/get", "tasks/list", "tasks/result"):
    _add(_m, BOTH, (V4,))
_add("tools/call", C, _ALL4, C)
_add("tools/list", C, _ALL4, C)

#: Methods the stateless era removed (catalogue MOD-REMOVED).
REMOVED_IN_V5 = frozenset(m for m, e in _TABLE.items() if V5 not in e and any(e.values()))

KNOWN_METHODS = frozenset(_TABLE)

#: Paginated list methods (S/<v>/server/utilities/pagination.mdx).
PAGINATED = frozenset(
    {"resources/list", "resources/templates/list", "prompts/list", "tools/list", "tasks/list"}
)

LOG_LEVELS = frozenset(
    {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
)
LOG_LEVEL_ORDER = {
    level: i
    for i, level in enumerate(
        ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    )
}


def direction_for(method: str, version: str | None) -> str | None:
    """Who may send ``method`` in ``version``: ``c2s``, ``s2c``, ``both`` or None (absent).

    With an unknown version the union over all versions is used.
    """
    # Every request and notification asks this: answer from the table built at
    # import for the known methods and versions.
    known = DIRECTIONS.get(method)
    if known is not None and version in known:
        return known[version]
    return _direction_for(method, version)


def _direction_for(method: str, version: str | None) -> str | None:
    entry = _TABLE.get(method)
    if entry is None:
        return None
    if version is not None and version in VERSIONS:
        return entry.get(version)
    directions = set(entry.values())
    if not directions:
        return None
    if len(directions) == 1:
        return directions.pop()
    return BOTH


#: direction_for for every known method and every known version (and None).
DIRECTIONS: dict[str, dict[str | None, str | None]] = {
    method: {version: _direction_for(method, version) for version in (*VERSIONS, None)}
    for method in _TABLE
}


def exists_in(method: str, version: str) -> bool:
    """Whether ``method`` is defined in ``version``'s schema."""
    entry = _TABLE.get(method)
    return entry is not None and version in entry


def is_known_version(version: object) -> bool:
    """Whether ``version`` names a published protocol version."""
    return version in VERSIONS


def version_at_least(version: str | None, floor: str) -> bool:
    """Date-ordered comparison of version strings; unknown versions are False."""
    return version is not None and version >= floor
