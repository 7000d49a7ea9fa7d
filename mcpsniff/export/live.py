"""Building the live ``--otlp`` sink from a command's options (stdio, http, the addon)."""

from __future__ import annotations

import os
from collections.abc import Callable
from urllib.parse import urlsplit

from mcpsniff.export.otel_spans import ExportOptions
from mcpsniff.export.otlp import (
    OtlpSettings,
    OtlpSettingsError,
    OtlpUnavailable,
    check_available,
    check_endpoint,
)
from mcpsniff.export.otlp_sink import OtlpSink
from mcpsniff.listing.identity import Origin

#: Seconds one live export may take, retries included.
LIVE_TIMEOUT = 2.0


def otlp_sink(
    endpoint: str,
    warn: Callable[[str], None],
    upstream: str | None = None,
    protocol: str | None = None,
    name: str | None = None,
    fallback: str | None = None,
) -> OtlpSink:
    """The sink for ``--otlp ENDPOINT``; raises ``OtlpSettingsError``/``OtlpUnavailable``.

    ``upstream`` (the HTTP relay's) gives ``server.address``/``server.port``.
    The spans' ``service.name`` is ``name`` (``--name``), else the server's
    ``serverInfo`` name, else ``fallback`` (the program, the upstream's host).
    Everything else comes from the ``OTEL_EXPORTER_OTLP_*`` variables.
    """
    check_available()
    # Live, a slow collector must not hold spans back for long: 2 s per export
    # unless OTEL_EXPORTER_OTLP_TIMEOUT says otherwise (the SDK's default is 10 s).
    timeout = None if os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") else LIVE_TIMEOUT
    settings = OtlpSettings(endpoint=check_endpoint(endpoint), protocol=protocol, timeout=timeout)
    settings.resolved_protocol()
    options = ExportOptions()
    if upstream:
        try:
            parts = urlsplit(upstream)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            parts, port = None, None
        if parts is not None and parts.hostname:
            options.server_address = parts.hostname
            options.server_port = port
    if fallback is None and options.server_address:
        fallback = options.server_address
    return OtlpSink(settings, options, warn, origin=Origin(name, fallback))


def try_otlp_sink(
    endpoint: str,
    warn: Callable[[str], None],
    upstream: str | None = None,
    name: str | None = None,
    fallback: str | None = None,
) -> list[OtlpSink]:
    """``[sink]`` for ``endpoint``, or ``[]`` after one warning saying why not.

    For the mitmproxy addon's analysis process, where a bad option must not stop
    the recording (mitmproxy has already started when the option arrives).
    """
    try:
        return [otlp_sink(endpoint, warn, upstream, name=name, fallback=fallback)]
    except (OtlpSettingsError, OtlpUnavailable) as exc:
        warn(f"mcpsniff: OTLP export disabled: {exc}")
        return []
