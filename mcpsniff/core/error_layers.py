"""Which layer an error belongs to, as the seed article and JSON-RPC 2.0 §5.1 name them.

JSON-RPC 2.0 §5.1: "The error codes from and including -32768 to -32000 are
reserved for pre-defined errors." Within that range, -32099..-32000 are
"Reserved for implementation-defined server-errors"; the rest of it is the
protocol's own (-32700 parse error, -32600..-32603). Any other code is the
application's. MCP adds a fourth layer that is no JSON-RPC error at all: a
tools/call result with ``isError: true`` ("Tool Execution Errors", MCP
server/tools, Error Handling), which the protocol counts as a success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

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

#: JSON-RPC 2.0 §5.1's pre-defined codes, and the MCP codes the specs define.
CODE_NAMES: Final = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
    -32002: "Resource not found",
    -32042: "URL elicitation required",
}


@dataclass(frozen=True, slots=True)
class ErrorLayer:
    """The layer of one error code, and the code's name where the specs give one."""

    layer: str
    name: str | None

    @property
    def title(self) -> str:
        return LAYER_TITLES[self.layer]


def error_layer(code: object) -> ErrorLayer:
    """The layer of a JSON-RPC error ``code``; anything not an integer is the application's.

    A code outside -32768..-32000 is the application's, whatever its value: the
    specification reserves only that range.
    """
    if isinstance(code, bool) or not isinstance(code, int):
        return ErrorLayer(APPLICATION, None)
    if -32099 <= code <= -32000:
        return ErrorLayer(SERVER, CODE_NAMES.get(code))
    if -32768 <= code <= -32000:
        return ErrorLayer(PROTOCOL, CODE_NAMES.get(code))
    return ErrorLayer(APPLICATION, None)


TOOL_ERROR: Final = ErrorLayer(TOOL, None)
