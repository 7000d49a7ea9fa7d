"""The SDK 2.x end-to-end server (``tests/e2e/peers/sdk2_server.py``) over HTTPS.

Run it with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/mitm/peers/sdk2_tls_server.py PORT CERT KEY

It serves ``https://127.0.0.1:PORT/mcp`` with the certificate CERT and its key
KEY (the tests make both, signed by a CA of their own), and declares the
``logging`` capability (see ``sdk2_server.py``), so a conforming session has no
findings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "e2e" / "peers"))

import uvicorn
from mcp.types import SetLevelRequestParams
from sdk2_server import _set_level, server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("cert")
    parser.add_argument("key")
    ns = parser.parse_args()
    # The SDK derives `logging` from this handler alone (no public API sets it).
    server._lowlevel_server.add_request_handler(
        "logging/setLevel", SetLevelRequestParams, _set_level
    )
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=ns.port,
        ssl_certfile=ns.cert,
        ssl_keyfile=ns.key,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
