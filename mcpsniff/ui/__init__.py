"""The web views over traces: ``mcpsniff ui`` (live, served) and ``mcpsniff report`` (one file)."""
