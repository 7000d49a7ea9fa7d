"""Whether an output path named with ``-o`` holds an mcpsniff trace.

``-o`` replaces the file it names, as the user asked, with one exception: a
trace. ``export har t.jsonl -o t2.jsonl`` or ``report t.jsonl -o t2.jsonl`` (a
slip of the shell's completion) would replace a recording that exists nowhere
else, so the commands that write a file refuse a trace there.
"""

from __future__ import annotations

from pathlib import Path

from mcpsniff.trace.codec import FORMAT_NAME


def holds_a_trace(output: Path) -> bool:
    """Whether ``output`` is a regular file that starts with an mcpsniff trace header."""
    try:
        if not output.is_file():  # never open a FIFO or a device to peek at it
            return False
        with open(output, "rb") as handle:
            first = handle.read(200)
    except OSError:
        return False
    return first.startswith(b'{"type":"header"') and FORMAT_NAME.encode() in first
