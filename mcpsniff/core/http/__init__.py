"""The sans-I/O HTTP-to-MCP layer: HTTP exchanges in, frames and transport events out.

Split by job: ``headers`` (field look-ups, hop-by-hop fields), ``decoding``
(content codings), ``classify`` (which requests are MCP traffic, which streams
are legacy HTTP+SSE), ``legacy`` (the legacy endpoint and its session),
``session_keys`` (which session an exchange belongs to), ``events`` (the typed
events an exchange returns), ``exchange`` (one exchange's state machine, with
its theory of operation), ``adapter`` (observations in, replayed on exchanges).
"""
