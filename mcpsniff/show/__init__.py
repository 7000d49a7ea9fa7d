"""``mcpsniff show``: the timeline, message bodies, raw bytes, JSON lines and filters."""
