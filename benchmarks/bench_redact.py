"""Benchmark the per-frame cost of redaction against parsing the same frame.

Redaction runs on every recorded frame, in the analysis process, before the
analyzer parses the frame. Its cost is reported per frame and as a ratio to
``orjson.loads`` of the same bytes (which the analyzer pays anyway), for the
frame shapes a session is made of: a 1 KiB ``tools/call`` without secrets
(the commonest frame), one that carries a ``progressToken`` (a name hint that
is not a secret), one with secrets by name and by value, one with a URL
without credentials (a value hint, ``://``), an error response (its
``"code"`` is a query-name hint), a 4 KiB tool result with JSON inside
its text (the nested path), and a resources/list answer with 100 URIs.

Times are CPU time of this process, best of ``--repeat`` interleaved rounds,
so a loaded machine shifts both sides alike.

Usage::

    python benchmarks/bench_redact.py
    python benchmarks/bench_redact.py --frames 20000 --repeat 5
    python benchmarks/bench_redact.py --module path/to/other_redact.py   # compare another version

Exit status: 0 when the commonest frame (no secrets) costs at most
``--max-ratio`` (default 0.5) times its parse, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable

import orjson

from mcpsniff.core.redact import redact_frame

_FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 16


def _frames() -> dict[str, bytes]:
    call = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": _FILLER[:900], "limit": 10}},
    }
    progress = json.loads(json.dumps(call))
    progress["params"]["_meta"] = {"progressToken": "p-42"}
    secrets = json.loads(json.dumps(call))
    secrets["params"]["arguments"].update(
        {"api_key": "abc123", "auth": "Bearer abcdef0123456789", "url": "https://u:pw@h/x"}
    )
    linked = json.loads(json.dumps(call))
    linked["params"]["arguments"]["source"] = "https://example.com/docs/page?lang=en"
    error = {"jsonrpc": "2.0", "id": 42, "error": {"code": -32602, "message": _FILLER[:900]}}
    listing = {
        "jsonrpc": "2.0",
        "id": 42,
        "result": {
            "resources": [
                {"uri": f"file:///home/user/project/src/module_{i}.py", "name": f"module_{i}.py"}
                for i in range(100)
            ]
        },
    }
    inner = json.dumps({"rows": [{"name": f"r{i}", "note": _FILLER[:150]} for i in range(20)]})
    result = {"jsonrpc": "2.0", "id": 42, "result": {"content": [{"type": "text", "text": inner}]}}
    return {
        "tools/call 1 KiB, no secret": orjson.dumps(call) + b"\n",
        "tools/call + progressToken": orjson.dumps(progress) + b"\n",
        "tools/call with 3 secrets": orjson.dumps(secrets) + b"\n",
        "tools/call with a URL": orjson.dumps(linked) + b"\n",
        'error response ("code")': orjson.dumps(error) + b"\n",
        "4 KiB result, JSON in text": orjson.dumps(result) + b"\n",
        "resources/list, 100 URIs": orjson.dumps(listing) + b"\n",
    }


def _cpu(fn: Callable[[bytes], object], frame: bytes, count: int) -> float:
    start = time.process_time()
    for _ in range(count):
        fn(frame)
    return time.process_time() - start


def _load(path: str) -> Callable[[bytes], tuple[bytes, int]]:
    spec = importlib.util.spec_from_file_location("other_redact", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.redact_frame  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-ratio", type=float, default=0.5)
    parser.add_argument("--module", help="a redact.py to measure instead of mcpsniff's")
    args = parser.parse_args()
    redact = _load(args.module) if args.module else redact_frame
    worst_common = 0.0
    print(f"{'frame':<30} {'bytes':>6} {'parse us':>9} {'redact us':>10} {'ratio':>6} replaced")
    for label, frame in _frames().items():
        parse = min(_cpu(orjson.loads, frame, args.frames) for _ in range(args.repeat))
        cost = min(_cpu(redact, frame, args.frames) for _ in range(args.repeat))
        ratio = cost / parse
        replaced = redact(frame)[1]
        per = 1e6 / args.frames
        print(
            f"{label:<30} {len(frame):>6} {parse * per:>9.2f} {cost * per:>10.2f} "
            f"{ratio:>6.2f} {replaced}"
        )
        if label.endswith("no secret"):
            worst_common = ratio
    ok = worst_common <= args.max_ratio
    print(f"commonest frame: redaction / parse = {worst_common:.2f} (target <= {args.max_ratio})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
