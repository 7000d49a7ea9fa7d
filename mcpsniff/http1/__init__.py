"""Sans-I/O HTTP/1.1 message framing (RFC 9112): bytes in, typed events out.

Pure like ``mcpsniff.core``: no sockets, no clock. The HTTP relay's connection
code (``mcpsniff.intercept.http_wire``) feeds it each direction's bytes and matches
on the events it returns.
"""
