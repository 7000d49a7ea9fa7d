"""Network addresses the listeners share (the HTTP relay, replay serve, the UI, mcp)."""
