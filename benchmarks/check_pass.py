"""One process running the CLI's ``check --format json --jobs 1 TRACE`` N times (for callgrind).

``valgrind --tool=callgrind python benchmarks/check_pass.py TRACE N``: one
check pass costs Ir(N=2) - Ir(N=1), start-up and first imports cancelling
out (benchmarks/README.md, "Instructions of one check pass"). Run it with
``PYTHONHASHSEED=0``: hash order moves a pass by about 1% from run to run.
Output goes to /dev/null; the exit status of each pass is ignored.
"""

from __future__ import annotations

import contextlib
import os
import sys

from mcpsniff.cli.main import main


def run(trace: str, passes: int) -> None:
    """``check --format json --jobs 1 trace``, ``passes`` times, its output dropped."""
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        for _ in range(passes):
            with contextlib.redirect_stdout(devnull), contextlib.suppress(SystemExit):
                main.main(
                    ["check", "--format", "json", "--jobs", "1", trace], standalone_mode=False
                )


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]))
