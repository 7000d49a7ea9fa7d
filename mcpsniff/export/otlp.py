"""Sending span descriptions to an OpenTelemetry collector over OTLP.

The OpenTelemetry Python SDK and its OTLP exporters do the protocol work (an
optional extra: ``pip install "mcpsniff[otel]"``); this module only turns
:mod:`mcpsniff.export.otel_spans` drafts into SDK spans with the capture's own
timestamps and parents, and measures the semantic conventions' histograms.

Spans are not handed to the SDK's BatchSpanProcessor: :class:`OtlpExporter`
keeps the ended spans and exports them itself when asked, so that it knows
whether the collector took them (the trace export reports it; the live sink
warns once and goes on). The standard ``OTEL_EXPORTER_OTLP_*`` variables
(endpoint, headers, protocol, timeout) apply whenever an option does not say
otherwise, as do ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from mcpsniff import __version__
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.redact import redact_url
from mcpsniff.export.otel_spans import MetricPoint, Operation, SpanDraft, operation_metrics
from mcpsniff.export.otlp_bounds import DeadlinePassed, bounded_session, call_by_deadline

PROTOCOLS = ("http/protobuf", "grpc")
#: The semantic conventions' advice for MCP duration histograms (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

_METRICS = {
    "mcp.client.operation.duration": "The duration of the MCP request or notification as "
    "observed on the sender from the time it was sent until the response or ack is received.",
    "mcp.server.operation.duration": "MCP request or notification duration as observed on "
    "the receiver from the time it was received until the result or ack is sent.",
    "mcp.client.session.duration": "The duration of the MCP session as observed on the MCP client.",
    "mcp.server.session.duration": "The duration of the MCP session as observed on the MCP server.",
}


class OtlpUnavailable(Exception):
    """The OpenTelemetry SDK or its OTLP exporter is not installed."""


class OtlpSettingsError(ValueError):
    """An option is wrong (endpoint, protocol, header); the message is for the user."""


@dataclass(slots=True)
class OtlpSettings:
    """Where and how to send: options first, then the ``OTEL_EXPORTER_OTLP_*`` variables."""

    endpoint: str | None = None
    protocol: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Seconds one export may take, retries included (None: OTEL_EXPORTER_OTLP_TIMEOUT, 10).
    timeout: float | None = None

    def resolved_protocol(self) -> str:
        """The protocol: the option, else ``OTEL_EXPORTER_OTLP_PROTOCOL``, else http/protobuf."""
        protocol = (
            self.protocol
            or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        )
        if protocol not in PROTOCOLS:
            raise OtlpSettingsError(
                f"unsupported OTLP protocol {protocol!r} (use {' or '.join(PROTOCOLS)})"
            )
        return protocol

    def describe(self) -> str:
        """The endpoint as a person should read it (no credentials: headers are not shown,
        userinfo and secret query parameters are redacted; CI logs keep this line)."""
        endpoint = self.endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if not endpoint:
            return "the default"
        return terminal_safe(redact_url(endpoint)[0])


def parse_headers(pairs: Sequence[str]) -> dict[str, str]:
    """``K=V`` strings (``--header``) as a dict; a pair without ``=`` is an error."""
    headers: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise OtlpSettingsError(f"--header wants NAME=VALUE, not {pair!r}")
        headers[name.strip()] = value.strip()
    return headers


def check_endpoint(endpoint: str) -> str:
    """An ``--endpoint``/``--otlp`` URL, checked: it must be http:// or https://."""
    shown = terminal_safe(redact_url(endpoint)[0])
    if not endpoint.startswith(("http://", "https://")):
        raise OtlpSettingsError(
            f"the OTLP endpoint must be an http:// or https:// URL, not {shown!r}"
        )
    try:
        parts = urlsplit(endpoint)
        parts.port  # noqa: B018 - raises ValueError for a port outside 0-65535
    except ValueError as exc:
        raise OtlpSettingsError(f"the OTLP endpoint {shown!r} is not a usable URL: {exc}") from None
    if not parts.hostname:
        raise OtlpSettingsError(f"the OTLP endpoint {shown!r} names no host")
    return endpoint.rstrip("/")


def _signal_url(endpoint: str, signal: str) -> str:
    # OTLP/HTTP: a base URL gets the signal's path, v1/traces or v1/metrics, appended.
    for known in ("/v1/traces", "/v1/metrics"):
        if endpoint.endswith(known):
            endpoint = endpoint[: -len(known)]
    return f"{endpoint}/v1/{signal}"


def _import_sdk() -> Any:
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.sdk.trace.export import SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import (
            SpanContext,
            SpanKind,
            Status,
            StatusCode,
            TraceFlags,
            TraceState,
        )
    except ImportError as exc:
        raise OtlpUnavailable(
            'OTLP export needs the OpenTelemetry SDK: pip install "mcpsniff[otel]"'
            f" ({exc.name or exc} is missing)"
        ) from None
    return SimpleNamespace(
        MeterProvider=MeterProvider,
        InMemoryMetricReader=InMemoryMetricReader,
        ExplicitBucketHistogramAggregation=ExplicitBucketHistogramAggregation,
        View=View,
        Resource=Resource,
        Event=Event,
        ReadableSpan=ReadableSpan,
        InstrumentationScope=InstrumentationScope,
        SpanExportResult=SpanExportResult,
        SpanContext=SpanContext,
        SpanKind=SpanKind,
        Status=Status,
        StatusCode=StatusCode,
        TraceFlags=TraceFlags,
        TraceState=TraceState,
    )


def check_available() -> None:
    """Raise :class:`OtlpUnavailable` unless the SDK is installed (checked before relaying)."""
    _import_sdk()


class OtlpExporter:
    """Spans and metrics for one capture, sent to one collector.

    :meth:`emit` turns drafts into finished SDK spans (cheap, no I/O);
    :meth:`flush` sends what is pending and says whether the collector took it.
    Not thread-safe: one thread drives it.
    """

    def __init__(
        self, settings: OtlpSettings, deadline: float | None = None, service: str | None = None
    ) -> None:
        """``deadline``: seconds the whole run may wait on the collector (None: no bound).

        ``service``: the ``service.name`` of the spans, the server's name (its label,
        else its ``serverInfo`` name); ``mcpsniff`` when none is known.
        ``OTEL_SERVICE_NAME`` overrides either.
        """
        sdk = _import_sdk()
        #: When (``time.monotonic()``) the exporter stops waiting on the collector.
        self.deadline = time.monotonic() + deadline if deadline is not None else None
        #: Whether the deadline passed (everything not yet sent counts as failed).
        self.timed_out = False
        self._sdk = sdk
        protocol = settings.resolved_protocol()
        self.settings = settings
        self.protocol = protocol
        span_exporter, metric_exporter = _exporters(settings, protocol)
        self._span_exporter = span_exporter
        self._metric_exporter = metric_exporter
        attributes: dict[str, Any] = {"telemetry.sdk.name": "opentelemetry"}
        if not os.environ.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = service or "mcpsniff"
        resource = sdk.Resource.create(attributes)
        self._resource = resource
        self._scope = sdk.InstrumentationScope("mcpsniff", __version__)
        self._finished: list[Any] = []
        self._random = random.Random()
        self._kinds = {"client": sdk.SpanKind.CLIENT, "server": sdk.SpanKind.SERVER}
        self._ok = sdk.Status(sdk.StatusCode.UNSET)
        self._sampled = sdk.TraceFlags(sdk.TraceFlags.SAMPLED)
        #: Operations left out because their traceparent said "not sampled".
        self.unsampled = 0
        self._reader = sdk.InMemoryMetricReader()
        views = [
            sdk.View(
                instrument_name="mcp.*.duration",
                aggregation=sdk.ExplicitBucketHistogramAggregation(DURATION_BUCKETS),
            )
        ]
        self._meters = sdk.MeterProvider(
            resource=resource, metric_readers=[self._reader], views=views
        )
        meter = self._meters.get_meter("mcpsniff", __version__)
        self._histograms = {
            name: meter.create_histogram(name, unit="s", description=text)
            for name, text in _METRICS.items()
        }
        self.spans_sent = 0
        self.spans_failed = 0
        self._metrics_dirty = False

    # ------------------------------------------------------------------ drafts to spans

    def emit(
        self,
        operations: Iterable[Operation],
        lone: Iterable[SpanDraft],
        metrics: Iterable[MetricPoint],
    ) -> None:
        """Create the SDK spans (ended, kept for :meth:`flush`) and record the metric points."""
        points = list(metrics)
        for op in operations:
            self._operation(op)
            points.extend(operation_metrics(op))
        for draft in lone:
            self._span(draft, None)
        for point in points:
            histogram = self._histograms.get(point.name)
            if histogram is not None:
                histogram.record(point.value, point.attributes)
                self._metrics_dirty = True

    def _operation(self, op: Operation) -> None:
        sdk = self._sdk
        parent = None
        if op.parent is not None:
            if not op.parent.flags & 1:
                # The caller decided not to sample this trace (W3C trace-flags,
                # "sampled" bit): respected, as the SDK's default parent-based sampler does.
                self.unsampled += 1
                return
            state = None
            if op.parent.state:
                try:
                    state = sdk.TraceState.from_header([op.parent.state])
                except ValueError:
                    state = None
            parent = sdk.SpanContext(
                trace_id=op.parent.trace_id,
                span_id=op.parent.span_id,
                is_remote=True,
                trace_flags=self._sampled,
                trace_state=state,
            )
        client = self._span(op.client, parent)
        self._span(op.server, client.context)

    def _span(self, draft: SpanDraft, parent: Any) -> Any:
        # Spans are built finished, with the capture's own times, straight into the
        # SDK's ReadableSpan that its OTLP exporters encode: a Tracer's start/end
        # path (sampler, locks, processors) would cost three times as much per span.
        sdk = self._sdk
        rand = self._random.getrandbits
        trace_id = parent.trace_id if parent is not None else rand(128) or 1
        context = sdk.SpanContext(
            trace_id=trace_id,
            span_id=rand(64) or 1,
            is_remote=False,
            trace_flags=self._sampled,
            trace_state=parent.trace_state if parent is not None else None,
        )
        events = [sdk.Event(event.name, event.attributes, _ns(event.t)) for event in draft.events]
        status = (
            sdk.Status(sdk.StatusCode.ERROR, draft.status_message)
            if draft.status_error
            else self._ok
        )
        span = sdk.ReadableSpan(
            draft.name,
            context=context,
            parent=parent,
            resource=self._resource,
            attributes=draft.attributes,
            events=events,
            kind=self._kinds.get(draft.kind, sdk.SpanKind.INTERNAL),
            status=status,
            start_time=_ns(draft.start),
            end_time=_ns(draft.end),
            instrumentation_scope=self._scope,
        )
        self._finished.append(span)
        return span

    # ------------------------------------------------------------------ sending

    @property
    def pending(self) -> int:
        """Spans made but not yet sent."""
        return len(self._finished)

    def flush(self, metrics: bool = True) -> bool:
        """Send pending spans (and, with ``metrics``, the histograms); True if all were taken."""
        ok = True
        while self._finished:
            batch = self._finished[:512]
            del self._finished[:512]
            result = self._send(self._span_exporter.export, batch)
            if result == self._sdk.SpanExportResult.SUCCESS:
                self.spans_sent += len(batch)
            else:
                self.spans_failed += len(batch) + len(self._finished)
                self._finished.clear()
                ok = False
        if metrics and ok and self._metrics_dirty:
            data = self._reader.get_metrics_data()
            if data is not None:
                result = self._send(self._metric_exporter.export, data)
                ok = ok and getattr(result, "name", "") == "SUCCESS"
            self._metrics_dirty = False
        return ok

    def _send(self, call: Any, *args: Any) -> Any:
        """``_quiet(call, *args)``, given up when the deadline passes (None then)."""
        if self.deadline is None:
            return self._quiet(call, *args)
        if self.timed_out:
            return None
        try:
            return call_by_deadline(self.deadline, self._quiet, call, *args)
        except DeadlinePassed:
            self.timed_out = True
            return None

    def _quiet(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        # The exporters log each failed attempt; mcpsniff says it once, its own way.
        loggers = [logging.getLogger(n) for n in ("opentelemetry.exporter", "opentelemetry.sdk")]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.CRITICAL + 1)
        try:
            return call(*args, **kwargs)
        except Exception:  # an exporter bug must not escape into mcpsniff
            return None
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)

    def shutdown(self) -> None:
        """Release the exporters (pending spans are dropped: flush first)."""
        self._finished.clear()
        if self.timed_out:
            return  # an exporter may still be blocked on the collector: closing would wait
        for closer in (self._span_exporter.shutdown, self._metric_exporter.shutdown):
            self._quiet(closer)
        self._quiet(self._meters.shutdown)


def _ns(t: float) -> int:
    return int(t * 1_000_000_000)


def _exporters(settings: OtlpSettings, protocol: str) -> tuple[Any, Any]:
    headers = dict(settings.headers) or None
    timeout = settings.timeout
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            endpoint = settings.endpoint
            insecure = endpoint.startswith("http://") if endpoint else None
            return (
                OTLPSpanExporter(
                    endpoint=endpoint, headers=headers, timeout=timeout, insecure=insecure
                ),
                OTLPMetricExporter(
                    endpoint=endpoint, headers=headers, timeout=timeout, insecure=insecure
                ),
            )
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise OtlpUnavailable(
            f'OTLP over {protocol} needs its exporter: pip install "mcpsniff[otel]"'
            f" ({exc.name or exc} is missing)"
        ) from None
    traces = _signal_url(settings.endpoint, "traces") if settings.endpoint else None
    metrics = _signal_url(settings.endpoint, "metrics") if settings.endpoint else None
    return (
        OTLPSpanExporter(
            endpoint=traces, headers=headers, timeout=timeout, session=bounded_session()
        ),
        OTLPMetricExporter(
            endpoint=metrics, headers=headers, timeout=timeout, session=bounded_session()
        ),
    )
