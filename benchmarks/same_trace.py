"""The same observations through two versions of mcpsniff: are the traces byte-identical?

A speed-up of the analysis process must not move one byte of the trace.
This feeds ``analysis_calls.py``'s observations (the stdio bench's calls,
fixed times, with the hostile frames of ``--hostile``: secrets in any case,
hidden text, bad JSON and UTF-8, huge ids, CRLF, batches) through the working
tree's ``mcpsniff`` and through a git revision's (``--base``, exported to a
temporary folder), with redaction on and off, and compares the two traces
byte for byte. Exit status 1 on any difference.

Usage::

    python benchmarks/same_trace.py --base main [--calls 640]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: ``analysis_calls.py``'s options for each comparison.
VARIANTS = (
    ("--hostile",),
    ("--hostile", "--no-redact"),
    (),
    # The recording lane of ``--lanes 2`` (its frames-only lines: issue 30).
    ("--hostile", "--lane", "recording"),
    ("--hostile", "--no-redact", "--lane", "recording"),
    ("--lane", "recording"),
)


def _trace(tree: Path, calls: int, options: tuple[str, ...], out: Path) -> None:
    """Write the trace of ``analysis_calls.py`` run with ``tree``'s ``mcpsniff``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = str(HERE / "analysis_calls.py")
    subprocess.run(
        [sys.executable, script, str(calls), *options, "--trace", str(out)],
        check=True,
        env=env,
        cwd=tree,
    )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the git revision to compare with")
    parser.add_argument("--calls", type=int, default=640)
    args = parser.parse_args(argv)
    differ = 0
    with tempfile.TemporaryDirectory(prefix="same-trace-") as folder:
        base = Path(folder) / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.base, "mcpsniff"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        for options in VARIANTS:
            ours, theirs = Path(folder) / "ours.jsonl", Path(folder) / "base.jsonl"
            _trace(ROOT, args.calls, options, ours)
            _trace(base, args.calls, options, theirs)
            same = filecmp.cmp(ours, theirs, shallow=False)
            differ += not same
            print(
                f"{' '.join(options) or '(calls only)':<22} {ours.stat().st_size:>10,} bytes "
                f"{'identical' if same else 'DIFFERENT'}"
            )
            ours.unlink()
            theirs.unlink()
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
