"""Wiring one ``replay drive`` run: links, driver, own trace, report, exit status."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcpsniff.core.model import FindingRecord
from mcpsniff.replay.compare import PathPart
from mcpsniff.replay.drive import Driver, Link, LinkSink
from mcpsniff.replay.links import HttpLink, StdioLink
from mcpsniff.replay.report import result_lines
from mcpsniff.replay.script import ReplayError, Script
from mcpsniff.replay.tap import Tap

EXIT_OK, EXIT_DIFFERENT, EXIT_ERROR = 0, 1, 2


async def run_drive(
    script: Script,
    command: list[str],
    url: str | None,
    ignores: list[tuple[PathPart, ...]],
    timeout: float,
    trace_path: Path | None,
    out: Callable[[str], None],
    warn: Callable[[str], None],
) -> int:
    """Drive the live server and report; returns the exit status."""
    tap = Tap(
        transport="http" if url else "stdio",
        path=trace_path,
        meta={
            "source": "mcpsniff replay drive",
            "replayed": script.path,
            "command": command,
            "url": url,
            "redacted": False,
        },
    )
    driver = Driver(script, ignores, timeout)
    links: list[StdioLink | HttpLink] = []

    async def connect(session: int, sink: LinkSink) -> Link:
        name = script.sessions[session] if script.sessions else "replay"
        link: StdioLink | HttpLink
        if url:
            link = HttpLink(url, script, tap, sink, name)
        else:
            link = StdioLink(command, tap, sink, name)
        links.append(link)
        await link.start()
        return link

    try:
        result = await driver.run(connect)
    except ReplayError:
        for link in links:
            await link.close()
        tap.close()
        raise
    for link in links:
        await link.close()
    findings = tap.close()
    unreachable = [link.unreachable for link in links if isinstance(link, HttpLink)]
    if unreachable and all(unreachable):
        raise ReplayError(str(unreachable[0]))
    for line in result_lines(result):
        out(line)
    warn_findings(findings, warn)
    return EXIT_OK if result.ok else EXIT_DIFFERENT


def warn_findings(findings: list[FindingRecord], warn: Callable[[str], None]) -> None:
    """One line naming the rules the replayed session broke (``--trace`` keeps the details)."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        rules = ", ".join(sorted({f.rule for f in errors}))
        warn(f"check: {len(errors)} error finding(s) in the replayed session: {rules}")
