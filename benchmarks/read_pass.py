"""One process reading a trace N times one way (for callgrind): the readers' cost per pass.

``valgrind --tool=callgrind python benchmarks/read_pass.py WAY TRACE N``: one
pass costs Ir(N=2) - Ir(N=1), start-up and first imports cancelling out
(benchmarks/README.md, "Reading two-lane traces"). ``WAY`` is one of:

* ``records``: every record of ``TraceReader.records()`` (export har, redact, the filter's index);
* ``stats``: the CLI's ``stats --format json TRACE`` (``LazyTraceRecords``);
* ``show``: the CLI's ``show TRACE`` (``TraceTail``);
* ``ui``: ``ui.follow.trace_records`` (``OffsetTail``: the UI, the report, the agent).

Run it with ``PYTHONHASHSEED=0``. Output goes to /dev/null.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from pathlib import Path

from mcpsniff.cli.main import main
from mcpsniff.trace.reader import TraceReader
from mcpsniff.ui.follow import trace_records


def run(way: str, trace: str, passes: int) -> None:
    """Read ``trace`` ``passes`` times the ``way`` named."""
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        for _ in range(passes):
            if way == "records":
                with TraceReader(trace) as reader:
                    deque(reader.records(), maxlen=0)
            elif way == "ui":
                deque(trace_records(Path(trace)), maxlen=0)
            else:
                args = [way, trace] + (["--format", "json"] if way == "stats" else [])
                with contextlib.redirect_stdout(devnull), contextlib.suppress(SystemExit):
                    main.main(args, standalone_mode=False)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]))
