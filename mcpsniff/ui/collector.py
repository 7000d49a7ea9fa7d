"""Pausing Python's cycle collector while a trace is read in bulk.

Reading a long trace allocates millions of containers that live on (a
batch frame of 100,000 elements parses into over a million objects; a
model's views, records and dicts), and the cycle collector, which runs
after every few hundred such allocations, walks the whole heap again and
again while it grows: half the CPU time of ``report`` and of the UI's
queries on a batch of 100,000 elements went there. Nothing the readers
build refers back to itself (the parsed JSON, the records and the views
are trees), so reference counting frees it all; the collector is paused for
the length of a bulk read and runs again as usual after it, when it then
looks at what was built once.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
#: Bulk reads under way (the UI runs several in threads), and whether the collector
#: ran before the first of them began: it runs again when the last one ends.
_paused = 0
_was_enabled = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off for the ``with`` block (and any block overlapping it)."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
