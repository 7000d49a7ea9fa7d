"""``mcpsniff stdio --fault``, end to end: the official SDK clients (1.x and 2.x) against
server-everything and the SDK 2.x server, through a relay that misbehaves on purpose.

Each test runs a real client (``tests/e2e/peers/fault_client.py``) whose server
command is ``mcpsniff stdio --fault ... -- SERVER``, then reads what the client
saw, the trace the relay wrote, and what ``check`` makes of it: every fault is
recorded, the client sees exactly the misbehaviour asked for, and no peer is
blamed for what mcpsniff did. Without the peers (``scripts/setup-peers.sh``)
the tests skip.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from mcpsniff.capture.channel import Channel
from mcpsniff.core.model import C2S, S2C, EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.lines import LineFaults, StreamPort
from mcpsniff.faults.spec import parse_faults
from mcpsniff.intercept.stdio_faults import pump
from mcpsniff.trace.reader import TraceReader

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / ".peers"
SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
SDK1_PYTHON = PEERS / "sdk1" / "bin" / "python"
FAULT_CLIENT = REPO / "tests" / "e2e" / "peers" / "fault_client.py"
SDK2_SERVER = REPO / "tests" / "e2e" / "peers" / "sdk2_server.py"
EVERYTHING_JS = (
    PEERS / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
) / "index.js"
EVERYTHING = ["node", str(EVERYTHING_JS), "stdio"]
SDK2 = [str(SDK2_PYTHON), str(SDK2_SERVER)]
RUN_TIMEOUT = 90


def _need(*paths: Path) -> None:
    for path in paths:
        if not path.exists():
            pytest.skip(f"{path} missing (scripts/setup-peers.sh builds the peers)")
    if shutil.which("node") is None:
        pytest.skip("node is not installed")


@dataclass
class Run:
    """What one client run through a faulty relay produced."""

    client: dict[str, Any]
    records: list[Record]
    check: str
    summary: str

    @property
    def faults(self) -> list[EventRecord]:
        return [r for r in self.records if isinstance(r, EventRecord) and r.event == "fault"]

    @property
    def findings(self) -> list[FindingRecord]:
        return [r for r in self.records if isinstance(r, FindingRecord)]

    def outcomes(self) -> list[str]:
        return [call["outcome"] for call in self.client["calls"]]


def run(
    tmp_path: Path,
    faults: list[str],
    server: list[str] = EVERYTHING,
    *,
    client: Path = SDK2_PYTHON,
    calls: int = 3,
    timeout: float = 3.0,
    name: str = "trace.jsonl",
) -> Run:
    """Run the client through ``mcpsniff stdio`` with ``faults``; the outcome and the trace."""
    _need(client, EVERYTHING_JS)
    trace = tmp_path / name
    relay = [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace)]
    for spec in faults:
        relay += ["--fault", spec]
    command = [str(client), str(FAULT_CLIENT), "--calls", str(calls), "--timeout", str(timeout)]
    proc = subprocess.run(
        [*command, "--", *relay, "--", *server],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    report = json.loads(proc.stdout)
    with TraceReader(trace) as reader:
        records = list(reader.records())
    mcpsniff = [sys.executable, "-m", "mcpsniff", "check"]
    check = subprocess.run(
        [*mcpsniff, "--format", "json", "--fail-on", "info", str(trace)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    summary = subprocess.run(
        [*mcpsniff, "--faults-summary", str(trace)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    return Run(report, records, check.stdout.decode(), summary.stdout.decode())


def _rules(check_output: str) -> list[str]:
    return [json.loads(line)["rule"] for line in check_output.splitlines() if line.strip()]


def test_delay_holds_each_matching_answer_300_to_400_ms(tmp_path: Path) -> None:
    # The first call warms the client up (its first tool result) and is not delayed.
    spec = 'delay 300ms when tool == "echo" and direction == s2c after 1'
    result = run(tmp_path, [spec], calls=6)
    assert result.outcomes() == ["ok"] * 6
    times = [call["ms"] for call in result.client["calls"]]
    assert times[0] < 300, times
    assert all(300 <= ms <= 400 for ms in times[1:]), times
    assert [f.data["action"] for f in result.faults] == ["delay"] * 5
    assert all(f.data["fault_version"] == 1 and f.data["delay_ms"] == 300 for f in result.faults)
    assert _rules(result.check) == []


def test_a_dropped_answer_times_out_and_the_client_cancels(tmp_path: Path) -> None:
    result = run(tmp_path, ['drop when tool == "echo" and direction == s2c times 1'], timeout=1)
    assert result.outcomes() == ["timeout", "ok", "ok"]
    (fault,) = result.faults
    assert fault.data["delivered"] is False and fault.data["kind"] == "response"
    # The dropped answer is still in the trace, right after its fault record.
    frames = [r for r in result.records if isinstance(r, FrameRecord) and r.seq > fault.seq]
    assert b'"Echo: call 0"' in frames[0].raw
    # The SDK 2.x client cancels what timed out: it coped, and nobody is blamed.
    assert _rules(result.check) == []
    assert "reaction: coped: the client cancelled it" in result.summary
    assert "1 finding(s) withheld" in result.summary  # the cancel-after-answer "race"


def test_sdk1_client_after_a_dropped_answer(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        ['drop when tool == "echo" and direction == s2c times 1'],
        client=SDK1_PYTHON,
        timeout=1,
    )
    assert result.outcomes() == ["timeout", "ok", "ok"]
    assert len(result.faults) == 1
    # SDK 1.x gives up waiting but never sends notifications/cancelled.
    assert _rules(result.check) == ["RESIL-DROP-HANG"]
    assert "reaction: the client never cancelled" in result.summary


def test_an_injected_error_reaches_the_client_and_the_server_never_sees_the_call(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, ['error -32603 "backend down" when tool == "echo" times 1'])
    assert result.outcomes() == ["error", "ok", "ok"]
    assert result.client["calls"][0]["code"] == -32603
    assert result.client["calls"][0]["message"] == "backend down"
    assert [f.data["marks"] for f in result.faults] == [{"c2s": 1, "s2c": 1}]
    assert _rules(result.check) == []


def test_tool_error_answers_with_is_error(tmp_path: Path) -> None:
    result = run(tmp_path, ['tool-error "disk full" when tool == "echo" after 1 times 1'])
    assert result.outcomes() == ["ok", "tool-error", "ok"]
    assert result.client["calls"][1]["text"] == "disk full"
    assert _rules(result.check) == []


def test_a_duplicated_answer_is_ignored_by_the_client(tmp_path: Path) -> None:
    result = run(tmp_path, ['duplicate when tool == "echo" and direction == s2c times 1'])
    assert result.outcomes() == ["ok", "ok", "ok"]
    answers = [
        r for r in result.records if isinstance(r, FrameRecord) and b'"Echo: call 0"' in r.raw
    ]
    assert len(answers) == 2
    # The second answer is mcpsniff's: no JR-RESP-ID duplicate-response against the server.
    assert _rules(result.check) == []


def test_a_banner_on_stdout_before_an_answer(tmp_path: Path) -> None:
    result = run(tmp_path, ['corrupt banner when tool == "echo" and direction == s2c times 1'])
    # The SDK client skips the line it cannot parse and carries on.
    assert result.outcomes() == ["ok", "ok", "ok"]
    banner = [
        r for r in result.records if isinstance(r, FrameRecord) and b"injected banner" in r.raw
    ]
    assert len(banner) == 1
    assert _rules(result.check) == []  # not the server's JR-PARSE/STDIO-STDOUT-LOG


def test_a_truncated_request_to_the_sdk_server(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        ['corrupt truncate when tool == "echo" and direction == c2s times 1'],
        server=SDK2,
        timeout=2,
    )
    assert result.outcomes()[1:] == ["ok", "ok"]
    (fault,) = result.faults
    assert fault.data["corruption"] == "truncate" and "original_sha256" in fault.data
    # The frame recorded is the damaged one, as the server read it.
    damaged = next(r for r in result.records if isinstance(r, FrameRecord) and r.seq > fault.seq)
    assert damaged.raw.endswith(b"\n") and len(damaged.raw) < fault.data["original_len"]
    rules = _rules(result.check)
    assert "JR-PARSE" not in rules  # not the client's
    # Nor is the client's cancel of a request the server never read. The SDK 2.x
    # server gives no -32700 for the line it could not parse: a real finding.
    assert rules == ["RESIL-PARSE-NO-REPLY"]
    assert "reaction: the server did not answer -32700" in result.summary


def test_kill_ends_the_server_and_no_request_is_blamed_on_it(tmp_path: Path) -> None:
    result = run(tmp_path, ['kill when tool == "echo" and direction == c2s after 1'], timeout=3)
    outcomes = result.outcomes()
    assert len(outcomes) == 3 and outcomes[0] == "ok"
    # SIGKILL follows the matching request once it is written to the server, so a
    # server quicker than the signal may still answer that one; never a later one.
    assert outcomes[2] != "ok", outcomes
    exits = [r for r in result.records if isinstance(r, EventRecord) and r.event == "exit"]
    assert exits and exits[0].data.get("signal") == "SIGKILL"
    assert "JR-RESP-REQUIRED" not in _rules(result.check)


def test_prob_with_a_seed_gives_the_same_faults_twice(tmp_path: Path) -> None:
    spec = 'error -32603 when tool == "echo" prob 0.5 seed 42'
    first = run(tmp_path, [spec], calls=12, name="a.jsonl")
    second = run(tmp_path, [spec], calls=12, name="b.jsonl")
    hit = [f.data["id"] for f in first.faults]
    assert hit == [f.data["id"] for f in second.faults]
    assert 0 < len(hit) < 12
    assert first.outcomes() == second.outcomes()
    assert all(f.data["seed"] == 42 for f in first.faults)


def test_a_fault_that_matches_nothing_changes_nothing(tmp_path: Path) -> None:
    result = run(tmp_path, ['drop when tool == "no-such-tool"'])
    assert result.outcomes() == ["ok", "ok", "ok"]
    assert result.faults == []
    assert "Faults: none injected" in result.summary


def test_a_bad_spec_is_refused_with_its_place(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "stdio", "--fault", "delay 3 parsecs", "--", "true"],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 2
    lines = proc.stderr.decode().splitlines()
    assert lines[0] == (
        "mcpsniff stdio: --fault: delay takes one duration, or MIN..MAX (at column 9)"
    )
    assert lines[1:] == ["  delay 3 parsecs", "          ^"]


def test_status_is_refused_on_stdio() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "stdio", "--fault", "status 503", "--", "true"],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 2
    assert b"status needs an HTTP relay" in proc.stderr


#: How the SDK 2.x client fares with each damaged answer (the first echo call's).
CORRUPTED_ANSWERS = {
    "split": "ok",  # whole again once its pieces are read
    "pretty": "timeout",
    "truncate": "timeout",
    "trailing-comma": "timeout",
    # SDK 2.3.0's stdio client decodes strictly: one bad byte ends the whole client
    # (UnicodeDecodeError out of stdio_client). A real resilience bug, shown here.
    "invalid-utf8": "crashed",
}


@pytest.mark.parametrize("kind", list(CORRUPTED_ANSWERS))
def test_a_damaged_answer_is_not_held_against_the_server(tmp_path: Path, kind: str) -> None:
    spec = f'corrupt {kind} when tool == "echo" and direction == s2c times 1'
    result = run(tmp_path, [spec], timeout=1)
    if CORRUPTED_ANSWERS[kind] == "crashed":
        assert result.client["crashed"] == "UnicodeDecodeError"
    else:
        assert result.outcomes() == [CORRUPTED_ANSWERS[kind], "ok", "ok"]
    (fault,) = result.faults
    assert fault.data["corruption"] == kind and fault.data["marks"]["s2c"] >= 1
    rules = _rules(result.check)
    assert "JR-PARSE" not in rules and "STDIO-NEWLINE" not in rules, rules


def test_disconnect_cuts_the_client_off(tmp_path: Path) -> None:
    result = run(
        tmp_path, ['disconnect when tool == "echo" and direction == s2c after 1 times 1'], timeout=2
    )
    assert result.outcomes()[0] == "ok"
    assert "ok" not in result.outcomes()[1:]
    (fault,) = result.faults
    assert fault.data["marks"] == {"s2c": "rest"} and fault.data["delivered"] is False
    assert "JR-RESP-REQUIRED" not in _rules(result.check)


def test_an_injected_unsupported_version_against_the_2026_sdk_server(tmp_path: Path) -> None:
    spec = 'error -32022 "Unsupported protocol version" when tool == "echo" times 1'
    result = run(tmp_path, [spec], server=SDK2)
    # The SDK 2.x client (initialize, so the handshake era) surfaces the error to
    # its caller, which goes on calling.
    assert result.outcomes() == ["error", "ok", "ok"]
    assert result.client["calls"][0]["code"] == -32022
    answers = [r for r in result.records if isinstance(r, FrameRecord) and b"-32022" in r.raw]
    # A handshake-era request names no version of its own: every known one is listed.
    assert b'"supported":["2026-07-28","2025-11-25"' in answers[0].raw
    assert _rules(result.check) == []  # not the server's -32022, and the client went on
    assert "reaction: coped: the client retried" in result.summary


# ---------------------------------------------------------------- the pump's shortcut, in memory

DIFFERENTIAL_FAULT = 'duplicate when tool == "echo"'


def _call(id_: int, name: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s"}}\n' % (
        id_,
        name.encode(),
    )


#: Requests: one the fault matches by its name as written, one only once the ``\u``
#: escape is read, an escaped ``\/``, and lines no fault can match around them.
DIFFERENTIAL_C2S = b"".join(
    [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n',
        _call(1, "other"),
        _call(2, "ec\\u0068o"),
        b'{"jsonrpc":"2.0","method":"notifications\\/initialized"}\n',
        _call(3, "echo"),
        _call(4, "nothing"),
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}\n',
    ]
)
#: Answers: those to 2 and 3 answer a request the fault named (the engine has them in flight).
DIFFERENTIAL_S2C = b"".join(
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}\n' % id_ for id_ in (0, 1, 2, 3, 4)
)


class _Recorder:
    """The relay's side of one in-memory run: what each peer got and what was recorded."""

    def __init__(self) -> None:
        self.got: dict[str, list[bytes]] = {C2S: [], S2C: []}
        self.recorded: list[tuple[str, bytes]] = []
        self.events: list[dict[str, Any]] = []
        self.forwarded = {C2S: 0, S2C: 0}

    def send_data(self, direction: str, when: float, data: bytes) -> None:
        self.recorded.append((direction, data))

    def send(self, event: object) -> None:
        """The ``StreamEnd`` at each end: not what is compared."""

    def carrier(self) -> LineFaults:
        async def write(direction: str, data: bytes) -> None:
            self.got[direction].append(data)

        def observe(direction: str, data: bytes) -> None:
            # What ``faulted_pumps`` records a chunk the carrier delivered with.
            self.forwarded[direction] += len(data)
            self.send_data(direction, 0.0, data)

        return LineFaults(
            FaultEngine(parse_faults([DIFFERENTIAL_FAULT])),
            StreamPort(write, observe, self.events.append, lambda d: None, lambda: None),
        )


def _through_pump(chunks: dict[str, list[bytes]]) -> _Recorder:
    recorder = _Recorder()
    carrier = recorder.carrier()

    async def run() -> None:
        for direction in (C2S, S2C):
            pending = iter(chunks[direction])

            async def read(pending: Iterator[bytes] = pending) -> bytes:
                return next(pending, b"")

            async def send(data: bytes, direction: str = direction) -> None:
                recorder.got[direction].append(data)

            channel = cast(Channel, recorder)
            await pump(carrier, direction, read, 0, send, recorder.forwarded, channel)

    asyncio.run(run())
    return recorder


def _through_lines(chunks: dict[str, list[bytes]], *, shortcut: bool) -> _Recorder:
    recorder = _Recorder()
    carrier = recorder.carrier()
    if not shortcut:
        carrier.passes = lambda direction, chunk: False  # type: ignore[method-assign]

    async def run() -> None:
        for direction in (C2S, S2C):
            for chunk in chunks[direction]:
                await carrier.carry(direction, chunk)
            await carrier.end(direction)

    asyncio.run(run())
    return recorder


def _cuts(data: bytes) -> list[list[bytes]]:
    """Every way to cut ``data`` in two, one chunk per line, and one byte at a time."""
    ways = [[data[:at], data[at:]] for at in range(1, len(data))]
    ways.append(data.splitlines(keepends=True))
    ways.append([data[at : at + 1] for at in range(len(data))])
    return ways


def _joined(recorder: _Recorder) -> tuple[bytes, bytes, bytes, bytes]:
    def by(direction: str) -> bytes:
        return b"".join(data for d, data in recorder.recorded if d == direction)

    return b"".join(recorder.got[C2S]), b"".join(recorder.got[S2C]), by(C2S), by(S2C)


@pytest.mark.parametrize("cut", ["c2s", "s2c"])
def test_the_pump_shortcut_writes_and_records_what_the_line_machinery_does(cut: str) -> None:
    whole = {C2S: [DIFFERENTIAL_C2S], S2C: [DIFFERENTIAL_S2C]}
    cut_direction = C2S if cut == "c2s" else S2C
    for chunks in _cuts(whole[cut_direction][0]):
        traffic = {**whole, cut_direction: chunks}
        fast = _through_pump(traffic)
        # The carrier's own shortcut (``passes``) writes the same pieces.
        same = _through_lines(traffic, shortcut=True)
        assert fast.got == same.got
        assert fast.recorded == same.recorded
        assert fast.events == same.events
        assert fast.forwarded == same.forwarded
        # Every line judged: the same bytes written and recorded, the same faults.
        judged = _through_lines(traffic, shortcut=False)
        assert _joined(fast) == _joined(judged)
        assert fast.events == judged.events
    # The fault did match (2 by its escape, 3 as written): each request went twice, and
    # so did their answers (the engine had them in flight), and nothing else.
    assert len(fast.events) == 4
    answers = b"".join(fast.got[S2C])
    assert [answers.count(b'"id":%d,' % id_) for id_ in range(5)] == [1, 1, 2, 2, 1]
    assert fast.got[C2S].count(_call(3, "echo")) == 2
    assert b"".join(fast.got[C2S]).count(_call(2, "ec\\u0068o")) == 2
