"""``sdk2_server.py``'s server (official Python SDK 2.x) over Streamable HTTP.

Run it with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/e2e/peers/sdk2_http_server.py PORT [--declare-logging]

It serves ``http://127.0.0.1:PORT/mcp`` (loopback only; the SDK then turns on its
DNS rebinding protection, which accepts any ``127.0.0.1:*`` / ``localhost:*`` Host).
A 2.x client negotiates 2026-07-28 with it: ``server/discover``, then one
self-contained POST per request, with no ``initialize`` and no ``Mcp-Session-Id``.
The tools, resources and prompts, and ``--declare-logging``, are
``sdk2_server.py``'s (see there for the SDK's undeclared ``logging`` capability).
"""

from __future__ import annotations

import argparse

from mcp.types import SetLevelRequestParams
from sdk2_server import _set_level, server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--declare-logging", action="store_true")
    ns = parser.parse_args()
    if ns.declare_logging:
        # The SDK derives `logging` from this handler alone (no public API sets it).
        server._lowlevel_server.add_request_handler(
            "logging/setLevel", SetLevelRequestParams, _set_level
        )
    server.settings.log_level = "WARNING"  # no uvicorn access log
    server.run("streamable-http", host="127.0.0.1", port=ns.port)


if __name__ == "__main__":
    main()
