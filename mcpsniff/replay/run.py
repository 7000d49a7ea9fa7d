"""Wiring one ``replay drive`` run: links, driver, own trace, report, exit status."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from mcpsniff.core.model import FindingRecord
from mcpsniff.faults.spec import Fault
from mcpsniff.net.listen_address import wildcard_warning
from mcpsniff.replay.compare import PathPart
from mcpsniff.replay.drive import Driver, Link, LinkSink
from mcpsniff.replay.links import HttpLink, StdioLink
from mcpsniff.replay.matcher import STRICT
from mcpsniff.replay.report import result_lines
from mcpsniff.replay.script import ReplayError, Script
from mcpsniff.replay.serve import ReplayServer, Unmatched
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


class CannotServe(Exception):
    """Serving failed to start or broke off (an address in use, a bad host): the reason."""


def serve_script(
    script: Script,
    tap: Tap,
    mode: str,
    allow: list[tuple[PathPart, ...]],
    address: tuple[str, int] | None,
    warn: Callable[[str], None],
    faults: Sequence[Fault] = (),
) -> bool:
    """Act as ``script``'s server over HTTP at ``address``, or over stdio; until interrupted.

    Every request without a recorded counterpart is warned about and noted in
    the tap's trace. Returns whether the run differs from the recording (in
    strict mode: a request had no counterpart). :class:`CannotServe` when the
    address cannot be served (the tap is closed first).
    """
    misses: list[Unmatched] = []

    def unmatched(miss: Unmatched) -> None:
        misses.append(miss)
        tap.event("replay-unmatched", {"method": miss.method, "id": miss.id, "target": miss.target})
        warn("\n".join(miss.lines).removeprefix("replay: "))

    def make_server() -> ReplayServer:
        return ReplayServer(script, mode, warn, unmatched, allow)

    try:
        if address is not None:
            from mcpsniff.replay.http_serve import serve_http

            host, port = address
            warning = wildcard_warning(
                host, "can use the replay and read the recorded traffic it serves"
            )
            if warning:
                warn(warning)
            asyncio.run(serve_http(make_server, tap, host, port, announce=warn, faults=faults))
        else:
            from mcpsniff.replay.stdio_serve import serve_stdio

            asyncio.run(serve_stdio(make_server(), tap, faults=faults))
    except KeyboardInterrupt:
        pass
    except (OSError, ValueError) as exc:
        tap.close()
        raise CannotServe(str(getattr(exc, "strerror", None) or exc)) from exc
    warn_findings(tap.close(), warn)
    if mode == STRICT and misses:
        warn(f"{len(misses)} request(s) had no recorded counterpart")
        return True
    return False
