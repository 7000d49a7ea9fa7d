"""Multi-pattern engines for redaction's pre-test: is any of its hints in this frame?

Redaction (``mcpsniff/core/redact.py``) first looks for about forty lower-case
literals ("hints") in a lower-cased copy of every frame, with the Aho-Corasick
automaton of ``mcpsniff/core/hint_scan.py`` (``ahocorasick_rs``); almost every
frame has none and is recorded as it is. This script times that pre-test
against the engines the issue named, each given the same hints:

* Hyperscan (``pip install hyperscan``), case-insensitive literals, so no
  lower-cased copy: stopping at the first match, and finding all of them;
* RE2 sets (``pip install google-re2``), case-insensitive, Latin-1;
* pyahocorasick (``pip install pyahocorasick``), over a decoded lower-cased str;

and ``redact_frame`` whole, on four 1 KiB frames (the two of
``bench_stdio_relay.py``, a tools/call of prose, one with an ``api_key``).
An engine that is not installed is named and skipped. Times are the best of
``--repeat`` runs of ``--count`` calls each, in microseconds per frame.

Usage::

    python benchmarks/bench_hint_engines.py [--count 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stdio_relay import ECHO_RESULT, request_line, response_line

from mcpsniff.core.redact import _NAME_HINTS, _QUERY_HINTS, _SCANNER, redact_frame
from mcpsniff.core.secret_values import VALUE_HINTS

HINTS = [*_NAME_HINTS, *_QUERY_HINTS, *VALUE_HINTS]
PROSE = (
    b"The quarterly report shows revenue grew in every region; see the attached summary "
    b"for the figures by product line, and the appendix for the method. "
) * 7
FRAMES = {
    "bench request": request_line(12345),
    "bench response": response_line(12345, ECHO_RESULT),
    "prose call": b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"summarize",'
    b'"arguments":{"text":"' + PROSE[:900] + b'"}}}\n',
    "call with a key": b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x",'
    b'"arguments":{"api_key":"sk-abc123","text":"' + PROSE[:860] + b'"}}}\n',
}


def current(data: bytes) -> Any:
    """mcpsniff's pre-test: a lower-cased copy, then the Aho-Corasick scan."""
    return _SCANNER.scan(data.lower())


def hyperscan_engines() -> dict[str, Callable[[bytes], Any]]:
    """Hyperscan, first match and all matches (caseless: no lower-cased copy)."""
    import hyperscan

    literals = [re.escape(h.decode()).encode() for h in HINTS]
    flags = hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=literals,
        ids=list(range(len(literals))),
        elements=len(literals),
        flags=[flags] * len(literals),
    )
    scratch = hyperscan.Scratch(database)

    def first(data: bytes) -> list[int]:
        found: list[int] = []

        def on_match(number: int, start: int, end: int, flags: int, context: Any) -> bool:
            found.append(number)
            return True  # stop: "is there any?" is answered

        with contextlib.suppress(hyperscan.ScanTerminated):
            database.scan(data, match_event_handler=on_match, scratch=scratch)
        return found

    def every(data: bytes) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []

        def on_match(number: int, start: int, end: int, flags: int, context: Any) -> None:
            found.append((number, end))

        database.scan(data, match_event_handler=on_match, scratch=scratch)
        return found

    return {"hyperscan, first match": first, "hyperscan, every match": every}


def re2_engines() -> dict[str, Callable[[bytes], Any]]:
    """An RE2 set of the hints, case-insensitive, over Latin-1 bytes."""
    import re2

    options = re2.Options()
    options.case_sensitive = False
    options.encoding = re2.Options.Encoding.LATIN1
    patterns = re2.Set.SearchSet(options)
    for hint in HINTS:
        patterns.Add(re.escape(hint.decode()).encode())
    patterns.Compile()
    return {"google-re2 set": patterns.Match}


def pyahocorasick_engines() -> dict[str, Callable[[bytes], Any]]:
    """pyahocorasick over a str: the frame decoded and lower-cased first."""
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for number, hint in enumerate(HINTS):
        automaton.add_word(hint.decode("latin-1"), number)
    automaton.make_automaton()

    def first(data: bytes) -> bool:
        return next(automaton.iter(data.decode("latin-1").lower()), None) is not None

    return {"pyahocorasick": first}


def best_us(function: Callable[[bytes], Any], data: bytes, count: int, repeat: int) -> float:
    """The best of ``repeat`` runs of ``count`` calls, in microseconds per call."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(count):
            function(data)
        best = min(best, (time.perf_counter() - started) / count * 1e6)
    return best


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    engines: dict[str, Callable[[bytes], Any]] = {
        "bytes.lower() alone": bytes.lower,
        "mcpsniff: lower() + ahocorasick_rs": current,
    }
    for name, load in (
        ("hyperscan", hyperscan_engines),
        ("google-re2", re2_engines),
        ("pyahocorasick", pyahocorasick_engines),
    ):
        try:
            engines.update(load())
        except ImportError:
            print(f"{name}: not installed (pip install {name}), skipped")
    engines["redact_frame, whole"] = redact_frame
    print(
        f"{len(HINTS)} hints; microseconds per 1 KiB frame, best of {args.repeat} x {args.count:,}"
    )
    print(f"{'':38}" + "".join(f"{name:>17}" for name in FRAMES))
    for name, function in engines.items():
        cells = "".join(
            f"{best_us(function, data, args.count, args.repeat):17.2f}" for data in FRAMES.values()
        )
        print(f"{name:38}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
