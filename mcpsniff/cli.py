"""The ``mcpsniff`` command line. Commands only parse options and wire parts together."""

from __future__ import annotations

import gc
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from pathlib import Path

import click
import orjson

from mcpsniff import __version__
from mcpsniff.core import catalog, conformance
from mcpsniff.core.analyzer import Analyzer, dropped_id, replay_batches, replay_notable
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.explain import explain_lines
from mcpsniff.core.model import SEVERITY_RANK, EventRecord, FindingRecord, Record
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.filter import HELP as FILTER_HELP
from mcpsniff.filter.cli import filter_option, parse_filter
from mcpsniff.filter.select import matching_findings
from mcpsniff.relay.outputs import Outputs
from mcpsniff.render import Style, Timeline, finding_json, report_lines
from mcpsniff.safe_output import terminal_json_line, tolerate_surrogates
from mcpsniff.seconds import Seconds
from mcpsniff.sinks import Sink
from mcpsniff.trace.format import TraceError, TraceReader, TraceWriter
from mcpsniff.trace.gaps import GapTally

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _colour(stream: object) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _fail(command: str, reason: str) -> None:
    click.echo(f"mcpsniff {command}: {terminal_safe(reason)}", err=True)
    sys.exit(EXIT_ERROR)


def _warner(command: str) -> Callable[[str], None]:
    """A one-line warning on stderr for ``command`` (traffic text in it escaped)."""

    def warn(text: str) -> None:
        click.echo(f"mcpsniff {command}: warning: {terminal_safe(text)}", err=True)

    return warn


OTLP_HELP = (
    "Also send MCP spans and metrics live to this OpenTelemetry collector (OTLP, e.g. "
    "http://127.0.0.1:4318; needs mcpsniff[otel]). OTEL_EXPORTER_OTLP_* apply. A collector "
    "that is down costs one warning, never the relay."
)


def _otlp_sink(command: str, endpoint: str, upstream: str | None = None) -> Sink:
    """The live OTLP sink (mcpsniff/export/live.py), or a one-line error and exit 2."""
    from mcpsniff.export.live import otlp_sink
    from mcpsniff.export.otlp import OtlpSettingsError, OtlpUnavailable

    try:
        return otlp_sink(endpoint, _warner(command), upstream)
    except (OtlpSettingsError, OtlpUnavailable) as exc:
        _fail(command, str(exc))
        raise


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpsniff")
def main() -> None:
    """Sniff, record and check Model Context Protocol (MCP) traffic."""


# --------------------------------------------------------------------------- check


@main.command(epilog=FILTER_HELP)
@click.argument("trace", type=click.Path(dir_okay=True, path_type=Path), required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "junit"]),
    default="text",
    show_default=True,
    help="sarif: SARIF 2.1.0 for code scanning; junit: JUnit XML, a test case per session.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info"]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding at or above this severity exists.",
)
@filter_option
@click.option(
    "--explain",
    metavar="RULE|all",
    help="Explain RULE (what it means, how to fix it; no TRACE needed), or after the text "
    "report every rule it found ('all').",
)
def check(
    trace: Path | None,
    fmt: str,
    fail_on: str,
    filter_expr: str | None = None,
    explain: str | None = None,
) -> None:
    """Re-analyze the raw frames of TRACE with today's rules and report findings.

    With --filter, only findings about matching messages are reported and counted
    (the syntax: mcpsniff show --help).
    Exit status: 0 when nothing is at or above --fail-on, 1 when something is,
    2 when the trace is missing or unreadable.
    """
    if explain and explain != "all":
        explain = explain.upper()  # rule ids are upper case; jr-resp-id means JR-RESP-ID
    if trace is None:
        _explain_only(explain)
        return
    if explain and explain != "all":
        try:
            catalog.get(explain)
        except KeyError as exc:  # a typo is named before the trace is read
            _fail("check", str(exc.args[0]))
            return
    flt = parse_filter("check", filter_expr)
    tolerate_surrogates()
    try:
        reader = TraceReader(trace, on_skip=_warner("check"))
    except TraceError as exc:
        _fail("check", str(exc))
        return
    # Re-analysis allocates many short-lived, acyclic objects: collect cycles
    # rarely (about 5% faster on a long trace; memory stays flat either way).
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    threshold = SEVERITY_RANK[fail_on]
    failing = 0
    by_session: dict[str, list[FindingRecord]] = defaultdict(list)
    sessions: set[str] = set()
    analyzer_errors: list[EventRecord] = []
    gaps = GapTally()
    out = sys.stdout
    try:
        with reader:
            analyzer = Analyzer()
            if flt is None:
                # Only findings and events: frames and messages are not reported.
                records: Iterable[Record] = replay_notable(reader.inputs(), analyzer)
            else:
                # The filter drops findings only: every other record still passes.
                batches = replay_batches(reader.inputs(), analyzer)
                records = matching_findings(chain.from_iterable(batches), flt)
            for record in records:
                if not isinstance(record, FindingRecord):
                    if type(record) is EventRecord:
                        _note_event(record, analyzer_errors, gaps)
                    continue
                if SEVERITY_RANK.get(record.severity, 0) >= threshold:
                    failing += 1
                if fmt == "json":
                    out.write(terminal_json_line(finding_json(record)) + "\n")
                else:
                    by_session[record.session].append(record)
        # "0 finding(s) in 1 session(s)": every session counts, clean or not
        # (each had an input, so it has records): those the analyzer keeps,
        # and those whose state it dropped at its cap (MAX_SESSIONS), which
        # it remembers by key, or by a digest when the key is long.
        sessions.update(analyzer.sessions)
        sessions.update(by_session)
        sessions.update(key for key in analyzer.dropped if type(key) is str)
        named = {dropped_id(key) for key in by_session}
        unnamed = sum(1 for key in analyzer.dropped if type(key) is bytes and key not in named)
    except TraceError as exc:
        _fail("check", str(exc))
        return
    except BrokenPipeError:
        # `mcpsniff check --format json TRACE | head`: the reader left, which is
        # not the trace's fault. Say nothing, and keep the interpreter's final
        # flush from failing on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_FINDINGS if failing else EXIT_OK)
    except OSError as exc:
        _fail("check", f"{trace}: read failed: {exc.strerror or exc}")
        return
    # What the verdict does not cover: on stderr, and in a SARIF or JUnit report too.
    notes: list[str] = []
    if reader.torn is not None:
        notes.append(f"{terminal_safe(str(trace))}: {reader.torn.describe()}")
    gaps.add_unjudged(analyzer.sessions.values(), analyzer.dropped_excused)
    if (lacking := gaps.warning()) is not None:
        notes.append(f"{terminal_safe(str(trace))}: {lacking}")
    if analyzer_errors:
        # The rules after the failing one never ran on those records: a clean
        # verdict would claim more than was checked.
        first = analyzer_errors[0]
        notes.append(
            f"the analyzer failed on {len(analyzer_errors)} record(s), "
            f"first at seq {first.seq}: {terminal_safe(str(first.data.get('error', '?'))[:200])}; "
            "findings may be missing (please report this as an mcpsniff bug)"
        )
    for note in notes:
        click.echo(f"mcpsniff check: warning: {note}", err=True)
    if fmt == "text":
        style = Style(_colour(out))
        for line in report_lines(dict(by_session), style):
            click.echo(line)
        total = sum(len(v) for v in by_session.values())
        verdict = (
            f"{failing} finding(s) at or above {fail_on}"
            if failing
            else f"nothing at or above {fail_on}"
        )
        click.echo(f"{total} finding(s) in {len(sessions) + unnamed} session(s); {verdict}")
        if explain:
            found = [f.rule for fs in by_session.values() for f in fs]
            wanted = list(dict.fromkeys(found)) if explain == "all" else [explain]
            for line in explain_lines(wanted):
                click.echo(line)
    elif fmt in ("sarif", "junit"):
        from mcpsniff.export.check_report import write_check_report

        write_check_report(fmt, trace, dict(by_session), sessions, fail_on, out, notes)
    sys.exit(EXIT_FINDINGS if failing else EXIT_OK)


def _note_event(record: EventRecord, errors: list[EventRecord], gaps: GapTally) -> None:
    """Keep an ``analyzer-error`` event in ``errors``; count a ``capture-gap`` in ``gaps``."""
    if record.event == "analyzer-error":
        errors.append(record)
    elif record.event == "capture-gap":
        gaps.note(record)
    elif record.event == "session-state-dropped":
        gaps.note_dropped()


def _explain_only(rule_id: str | None) -> None:
    """``check --explain RULE`` without a trace: the rule's paragraph."""
    if rule_id == "all":
        raise click.UsageError(
            "--explain all explains the rules a TRACE's report found: name the TRACE "
            "(every rule is described by: mcpsniff rules --format json)"
        )
    if not rule_id:
        raise click.UsageError("missing argument TRACE (or --explain RULE to explain a rule)")
    try:
        catalog.get(rule_id)
    except KeyError as exc:
        _fail("check", str(exc.args[0]))
        return
    for line in explain_lines([rule_id]):
        click.echo(line)


# --------------------------------------------------------------------------- rules


@main.command()
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules(fmt: str) -> None:
    """List every rule mcpsniff checks, with severity, versions and spec source."""
    for rule_id in IMPLEMENTED:
        entry = catalog.get(rule_id)
        versions = _versions_label(entry.versions)
        if fmt == "json":
            click.echo(
                orjson.dumps(
                    {
                        "rule": rule_id,
                        "severity": entry.default_severity,
                        "keyword": entry.sev,
                        "versions": list(entry.versions),
                        "source": catalog.plain_source(entry),
                        "description": catalog.description(rule_id),
                        "conformance": list(conformance.checks_for(rule_id)),
                    }
                ).decode()
            )
        else:
            click.echo(f"{rule_id:<28} {entry.default_severity:<8} {versions:<24} {entry.sev}")
            click.echo(f"    {catalog.plain_source(entry)[:200]}")
    if fmt == "text":
        click.echo(f"{len(IMPLEMENTED)} rules implemented")


def _versions_label(versions: tuple[str, ...]) -> str:
    if tuple(versions) == catalog.VERSIONS:
        return "all versions"
    if len(versions) == 1:
        return versions[0]
    return f"{versions[0]} … {versions[-1]}"


# --------------------------------------------------------------------------- stdio


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--trace",
    "trace_path",
    help="Trace file: created, or a new session appended to it. May hold {name}, {pid} "
    "and {time}; a directory means a new file in it "
    "(default: a new file in ~/.local/state/mcpsniff/traces).",
)
@click.option("--show", is_flag=True, help="Print a line per message on stderr as it happens.")
@click.option("--no-redact", is_flag=True, help="Record credentials as they are (off by default).")
@click.option("--name", help="Label for the session and the default trace file name.")
@click.option("--otlp", metavar="URL", help=OTLP_HELP)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def stdio(
    trace_path: str | None,
    show: bool,
    no_redact: bool,
    name: str | None,
    command: tuple[str, ...],
    otlp: str | None = None,
) -> None:
    """Relay and record a stdio MCP server: mcpsniff stdio [OPTIONS] -- COMMAND [ARGS]...

    Bytes pass unchanged both ways; stderr passes through; the exit code passes
    on (128+N for a child killed by signal N); SIGINT, SIGTERM and SIGHUP are
    forwarded to the child's process group.
    """
    from mcpsniff.relay.stdio import StartError, StdioOptions, run_stdio

    options = StdioOptions(
        command=list(command), trace=trace_path, show=show, redact=not no_redact, name=name
    )
    if otlp:
        _otlp_sink("stdio", otlp)  # a bad endpoint or a missing extra: exit 2 now, not later
        options.outputs = Outputs(otlp=otlp)

    def announce(writer: TraceWriter) -> None:
        if writer.note:
            click.echo(f"mcpsniff stdio: warning: {terminal_safe(writer.note)}", err=True)
        verb = "appending a session of" if writer.appended else "recording"
        where = f"{command[0]} to {writer.path}"  # --name may come from any config file
        click.echo(f"mcpsniff: {verb} {terminal_safe(where)}", err=True)

    def warn(text: str) -> None:
        click.echo(terminal_safe(text), err=True)

    # The child's stderr already passes through unchanged: don't show it twice.
    listener, flush = _live_display(show, skip_events={"stderr"})
    try:
        status = run_stdio(options, announce=announce, warn=warn, show=listener, show_flush=flush)
    except StartError as exc:
        _fail("stdio", str(exc))
        return
    sys.exit(status)


def _live_display(
    show: bool, skip_events: frozenset[str] | set[str] = frozenset()
) -> tuple[Callable[[Record], None] | None, Callable[[], None] | None]:
    """The ``--show`` timeline on stderr: a record listener and a flush after each batch."""
    if not show:
        return None, None
    timeline = Timeline(Style(_colour(sys.stderr)), time_format=_short_time)

    def listener(record: Record) -> None:
        if isinstance(record, EventRecord) and record.event in skip_events:
            return
        for line in timeline.feed(record):
            sys.stderr.write(line + "\n")

    def flush() -> None:
        for line in timeline.flush():
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    return listener, flush


def _short_time(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int((t % 1) * 1000):03d}"


# --------------------------------------------------------------------------- http


@main.command()
@click.option(
    "--upstream", required=True, help="The MCP server's URL, e.g. http://127.0.0.1:3001/mcp."
)
@click.option(
    "--listen",
    default="127.0.0.1:6280",
    show_default=True,
    help="HOST:PORT to listen on. Anything but loopback must be asked for explicitly.",
)
@click.option(
    "--trace",
    "trace_path",
    help="Trace file: created, or a new session appended to it. May hold {name}, {pid} "
    "and {time}; a directory means a new file in it "
    "(default: a new file in ~/.local/state/mcpsniff/traces).",
)
@click.option("--show", is_flag=True, help="Print a line per message on stderr as it happens.")
@click.option("--no-redact", is_flag=True, help="Record credentials as they are (off by default).")
@click.option(
    "--keep-host",
    is_flag=True,
    help="Forward the Host header as the client sent it. By default a Host naming the proxy "
    "(what a client using the printed URL sends) becomes the upstream's; any other passes.",
)
@click.option(
    "--no-busy-poll",
    is_flag=True,
    help="Never poll instead of sleeping. By default the proxy polls for 0.2 ms after "
    "forwarding while one client talks alone, which saves a wake-up per hop (mostly on VMs).",
)
@click.option("--otlp", metavar="URL", help=OTLP_HELP)
@click.option(
    "--head-timeout",
    type=Seconds(maximum=1e7),
    default=30.0,
    show_default=True,
    help="Seconds a client has to send a whole request head (then 408 and close).",
)
@click.option(
    "--idle-timeout",
    type=Seconds(maximum=1e7),
    default=75.0,
    show_default=True,
    help="Seconds a client may stay silent between requests or mid-body (then close).",
)
@click.option(
    "--capture-limit",
    type=click.IntRange(min=0),
    default=64 << 20,
    show_default=True,
    help="Most bytes of one request body kept for analysis; a bigger one is forwarded "
    "whole and recorded as a capture gap.",
)
def http(
    upstream: str,
    listen: str,
    trace_path: str | None,
    show: bool,
    no_redact: bool,
    keep_host: bool,
    no_busy_poll: bool,
    head_timeout: float,
    idle_timeout: float,
    capture_limit: int,
    otlp: str | None = None,
) -> None:
    """Reverse-proxy and record an MCP server over Streamable HTTP or HTTP+SSE.

    Runs until SIGINT or SIGTERM. Exit status: 0 when the trace is complete,
    3 when it could not be written in full (a warning says why), 2 when the
    proxy cannot start.
    """
    from mcpsniff.relay.http import HttpOptions, StartError, parse_listen, run_http

    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        _fail("http", str(exc))
        return
    options = HttpOptions(
        upstream=upstream,
        host=host,
        port=port,
        trace=trace_path,
        show=show,
        redact=not no_redact,
        busy_poll=not no_busy_poll,
        keep_host=keep_host,
        head_timeout=head_timeout,
        idle_timeout=idle_timeout,
        capture_limit=capture_limit,
    )
    if otlp:
        _otlp_sink("http", otlp, upstream)  # a bad endpoint or a missing extra: exit 2 now
        options.outputs = Outputs(otlp=otlp, otlp_upstream=upstream)

    def announce(relay: object, path: Path) -> None:
        click.echo(
            f"mcpsniff: proxying {relay.client_url} -> {upstream}; recording to {path}",  # type: ignore[attr-defined]
            err=True,
        )

    def warn(text: str) -> None:
        click.echo(terminal_safe(text), err=True)

    listener, flush = _live_display(show)
    try:
        status = run_http(options, announce=announce, warn=warn, show=listener, show_flush=flush)
    except StartError as exc:
        _fail("http", str(exc))
        return
    sys.exit(status)


# --------------------------------------------------------------------------- demo


@main.command()
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the trace (default: recordings/demo-<time>.jsonl).",
)
@click.option(
    "--bug",
    type=click.Choice(["none", "banner", "skip-initialized", "string-ids"]),
    default="none",
    show_default=True,
    help="Make the demo peers commit a classic bug, to see how mcpsniff reports it.",
)
def demo(trace_path: Path | None, bug: str) -> None:
    """Record a real MCP client and server talking through mcpsniff, then check it."""
    from mcpsniff.demo.runner import run_demo

    if trace_path is None:
        folder = Path("recordings")
        folder.mkdir(exist_ok=True)
        trace_path = folder / f"demo-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
    server_args = (
        ["--banner"] if bug == "banner" else ["--string-ids"] if bug == "string-ids" else []
    )
    client_args = ["--skip-initialized"] if bug == "skip-initialized" else []
    try:
        result = run_demo(trace_path, server_args=server_args, client_args=client_args)
    except FileExistsError:
        _fail("demo", f"{trace_path} already exists; choose another --trace path")
        return
    except OSError as exc:
        _fail("demo", f"could not run the demo ({trace_path}): {exc.strerror or exc}")
        return
    click.echo(f"mcpsniff demo: recorded {result.frames} frames to {trace_path}\n")
    timeline = Timeline(Style(_colour(sys.stdout)))
    with TraceReader(trace_path) as reader:
        for record in reader.records():
            for line in timeline.feed(record):
                click.echo(line)
    for line in timeline.flush():
        click.echo(line)
    click.echo("")
    if not result.ok:
        reason = "timed out" if result.timed_out else f"client exited {result.client_exit}"
        click.echo(f"mcpsniff demo: the demo peers failed ({reason}); client log:", err=True)
        click.echo(result.client_log.rstrip() or "(empty)", err=True)
    click.echo(f"$ mcpsniff check {trace_path}")
    sys.stdout.flush()
    ctx = click.get_current_context()
    try:
        ctx.invoke(check, trace=trace_path, fmt="text", fail_on="error")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
        if not result.ok:
            sys.exit(EXIT_ERROR)
        # With --bug the findings are the point of the run, not a failure.
        sys.exit(0 if bug != "none" else code)


def _register_subcommands() -> None:
    """Command groups that live with their own package."""
    from mcpsniff.export.command import export
    from mcpsniff.install.command import install, uninstall
    from mcpsniff.listing.command import ls
    from mcpsniff.redact_cli import redact
    from mcpsniff.replay.cli import replay
    from mcpsniff.show.command import show
    from mcpsniff.stats.command import stats
    from mcpsniff.ui.command import report, ui

    main.add_command(export)
    main.add_command(install)
    main.add_command(ls)
    main.add_command(replay)
    main.add_command(redact)
    main.add_command(show)
    main.add_command(stats)
    main.add_command(uninstall)
    main.add_command(ui)
    main.add_command(report)


_register_subcommands()
