"""A real OpenTelemetry collector for the tests: rotel (PyPI), its debug output parsed.

rotel ships its collector binary inside the wheel. It listens for OTLP over
HTTP and gRPC on loopback ports and, with ``--debug-log`` at ``detailed``
verbosity, prints everything it receives; :func:`parse_spans` and
:func:`parse_metric_points` read that text back into dicts.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT = 20.0


def rotel_binary() -> Path | None:
    """The rotel-agent binary of the installed ``rotel`` wheel, or None."""
    try:
        import rotel
    except ImportError:
        return None
    binary = Path(rotel.__file__).resolve().parent / "rotel-agent"
    return binary if binary.exists() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Collector:
    """A running rotel-agent; ``http_url`` and ``grpc_url`` are its OTLP receivers."""

    proc: subprocess.Popen[bytes]
    out: Path
    http_port: int
    grpc_port: int

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def text(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    def spans(self, wait_for: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Every span received so far, waiting until at least ``wait_for`` arrived."""
        deadline = time.monotonic() + timeout
        while True:
            spans = parse_spans(self.text())
            if len(spans) >= wait_for or time.monotonic() > deadline:
                return spans
            time.sleep(0.1)

    def wait(
        self,
        select: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        count: int,
        timeout: float = 10.0,
    ) -> list[dict[str, Any]]:
        """The spans ``select`` picks, once there are ``count`` of them (or at the timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            chosen = select(parse_spans(self.text()))
            if len(chosen) >= count or time.monotonic() > deadline:
                return chosen
            time.sleep(0.1)

    def metric_points(self, name: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            points = parse_metric_points(self.text(), name)
            if points or time.monotonic() > deadline:
                return points
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_collector(folder: Path, verbosity: str = "detailed") -> Collector:
    """Start rotel on free loopback ports, printing what it receives to a file.

    ``detailed`` prints every span (for :func:`parse_spans`); ``basic`` only the
    number of spans per request (:func:`received_span_count`), which costs the
    machine far less (the benchmark).
    """
    binary = rotel_binary()
    if binary is None:
        pytest.skip('rotel is not installed (pip install "rotel>=0.0.1a15"); see scripts/test.sh')
    http_port, grpc_port = free_port(), free_port()
    out = folder / "rotel.out"
    command = [
        str(binary),
        "start",
        "--otlp-http-endpoint",
        f"127.0.0.1:{http_port}",
        "--otlp-grpc-endpoint",
        f"127.0.0.1:{grpc_port}",
        "--exporter",
        "blackhole",
        "--debug-log",
        "traces",
        "--debug-log",
        "metrics",
        "--debug-log-verbosity",
        verbosity,
        "--log-file",
        str(folder / "rotel.log"),
    ]
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT
        )
    collector = Collector(proc, out, http_port, grpc_port)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"rotel exited {proc.returncode}:\n{collector.text()}")
        try:
            with (
                socket.create_connection(("127.0.0.1", http_port), timeout=0.5),
                socket.create_connection(("127.0.0.1", grpc_port), timeout=0.5),
            ):
                return collector
        except OSError:
            time.sleep(0.05)
    collector.stop()
    pytest.fail(f"rotel did not start listening:\n{collector.text()}")


# --------------------------------------------------------------------------- parsing

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FIELD = re.compile(r"^\s*(Trace ID|Parent ID|ID|Name|Kind|Status code|Status message)\s*:\s?(.*)$")
_ATTRIBUTE = re.compile(r"^\s*-> ([^:]+): (\w+)\((.*)\)$")
_EVENT_FIELD = re.compile(r"^\s*-> (Name|Timestamp): (.*)$")


def _value(kind: str, text: str) -> Any:
    if kind == "Int":
        return int(text)
    if kind == "Double":
        return float(text)
    if kind == "Bool":
        return text == "true"
    return text


@dataclass
class _Span:
    fields: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)


def parse_spans(text: str) -> list[dict[str, Any]]:
    """Spans from rotel's detailed debug log: ids, name, kind, status, attributes, events."""
    spans: list[_Span] = []
    section = ""
    for raw in _ANSI.sub("", text).splitlines():
        line = raw.rstrip()
        if line.startswith("Span #"):
            spans.append(_Span())
            section = "span"
            continue
        if line.startswith(("ResourceSpans #", "ResourceMetrics #", "Metric #")):
            section = ""
            continue
        if not spans or not section:
            continue
        span = spans[-1]
        if line == "Attributes:":
            section = "attributes"
            continue
        if line == "Events:":
            section = "events"
            continue
        if line.startswith(("Links:", "Link #")):
            section = "links"
            continue
        if line.startswith("SpanEvent #"):
            span.events.append({"attributes": {}})
            section = "event"
            continue
        if section == "span":
            match = _FIELD.match(line)
            if match:
                span.fields[match.group(1)] = match.group(2).strip()
        elif section == "attributes":
            match = _ATTRIBUTE.match(line)
            if match:
                span.attributes[match.group(1)] = _value(match.group(2), match.group(3))
        elif section == "event" and span.events:
            match = _EVENT_FIELD.match(line)
            if match:
                span.events[-1][match.group(1).lower()] = match.group(2).strip()
                continue
            match = _ATTRIBUTE.match(line)
            if match and match.group(1) != "Attributes:":
                span.events[-1]["attributes"][match.group(1).strip()] = _value(
                    match.group(2), match.group(3)
                )
    return [
        {
            "trace_id": s.fields.get("Trace ID", ""),
            "parent_id": s.fields.get("Parent ID", ""),
            "span_id": s.fields.get("ID", ""),
            "name": s.fields.get("Name", ""),
            "kind": s.fields.get("Kind", ""),
            "status": s.fields.get("Status code", ""),
            "status_message": s.fields.get("Status message", ""),
            "attributes": s.attributes,
            "events": s.events,
        }
        for s in spans
    ]


_RECEIVED = re.compile(r"Received traces\..*?\bspans=(\d+)")


def received_span_count(text: str) -> int:
    """Spans received, from rotel's ``basic`` debug log ("Received traces. ... spans=26")."""
    return sum(int(m.group(1)) for m in _RECEIVED.finditer(_ANSI.sub("", text)))


def parse_metric_points(text: str, name: str) -> list[dict[str, Any]]:
    """Histogram data points of metric ``name``: attributes, count and sum (last report wins)."""
    points: list[dict[str, Any]] = []
    current_metric = ""
    point: dict[str, Any] | None = None
    for raw in _ANSI.sub("", text).splitlines():
        line = raw.strip()
        if line.startswith("-> Name: ") and point is None:
            current_metric = line[len("-> Name: ") :]
            continue
        if line.startswith("Metric #"):
            current_metric, point = "", None
            continue
        if current_metric != name:
            continue
        if line.startswith("HistogramDataPoints #"):
            point = {"attributes": {}}
            points.append(point)
            continue
        if point is None:
            continue
        match = _ATTRIBUTE.match(raw)
        if match:
            point["attributes"][match.group(1).strip()] = _value(match.group(2), match.group(3))
        elif line.startswith("Count: "):
            point["count"] = int(line[len("Count: ") :])
        elif line.startswith("Sum: "):
            point["sum"] = float(line[len("Sum: ") :])
    return points
