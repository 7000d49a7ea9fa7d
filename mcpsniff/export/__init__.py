"""Exports into the tools users already run.

* :mod:`.sarif` and :mod:`.junit`: ``mcpsniff check --format sarif|junit``, for
  code scanning and CI test reports;
* :mod:`.har`: ``mcpsniff export har``, HTTP exchanges as HAR 1.2 for browser and
  proxy tools;
* :mod:`.otel_spans` (pure: records in, span descriptions out) and
  :mod:`.otlp` (the OpenTelemetry SDK, an optional extra): ``mcpsniff export
  otlp`` (:mod:`.otlp_trace` sends a recorded trace) and the live ``--otlp`` sink.

Everything here reads records; nothing here sits on a relay's forwarding path.
"""
