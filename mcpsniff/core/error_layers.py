"""Which layer an error belongs to, as the seed article and JSON-RPC 2.0 §5.1 name them.

JSON-RPC 2.0 §5.1: "The error codes from and including -32768 to -32000 are
reserved for pre-defined errors. Any code within this range, but not defined
explicitly below is reserved for future use." Within that range,
-32099..-32000 are "Reserved for implementation-defined server-errors"; the
rest of it is the protocol's own (-32700 parse error, -32600..-32603). Any
other code is the application's. MCP adds a fourth layer that is no JSON-RPC
error at all: a tools/call result with ``isError: true`` ("Tool Execution
Errors", MCP server/tools, Error Handling), which the protocol counts as a
success.

MCP gives some codes a meaning of its own (mcp-rules.md §12): -32002 resource
not found (2024-11-05..2025-11-25) and -32042 URL elicitation required
(2025-11-25), both inside the server-error block and both banned in
2026-07-28, which defines -32020..-32022 instead; and -1 "user rejected
sampling", an example in the sampling pages, in the application range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

PROTOCOL: Final = "protocol"
SERVER: Final = "server"
APPLICATION: Final = "application"
TOOL: Final = "tool"

#: Layer ids in the order a report lists them.
LAYERS: Final = (PROTOCOL, SERVER, APPLICATION, TOOL)

LAYER_TITLES: Final = {
    PROTOCOL: "JSON-RPC protocol error (-32768..-32600)",
    SERVER: "implementation-defined server error (-32099..-32000)",
    APPLICATION: "application error",
    TOOL: "tool error (isError: true)",
}

#: The layer's name in one timeline line.
LAYER_SHORT: Final = {
    PROTOCOL: "JSON-RPC protocol",
    SERVER: "server-error range",
    APPLICATION: "application",
    TOOL: "tool error, isError: true",
}

#: JSON-RPC 2.0 §5.1's pre-defined codes.
JSONRPC_CODES: Final = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
}

#: The codes MCP gives a meaning, and the protocol versions that give it.
MCP_CODES: Final = {
    -32002: ("Resource not found", "2024-11-05..2025-11-25"),
    -32042: ("URL elicitation required", "2025-11-25"),
    -32020: ("HeaderMismatch", "2026-07-28"),
    -32021: ("MissingRequiredClientCapability", "2026-07-28"),
    -32022: ("UnsupportedProtocolVersion", "2026-07-28"),
    -1: ("user rejected sampling (an example)", "2024-11-05..2025-11-25"),
}

#: Every code with a name, whoever defines it.
CODE_NAMES: Final = {**JSONRPC_CODES, **{code: name for code, (name, _) in MCP_CODES.items()}}

JSONRPC: Final = "JSON-RPC 2.0"
#: What a reserved code that JSON-RPC 2.0 leaves undefined is.
RESERVED_UNDEFINED: Final = "reserved for future use, undefined by JSON-RPC 2.0"
NOT_INTEGER: Final = "not an integer, which JSON-RPC 2.0 §5.1 requires"


@dataclass(frozen=True, slots=True)
class ErrorLayer:
    """The layer of one error code, and the code's name where a specification gives one."""

    layer: str
    name: str | None
    #: Who names the code: ``"JSON-RPC 2.0"``, ``"MCP 2025-11-25"``, ...
    defined_by: str | None = None
    #: What else is true of the code (reserved but undefined, not an integer).
    note: str | None = None

    @property
    def title(self) -> str:
        return LAYER_TITLES[self.layer]

    @property
    def meaning(self) -> str | None:
        """The code's name with who defines it, or the note; ``None`` when neither."""
        if self.name is not None:
            if self.defined_by is not None and self.defined_by != JSONRPC:
                return f"{self.name} ({self.defined_by})"
            return self.name
        return self.note

    @property
    def label(self) -> str:
        """Short text for a timeline line: ``Invalid params [JSON-RPC protocol]``."""
        short = f"[{LAYER_SHORT[self.layer]}]"
        return f"{self.meaning} {short}" if self.meaning else short

    def as_json(self) -> dict[str, Any]:
        """The layer as ``show --format json`` gives it."""
        obj: dict[str, Any] = {"layer": self.layer, "title": self.title}
        for key in ("name", "defined_by", "note"):
            value = getattr(self, key)
            if value is not None:
                obj[key] = value
        return obj


def error_layer(code: object) -> ErrorLayer:
    """The layer of a JSON-RPC error ``code``; anything not an integer is the application's.

    A code outside -32768..-32000 is the application's, whatever its value: the
    specification reserves only that range.
    """
    if isinstance(code, bool) or not isinstance(code, int):
        return ErrorLayer(APPLICATION, None, note=NOT_INTEGER)
    if code in JSONRPC_CODES:
        return ErrorLayer(PROTOCOL, JSONRPC_CODES[code], JSONRPC)
    layer = APPLICATION
    if -32099 <= code <= -32000:
        layer = SERVER
    elif -32768 <= code <= -32000:
        layer = PROTOCOL
    if code in MCP_CODES:
        name, versions = MCP_CODES[code]
        return ErrorLayer(layer, name, f"MCP {versions}")
    return ErrorLayer(layer, None, note=RESERVED_UNDEFINED if layer == PROTOCOL else None)


TOOL_ERROR: Final = ErrorLayer(TOOL, None, "MCP")
