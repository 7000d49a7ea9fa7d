"""Which line of a trace file holds the frame or event with a given sequence number.

SARIF results point at "the trace file and line" so that a code-scanning UI
opens the trace where the problem is. The reader does not keep line numbers
(it must stay fast for ``check``), so this module scans the file once more,
looking only at the fixed prefix every frame and event line starts with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

# Frames and events are written compact, "type" first, "seq" second (trace/codec.py).
_SEQ_PREFIX = re.compile(rb'\{"type":"(?:frame|event)","seq":(\d{1,19})[,}]')


def lines_of(path: Path, seqs: Iterable[int]) -> dict[int, int]:
    """Map each wanted sequence number to its 1-based line in ``path`` (first one wins).

    Memory is bounded by the number of wanted sequence numbers, not by the file;
    numbers not found (a synthetic session end, a torn line) are simply absent.
    """
    wanted = set(seqs)
    found: dict[int, int] = {}
    if not wanted:
        return found
    with open(path, "rb") as stream:
        for number, line in enumerate(stream, start=1):
            match = _SEQ_PREFIX.match(line, 0, 64)
            if match is None:
                continue
            seq = int(match.group(1))
            if seq in wanted and seq not in found:
                found[seq] = number
                if len(found) == len(wanted):
                    break
    return found
