"""Worst-case inputs of redaction: does the cost stay linear in the frame size?

Every frame is hostile (docs/architecture.md, invariant 6). Each row is a frame made of one
short unit repeated (a hint, a name=value pair, an escaped quote ...), timed at
``--size`` bytes and at 8x that; a linear algorithm takes about 8x the time,
a quadratic one about 64x. Best of ``--repeat`` runs each. ``--module`` times
another copy of redact.py beside the installed one (for instance the one of
commit 49ad5f7: ``git show 49ad5f7:mcpsniff/core/redact.py > /tmp/redact_49ad5f7.py``).

Usage::

    python benchmarks/bench_redact_worst.py
    python benchmarks/bench_redact_worst.py --size 8000 --module /tmp/redact_49ad5f7.py

Exit status: 0 when every ratio stays under ``--max-ratio`` (default 24), 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable

from mcpsniff.core.redact import redact_frame

UNITS = (
    b"key",
    b"k",
    b"token=",
    b'"pw":',
    b"sk-",
    b"eyj",
    b"://",
    b'\\"',
    b'"a":"key",',
    b'"key":[',
    b'"key" ',
    b'{\\"key\\":',
    b'"progressToken"',
    b"Bearer ",
    b"monkey=",
    b"key:x",
)


def _best(redact: Callable[[bytes], object], frame: bytes, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        redact(frame)
        best = min(best, time.process_time() - start)
    return max(best, 1e-6)


def _load(path: str) -> Callable[[bytes], object]:
    spec = importlib.util.spec_from_file_location("other_redact", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.redact_frame


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=8_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--max-ratio", type=float, default=24.0)
    parser.add_argument("--module", help="another redact.py to time beside this one")
    args = parser.parse_args()
    redactors = {"current": redact_frame}
    if args.module:
        redactors["other"] = _load(args.module)
    worst = 0.0
    for unit in UNITS:
        small = unit * (args.size // len(unit))
        large = unit * (8 * args.size // len(unit))
        cells = []
        for name, redact in redactors.items():
            a, b = _best(redact, small, args.repeat), _best(redact, large, args.repeat)
            if name == "current":
                worst = max(worst, b / a)
            cells.append(f"{name} {a * 1e3:8.1f} ms {b * 1e3:9.1f} ms x{b / a:5.1f}")
        print(f"{unit!r:22} " + " | ".join(cells), flush=True)
    print(f"worst 8x-size ratio: {worst:.1f} (linear ~8, quadratic ~64; limit {args.max_ratio})")
    return 0 if worst <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
