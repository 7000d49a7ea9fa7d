"""mcpsniff as a mitmproxy addon: the MCP brain on top of mitmproxy's interception.

    mitmdump -s addons/mcpsniff.py --set mcpsniff_trace=trace.jsonl

Any traffic mitmproxy can see (reverse, regular, upstream or transparent mode,
HTTPS with mitmproxy's CA included) is checked for MCP: JSON-RPC POST bodies,
JSON and SSE responses, GET SSE streams and legacy ``/sse`` endpoints, on any
host and path. MCP exchanges are recorded with the same core and trace writer
as mcpsniff's own relays, so ``mcpsniff check`` and ``mcpsniff show`` work on
the result; other traffic passes untouched and unrecorded. Findings are
attached to their flows (comment and marker), so mitmweb shows them.

Options: ``mcpsniff_trace`` (path), ``mcpsniff_show`` (a line per MCP message
in the event log), ``mcpsniff_redact`` (default on) and ``mcpsniff_filter``
(a mitmproxy filter expression restricting what is examined).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

from mitmproxy import exceptions, flowfilter, http
from mitmproxy.net.http import url


def _import_package() -> str | None:
    """Import the mcpsniff package; return a clear error message if it cannot be found.

    mitmproxy puts this file's folder first on sys.path, where this very file
    would shadow the package of the same name: look past it. A checkout's
    package, next to this folder, is the fallback when none is installed.
    """
    here = Path(__file__).resolve().parent
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    shadow = sys.modules.get("mcpsniff")
    if shadow is not None and not hasattr(shadow, "__path__"):
        del sys.modules["mcpsniff"]
    try:
        try:
            import mcpsniff.relay.exchange
        except ImportError:
            sys.path.insert(0, str(here.parent))
            import mcpsniff.relay.exchange  # noqa: F401
    except ImportError as exc:
        return (
            f"mcpsniff is not importable from mitmproxy's Python ({sys.executable}): {exc}. "
            "Install it into that environment (pip install mcpsniff) and load the addon again."
        )
    finally:
        sys.path[:] = saved
    return None


IMPORT_ERROR = _import_package()
if IMPORT_ERROR is None:
    from mcpsniff.core.model import FindingRecord, FrameRecord, Record
    from mcpsniff.relay.exchange import ExchangeRecorder, HttpObserver, is_mcp_request, lowered
    from mcpsniff.relay.recorder import Recorder
    from mcpsniff.render import Style, Timeline
    from mcpsniff.trace.format import TraceWriter

log = logging.getLogger("mcpsniff")

#: mitmproxy markers for the worst finding on a flow.
MARKERS = {"error": ":red_circle:", "warning": ":warning:", "info": ":information_source:"}
_RANK = {"info": 0, "warning": 1, "error": 2}
#: Seconds records may wait in the trace's buffer: what a crash can lose at most.
FLUSH_DELAY = 0.1
#: Hosts (as the Host header gives them) remembered with their parsed form.
HOST_CACHE = 1024


def _header_list(message: http.Message) -> list[tuple[str, str]]:
    """``list(message.headers.items(multi=True))``, without a generator step per header.

    Decoded as mitmproxy's ``Headers`` decodes (``mitmproxy.http._native``).
    """
    return [
        (k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))
        for k, v in message.headers.fields
    ]


class McpSniff:
    """Records and checks the MCP traffic that passes through mitmproxy."""

    def __init__(self) -> None:
        self.writer: TraceWriter | None = None
        self.recorder: Recorder | None = None
        self.observer: HttpObserver | None = None
        self.filter: flowfilter.TFilter | None = None
        self.exchanges: dict[str, ExchangeRecorder] = {}
        self.flows: dict[int, http.HTTPFlow] = {}
        self.frame_exchange: dict[int, int] = {}
        #: Exchange number -> the function that analyzes its streamed chunks still pending.
        self.drains: dict[int, Any] = {}
        #: The (path, redact) of the open trace.
        self.opened: tuple[str, bool] | None = None
        self.is_running = False
        self.flush_pending = False
        self.timeline: Any = None
        #: Host header -> the host it names (``Request.pretty_host``), parsed once.
        self.hosts: dict[str, str] = {}

    # ------------------------------------------------------------------ options

    def load(self, loader: Any) -> None:
        loader.add_option(
            "mcpsniff_trace", str, "", "Write the MCP trace (JSONL) to this new file."
        )
        loader.add_option(
            "mcpsniff_show", bool, False, "Log a compact line per MCP message in the event log."
        )
        loader.add_option(
            "mcpsniff_redact",
            bool,
            True,
            "Redact credentials in the trace (the traffic is never changed).",
        )
        loader.add_option(
            "mcpsniff_filter",
            str,
            "",
            "Only examine flows matching this mitmproxy filter expression (default: every flow "
            "that looks like MCP).",
        )
        if IMPORT_ERROR is not None:
            log.error(IMPORT_ERROR)

    def running(self) -> None:
        self.is_running = True

    def _option_error(self, message: str) -> None:
        """Report a bad option value clearly.

        Fixed: an OptionsError raised while mitmproxy loads the script is logged by
        mitmproxy with a traceback. At startup the message is logged instead, a
        single clear line (mitmproxy then exits, as for any error logged during
        startup); once running, an OptionsError rejects the change (mitmproxy
        restores the previous value).
        """
        if self.is_running:
            raise exceptions.OptionsError(message)
        log.error(message)

    def configure(self, updated: set[str]) -> None:
        from mitmproxy import ctx

        if IMPORT_ERROR is not None:
            return
        if "mcpsniff_filter" in updated:
            spec = ctx.options.mcpsniff_filter
            if spec:
                try:
                    self.filter = flowfilter.parse(spec)
                except ValueError as exc:
                    self._option_error(f"mcpsniff_filter: {exc}")
                    return
            else:
                self.filter = None
        if "mcpsniff_trace" in updated or "mcpsniff_redact" in updated:
            self._open(ctx.options.mcpsniff_trace, ctx.options.mcpsniff_redact)
        if "mcpsniff_show" in updated:
            self.timeline = (
                Timeline(Style(False)) if ctx.options.mcpsniff_show and self.recorder else None
            )

    def _open(self, path: str, redact: bool) -> None:
        if self.writer is not None and (path, redact) == self.opened:
            # mitmproxy restoring the options after a rejected change: already recording.
            return
        if not path:
            self._close()
            log.warning("mcpsniff: no trace file; set mcpsniff_trace=FILE to record MCP traffic")
            return
        # Fixed: the new file is created before the current trace is closed, so a
        # rejected change (an existing file) leaves the recording going on.
        try:
            writer = TraceWriter.create(
                path,
                meta={"source": "mitmproxy addon", "redacted": redact},
                created=time.time(),
            )
        except FileExistsError:
            self._option_error(f"mcpsniff_trace: {path} already exists; choose a new file")
            return
        except OSError as exc:
            self._option_error(f"mcpsniff_trace: cannot write {path}: {exc.strerror or exc}")
            return
        self._close()
        self.writer = writer
        self.opened = (path, redact)
        # Performance: one flush per FLUSH_DELAY at most, not one per record (five per
        # JSON exchange) nor one per turn of the event loop; done() flushes the rest.
        self.recorder = Recorder(self.writer, "http", redact=redact, autoflush=False)
        self.recorder.listeners.append(self._record)
        self.recorder.batch_listeners.append(self._schedule_flush)
        # Sessions are keyed by the server's host and Mcp-Session-Id.
        self.observer = HttpObserver(self.recorder, redact=redact, key_by_host=True)
        log.info(f"mcpsniff: recording MCP traffic to {path}")

    def _schedule_flush(self) -> None:
        if self.flush_pending or self.writer is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in mitmproxy's loop (shutting down): flush now
            self.writer.flush()
            return
        self.flush_pending = True
        loop.call_later(FLUSH_DELAY, self._flush)

    def _flush(self) -> None:
        self.flush_pending = False
        if self.writer is not None:  # None: closed since, and flushed then
            self.writer.flush()

    def _close(self) -> None:
        for exchange in list(self.exchanges.values()):
            exchange.finish("proxy-shutdown")
        self.exchanges.clear()
        if self.recorder is not None:
            self.recorder.close(time.time())
        if self.writer is not None:
            self.writer.close()
        self.writer = self.recorder = self.observer = None
        self.opened = None

    def done(self) -> None:
        self._close()

    # ------------------------------------------------------------------ flows

    def _host(
        self, request: http.Request, headers: list[tuple[str, str]], first: dict[str, str]
    ) -> str:
        """``Request.pretty_host``, with the Host header parsed once per distinct value.

        Performance: pretty_host looks the header up again and parses it (IDNA
        included) on every request, though a client sends the same one each time.
        """
        if request.is_http2 or request.is_http3 or len(first) != len(headers):
            # An :authority, or repeated header names (mitmproxy joins repeated
            # Host headers): the rare cases, left to mitmproxy.
            return request.pretty_host
        authority = first.get("host")
        if not authority:
            return request.host
        host = self.hosts.get(authority)
        if host is None:
            if len(self.hosts) >= HOST_CACHE:
                self.hosts.clear()
            host = self.hosts[authority] = url.parse_authority(authority, check=False)[0]
        return host

    def request(self, flow: http.HTTPFlow) -> None:
        observer = self.observer
        if observer is None:
            return
        try:
            if self.filter is not None and not self.filter(flow):
                return
            request = flow.request
            # Converted once (each header decoded once), for every use below.
            headers = _header_list(request)
            first = lowered(headers)
            method = request.method
            path = request.path
            body = request.raw_content or b""
            if not is_mcp_request(method, headers, body, path, names=first):
                return
            exchange = observer.begin(
                method,
                path,
                headers,
                body,
                t=request.timestamp_start,
                host=f"{self._host(request, headers, first)}:{request.port}",
            )
            self.exchanges[flow.id] = exchange
            self.flows[exchange.number] = flow
        except Exception as exc:  # one bad flow must never break the proxy
            log.error(f"mcpsniff: cannot examine {flow.request.pretty_url}: {exc!r}")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        exchange = self.exchanges.get(flow.id)
        response = flow.response
        if exchange is None or response is None:
            return
        status = response.status_code
        headers = _header_list(response)
        try:
            # What response.headers.get("content-type", "") gives: repeated ones joined.
            content_type = ", ".join(v for k, v in headers if k.lower() == "content-type")
            if content_type.split(";")[0].strip().lower() == "text/event-stream":
                # mitmproxy buffers bodies by default, which would hang an event
                # stream: stream it. The head is recorded (which analyzes the
                # request) after this hook has let it go on, like every chunk.
                response.stream = self._tee(exchange, lambda: exchange.response(status, headers))
            else:
                # The body is buffered until the response hook anyway: nothing waits.
                exchange.response(status, headers)
        except Exception as exc:
            log.error(f"mcpsniff: {flow.request.pretty_url}: {exc!r}")

    def _tee(self, exchange: ExchangeRecorder, head: Any) -> Any:
        loop = asyncio.get_running_loop()
        pending: list[bytes] = []
        heads = [head]

        def observe() -> None:
            try:
                while heads:
                    heads.pop()()
                while pending:
                    exchange.body_chunk(pending.pop(0))
            except Exception as exc:
                pending.clear()
                log.error(f"mcpsniff: recording an event stream failed: {exc!r}")

        def tee(chunk: bytes) -> bytes:
            # Forward first, observe second: the chunk goes out before it is analyzed.
            if chunk:
                if not pending:
                    loop.call_soon(observe)
                pending.append(chunk)
            return chunk

        # Fixed: response() drains what is still pending (its chunks are out by then)
        # so that the exchange is finished, and its findings attached, in that hook.
        self.drains[exchange.number] = observe
        loop.call_soon(observe)
        return tee

    def response(self, flow: http.HTTPFlow) -> None:
        exchange = self.exchanges.pop(flow.id, None)
        if exchange is None or flow.response is None:
            return
        try:
            if not exchange.is_sse:
                body = flow.response.raw_content
                if body:
                    # mitmproxy holds the whole body already: handed over as it is.
                    exchange.whole_body(body)
            if self.drains:
                drain = self.drains.pop(exchange.number, None)
                if drain is not None:
                    drain()
        except Exception as exc:
            log.error(f"mcpsniff: {flow.request.pretty_url}: {exc!r}")
        # Fixed: the exchange used to be finished later (call_soon), after this hook had
        # returned, so the findings of its response reached the flow only after the
        # addons that come after this script (the save_stream_file/-w writer, mitmweb's
        # view) had taken it: saved flows and mitmweb lacked them. Finishing here costs
        # no forwarding delay for streamed (SSE) bodies, already sent; a JSON body is
        # held by mitmproxy until this hook returns anyway, and is analyzed once either way.
        self._finish(exchange, "complete")

    def error(self, flow: http.HTTPFlow) -> None:
        exchange = self.exchanges.pop(flow.id, None)
        if exchange is None:
            return
        message = flow.error.msg if flow.error else "unknown error"
        try:
            # Fixed: chunks of a broken stream still waiting to be analyzed come first.
            drain = self.drains.pop(exchange.number, None)
            if drain is not None:
                drain()
            if exchange.status is None:
                exchange.unreachable(flow.request.pretty_url, message)
            else:
                exchange.finish(f"error: {message}")
        except Exception as exc:
            log.error(f"mcpsniff: {flow.request.pretty_url}: {exc!r}")
        self.flows.pop(exchange.number, None)

    def _finish(self, exchange: ExchangeRecorder, outcome: str) -> None:
        try:
            exchange.finish(outcome)
        except Exception as exc:
            log.error(f"mcpsniff: recording failed: {exc!r}")
        self.flows.pop(exchange.number, None)

    # ------------------------------------------------------------------ findings on flows

    def _record(self, record: Record) -> None:
        if isinstance(record, FrameRecord):
            meta = record.meta or {}
            if isinstance(meta.get("exchange"), int):
                self.frame_exchange[record.seq] = meta["exchange"]
                if len(self.frame_exchange) > 100_000:
                    self.frame_exchange.clear()
        elif isinstance(record, FindingRecord):
            # Fixed: a finding naming two frames of one exchange (a request and its
            # answer, e.g. JR-RESP-ID) was attached to that flow twice.
            exchanges = dict.fromkeys(self.frame_exchange.get(seq, -1) for seq in record.seq)
            for number in exchanges:
                flow = self.flows.get(number)
                if flow is not None:
                    self._attach(flow, record)
        if self.timeline is not None:
            for line in self.timeline.feed(record):
                log.info(f"mcpsniff: {line}")

    @staticmethod
    def _attach(flow: http.HTTPFlow, finding: FindingRecord) -> None:
        line = f"{finding.severity} {finding.rule}: {finding.message}"
        flow.comment = f"{flow.comment}\n{line}" if flow.comment else line
        worst = flow.metadata.get("mcpsniff_severity")
        if worst is None or _RANK[finding.severity] > _RANK[worst]:
            flow.metadata["mcpsniff_severity"] = finding.severity
            flow.marked = MARKERS[finding.severity]
        flow.metadata.setdefault("mcpsniff_findings", []).append(
            {"rule": finding.rule, "severity": finding.severity, "message": finding.message}
        )


addons = [McpSniff()]
