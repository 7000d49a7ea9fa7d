"""``mcpsniff ls``: the traces in the state folder (or a folder), newest first."""
