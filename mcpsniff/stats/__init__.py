"""``mcpsniff stats``: per-method and per-tool counts, errors by layer, latency percentiles."""
