"""mcpsniff: a protocol-sniffing proxy and traffic recorder for MCP."""

__version__ = "0.1.0"
