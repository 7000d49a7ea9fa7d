"""``mcpsniff mcp``: the recorded traces as an MCP server an agent reads them through."""
