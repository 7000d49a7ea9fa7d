"""A stdio "server" that answers its first request, says why on stderr, and exits 3.

Run it with any Python 3::

    python tests/replay/peers/exits_after_first.py

It stands for a server that crashes mid-session: ``replay drive`` must report
the exit once, with these stderr lines, and end at once instead of waiting
for answers that cannot come.
"""

from __future__ import annotations

import json
import sys

if __name__ == "__main__":
    request = json.loads(sys.stdin.readline())
    answer = {"jsonrpc": "2.0", "id": request.get("id"), "result": {}}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    sys.stderr.write("loading the model...\nfatal: out of memory\n")
    sys.exit(3)
