"""The HTTP-to-MCP adapter lives in the core now (``mcpsniff.core.http_adapter``); its old name."""

from mcpsniff.core.http_adapter import (  # noqa: F401
    HOP_BY_HOP,
    ExchangeRecorder,
    HttpObserver,
    client_address,
    is_mcp_request,
    is_plain_request,
    lowered,
)
