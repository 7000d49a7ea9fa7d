"""``mcpsniff install`` / ``uninstall``: run a client's stdio MCP servers under mcpsniff."""
