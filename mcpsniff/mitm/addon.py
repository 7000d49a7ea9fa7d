"""mcpsniff as a mitmproxy addon: the MCP brain on top of mitmproxy's interception.

    mitmdump -s addons/mcpsniff.py --set mcpsniff_trace=trace.jsonl

Any traffic mitmproxy can see (reverse, regular, upstream or transparent mode,
HTTPS with mitmproxy's CA included) is checked for MCP: JSON-RPC POST bodies,
JSON and SSE responses, GET SSE streams and legacy ``/sse`` endpoints, on any
host and path. MCP exchanges are recorded with the same core and trace writer
as mcpsniff's own relays, so ``mcpsniff check`` and ``mcpsniff show`` work on
the result; other traffic passes untouched and unrecorded. Findings are
attached to their flows (comment and marker), so mitmweb shows them.

The addon only observes: it notes what happens to each MCP exchange
(``mcpsniff.capture.remote_exchange``) and sends the observations down the
same capture channel as ``mcpsniff http`` to an analysis process beside
mitmdump (``mcpsniff.mitm.link``, running ``mcpsniff.mitm.worker``),
which analyzes them and writes the trace, so the analysis costs mitmdump no
request rate. A flow's findings come back moments after its response has gone
on; they are put on the flow then, with an ``update`` event so that mitmweb's
view shows them. When flows are saved (``save_stream_file``, ``-w``), each MCP
response is held instead until its findings are on the flow, since the saving
addon takes the flow as it is at the ``response`` hook (``mcpsniff_hold``).

Options: ``mcpsniff_trace`` (path), ``mcpsniff_show`` (a line per MCP message
in the event log), ``mcpsniff_redact`` (default on), ``mcpsniff_filter`` (a
mitmproxy filter expression restricting what is examined),
``mcpsniff_hold`` (auto, on or off), and ``mcpsniff_fault`` / ``mcpsniff_faults``
(misbehave on purpose, as ``mcpsniff http --fault``: ``mcpsniff.mitm.flow_faults``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any

from mitmproxy import ctx, exceptions, flowfilter, hooks, http
from mitmproxy.net.http import url

from mcpsniff.capture.remote_exchange import RemoteExchange, RemoteObserver
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.supervisor import Forwarded, Supervisor
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.http.classify import is_mcp_request
from mcpsniff.core.http.headers import client_address, lowered
from mcpsniff.core.http.session_keys import RELAY_SESSION
from mcpsniff.faults.spec import STDIO_ONLY, FaultSpecError, load_faults
from mcpsniff.mitm.flow_faults import FlowFaults, SseFaults
from mcpsniff.mitm.flow_findings import FlowBook
from mcpsniff.mitm.link import AnalysisClient, Reply, create_trace
from mcpsniff.trace.codec import header as trace_header
from mcpsniff.trace.salvage import TracePlace


class _InertLog(logging.Filter):
    """Every event-log line is escaped: it quotes URLs, methods and findings from traffic."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = terminal_safe(record.getMessage()), None
        return True


log = logging.getLogger("mcpsniff")
log.addFilter(_InertLog())

#: Hosts (as the Host header gives them) remembered with their parsed form.
HOST_CACHE = 1024
#: ``mcpsniff_hold`` values.
HOLD_CHOICES = ("auto", "on", "off")


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
        self.analysis: AnalysisClient | None = None
        self.observer: RemoteObserver | None = None
        self.filter: flowfilter.TFilter | None = None
        self.exchanges: dict[str, RemoteExchange] = {}
        #: The flows of the exchanges whose findings are not back yet (held or
        #: not): a new book per analysis process.
        self.book: FlowBook[http.HTTPFlow] = FlowBook()
        #: Hold MCP responses until their findings are on the flow (``mcpsniff_hold``).
        self.hold = False
        #: ``update`` events under way, announcing findings put on flows already gone on.
        self.updates: set[asyncio.Task[Any]] = set()
        #: Exchange number -> the function that analyzes its streamed chunks still pending.
        self.drains: dict[int, Any] = {}
        #: The (path, redact) of the open trace.
        self.opened: tuple[str, bool] | None = None
        self.is_running = False
        self.show = False
        #: Analysis processes of closed traces, finishing them.
        self.retiring: set[asyncio.Task[Any]] = set()
        #: Host header -> the host it names (``Request.pretty_host``), parsed once.
        self.hosts: dict[str, str] = {}
        #: Per analysis client: what completes its trace should its process die.
        self.supervisors: dict[int, Supervisor] = {}
        #: ``mcpsniff_fault``: what misbehaves on purpose (None: nothing does).
        self.faults: FlowFaults | None = None

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
        loader.add_option(
            "mcpsniff_hold",
            str,
            "auto",
            "Hold each MCP response until its findings are on the flow, so that the addons "
            "after this one (a flow file, other scripts) see them there: on, off, or auto (on "
            "while save_stream_file is set). Off, findings follow moments later with an update "
            "event, which mitmweb shows, and responses wait for nothing.",
            choices=HOLD_CHOICES,
        )
        loader.add_option(
            "mcpsniff_fault",
            Sequence[str],
            [],
            "Inject a fault, as mcpsniff http --fault: 'ACTION [ARGS] [when FILTER] "
            "[MODIFIERS]' (repeatable; docs/faults.md). Changes the traffic on purpose.",
        )
        loader.add_option(
            "mcpsniff_faults", str, "", "Read fault specifications from this file, one a line."
        )
        loader.add_option(
            "mcpsniff_otlp",
            str,
            "",
            "Also send MCP spans and metrics live to this OpenTelemetry collector (OTLP URL, "
            "e.g. http://127.0.0.1:4318; needs mcpsniff[otel]). Set with mcpsniff_trace.",
        )

    def running(self) -> None:
        self.is_running = True
        if self.analysis is not None:
            self.analysis.attach(asyncio.get_running_loop())

    def _option_error(self, message: str) -> None:
        """Report a bad option value clearly.

        At startup the message is logged, a single clear line (mitmproxy then
        exits, as for any error logged during startup; an OptionsError raised
        while it loads the script would be logged with a traceback); once
        running, an OptionsError rejects the change (mitmproxy restores the
        previous value).
        """
        if self.is_running:
            raise exceptions.OptionsError(message)
        log.error(message)

    def configure(self, updated: set[str]) -> None:
        if "mcpsniff_hold" in updated or "save_stream_file" in updated:
            mode = ctx.options.mcpsniff_hold
            saving = bool(getattr(ctx.options, "save_stream_file", None))
            self.hold = mode == "on" or (mode == "auto" and saving)
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
        if "mcpsniff_show" in updated:
            self.show = ctx.options.mcpsniff_show
            if self.analysis is not None:
                self.analysis.set_show(self.show)
        if updated & {"mcpsniff_fault", "mcpsniff_faults", "mcpsniff_redact"}:
            self._faults(
                list(ctx.options.mcpsniff_fault),
                ctx.options.mcpsniff_faults,
                ctx.options.mcpsniff_redact,
            )
        if "mcpsniff_trace" in updated or "mcpsniff_redact" in updated:
            self._open(ctx.options.mcpsniff_trace, ctx.options.mcpsniff_redact)

    def _faults(self, specs: list[str], path: str, redact: bool) -> None:
        """Parse the faults; a bad one is one clear option error."""
        try:
            faults = load_faults(specs, [path] if path else [])
        except FaultSpecError as exc:
            self._option_error(f"mcpsniff_fault: {exc}")
            return
        refused = [f for f in faults if f.action in STDIO_ONLY]
        if refused:
            self._option_error(
                f"mcpsniff_fault: {refused[0].action} needs a stdio relay ({refused[0].text[:80]})"
            )
            return
        self.faults = FlowFaults(faults, verbatim=not redact) if faults else None
        if faults:
            log.warning(f"mcpsniff: injecting {len(faults)} fault(s) into MCP traffic")

    def _open(self, path: str, redact: bool) -> None:
        if self.analysis is not None and (path, redact) == self.opened:
            # mitmproxy restoring the options after a rejected change: already recording.
            return
        if not path:
            self._close()
            log.warning("mcpsniff: no trace file; set mcpsniff_trace=FILE to record MCP traffic")
            return
        # The new file is created before the current trace is closed, so that a
        # rejected change (an existing file) leaves the recording going on; and
        # here, not in the analysis process, so that a bad path is one clear
        # option error at once.
        try:
            fd = create_trace(path)
            info = os.fstat(fd)
        except FileExistsError:
            self._option_error(f"mcpsniff_trace: {path} already exists; choose a new file")
            return
        except OSError as exc:
            self._option_error(f"mcpsniff_trace: cannot write {path}: {exc.strerror or exc}")
            return
        book: FlowBook[http.HTTPFlow] = FlowBook()
        meta = {"source": "mitmproxy addon", "redacted": redact}
        created = time.time()
        try:
            analysis = AnalysisClient.start(
                fd,
                path=path,
                meta=meta,
                created=created,
                redact=redact,
                show=self.show,
                on_reply=functools.partial(self._on_reply, book),
                # Bound late: ``analysis`` is this call's result, told apart from a
                # newer trace's by the time it can die.
                on_gone=lambda reason: self._on_gone(analysis, reason),
                on_late=lambda message: log.warning(f"mcpsniff: {message}"),
                outputs=Outputs(otlp=getattr(ctx.options, "mcpsniff_otlp", "") or ""),
            )
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(path)
            self._option_error(
                f"mcpsniff: cannot start the analysis process: {exc.strerror or exc}"
            )
            return
        self._close()
        self.analysis = analysis
        self.book = book
        self.opened = (path, redact)
        with contextlib.suppress(RuntimeError):  # no loop yet: running() attaches it
            analysis.attach(asyncio.get_running_loop())
        # The analysis process keys sessions by the server's host and Mcp-Session-Id.
        observer = self.observer = RemoteObserver(analysis.sink)
        # The analysis process writes the header: this run's records are the whole
        # file, and should it die before the header, salvaging writes that first.
        place = TracePlace(
            Path(path), 0, inode=(info.st_dev, info.st_ino), header=trace_header(meta, created)
        )
        # Should it die, the MCP exchanges it missed are the gap. mitmproxy may run
        # for days after: each salvage is told when it is made.
        self.supervisors[id(analysis)] = Supervisor(
            analysis.analysis,
            place,
            Forwarded(RELAY_SESSION, lambda: {"exchanges": observer.numbered}),
            _log_warning,
            alarm=_log_error,
            activity="proxying",
            tell_each_salvage=True,
        )
        log.info(f"mcpsniff: recording MCP traffic to {path}")

    def _close(self) -> None:
        for exchange in list(self.exchanges.values()):
            exchange.finish("proxy-shutdown")
        self.exchanges.clear()
        self.drains.clear()
        analysis = self.analysis
        if analysis is not None:
            analysis.close_sessions(time.time())
            self._retire(analysis)
        self.analysis = self.observer = None
        self.opened = None

    def _retire(self, analysis: AnalysisClient) -> None:
        """Let ``analysis`` finish its trace, in the background while mitmproxy runs.

        If it died first, its supervisor completes the trace once it has exited.
        """
        supervisor = self.supervisors.pop(id(analysis))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # mitmproxy's loop is gone: wait here
            supervisor.settle_blocking(analysis.finish_now())
            return
        analysis.attach(loop)

        async def retire() -> None:
            await supervisor.settle(await analysis.finish())

        task = loop.create_task(retire())
        self.retiring.add(task)
        task.add_done_callback(self.retiring.discard)

    def done(self) -> Any:
        """Close the trace; an awaitable that is done once every trace is complete.

        Not ``async``: mitmproxy calls ``done`` synchronously when a script is
        unloaded at run time (then the analysis process finishes in the background),
        and awaits what it returns at shutdown, so mitmdump exits with whole traces.
        """
        self._close()
        if self.retiring:
            return asyncio.gather(*self.retiring)
        return None

    def _on_gone(self, analysis: AnalysisClient, reason: str) -> None:
        """An analysis process died: its supervisor says so once; proxying goes on, unrecorded.

        The observer stays: its observations go nowhere now, but it goes on
        numbering the MCP exchanges, so that the trace can say how many it
        lacks. What the process never recorded is accounted for in the trace
        at once, and the rest when the trace is closed. A retired one (its
        trace closed, not finished yet) is left to its retirement.
        """
        if analysis is self.analysis:
            self.exchanges.clear()
            self.drains.clear()
            self.book.clear()
        supervisor = self.supervisors.get(id(analysis))
        if supervisor is not None:
            supervisor.lost(reason)

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

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        observer = self.observer
        if observer is None:
            return None
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
                return None
            original, injection, faults = body, None, self.faults
            if faults is not None:
                injection, body = faults.request_body(flow, body)
            exchange = observer.begin(
                method,
                path,
                headers,
                body,
                t=request.timestamp_start,
                host=f"{self._host(request, headers, first)}:{request.port}",
                client=client_address(flow.client_conn.peername),
            )
            self.exchanges[flow.id] = exchange
            self.book.remember(exchange.number, flow)
            if faults is not None and injection is not None:
                return faults.request(flow, observer, exchange, injection, original)
        except Exception as exc:  # one bad flow must never break the proxy
            log.error(f"mcpsniff: cannot examine {flow.request.pretty_url}: {exc!r}")
        return None

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
                faulted = None
                if self.faults is not None and self.observer is not None:
                    faulted = self.faults.sse(flow, self.observer, exchange)
                response.stream = self._tee(
                    exchange, lambda: exchange.response(status, headers), faulted
                )
            else:
                # The body is buffered until the response hook anyway: nothing waits.
                exchange.response(status, headers)
        except Exception as exc:
            log.error(f"mcpsniff: {flow.request.pretty_url}: {exc!r}")

    def _tee(self, exchange: RemoteExchange, head: Any, faulted: SseFaults | None = None) -> Any:
        loop = asyncio.get_running_loop()
        pending: list[Any] = []
        heads = [head]

        def observe() -> None:
            try:
                while heads:
                    heads.pop()()
                while pending:
                    step = pending.pop(0)
                    if type(step) is bytes:
                        exchange.body_chunk(step)
                    else:
                        step()  # a fault told before the bytes it marks
            except Exception as exc:
                pending.clear()
                log.error(f"mcpsniff: recording an event stream failed: {exc!r}")

        def tee(chunk: bytes) -> bytes:
            # Forward first, observe second: the chunk goes out before it is analyzed.
            if faulted is not None:
                chunk, steps = faulted.chunk(chunk) if chunk else faulted.end()
                if steps:
                    if not pending:
                        loop.call_soon(observe)
                    pending.extend(steps)
                return chunk
            if chunk:
                if not pending:
                    loop.call_soon(observe)
                pending.append(chunk)
            return chunk

        # response() drains what is still pending (its chunks are out by then)
        # so that the exchange is finished, and its findings attached, in that hook.
        self.drains[exchange.number] = observe
        loop.call_soon(observe)
        return tee

    def response(self, flow: http.HTTPFlow) -> asyncio.Future[None] | None:
        exchange = self.exchanges.pop(flow.id, None)
        if exchange is None or flow.response is None:
            return
        wait = None
        try:
            if exchange.status is None:
                # Answered by a fault in the request hook: no responseheaders hook came.
                exchange.response(flow.response.status_code, _header_list(flow.response))
            if not exchange.is_sse:
                body = flow.response.raw_content
                if body and self.faults is not None and self.observer is not None:
                    body, wait = self.faults.json_response(flow, self.observer, exchange, body)
                if body:
                    # mitmproxy holds the whole body already: handed over as it is.
                    exchange.whole_body(body)
            if self.drains:
                drain = self.drains.pop(exchange.number, None)
                if drain is not None:
                    drain()
        except Exception as exc:
            log.error(f"mcpsniff: {flow.request.pretty_url}: {exc!r}")
        # Finished in this hook, not later: the addons after this script (the
        # save_stream_file/-w writer, mitmweb's view) take the flow when it returns,
        # and its findings must be on it by then. That costs no forwarding delay:
        # streamed (SSE) bodies are already sent, and mitmproxy holds a JSON body
        # until this hook returns anyway.
        self._finish(exchange, "complete")
        # The analysis runs elsewhere: mitmproxy awaits its findings before the later
        # addons see the flow.
        findings = self._findings_of(exchange.number)
        if wait is None:
            return findings
        return asyncio.ensure_future(_both(wait, findings))

    def error(self, flow: http.HTTPFlow) -> asyncio.Future[None] | None:
        exchange = self.exchanges.pop(flow.id, None)
        if exchange is None:
            return
        message = flow.error.msg if flow.error else "unknown error"
        try:
            # Chunks of a broken stream still waiting to be observed come first.
            drain = self.drains.pop(exchange.number, None)
            if drain is not None:
                drain()
            if exchange.status is None:
                exchange.unreachable(flow.request.pretty_url, message)
            else:
                exchange.finish(f"error: {message}")
        except Exception as exc:
            log.error(f"mcpsniff: {flow.request.pretty_url}: {exc!r}")
        return self._findings_of(exchange.number)

    @staticmethod
    def _finish(exchange: RemoteExchange, outcome: str) -> None:
        try:
            exchange.finish(outcome)
        except Exception as exc:
            log.error(f"mcpsniff: recording failed: {exc!r}")

    def _findings_of(self, number: int) -> asyncio.Future[None] | None:
        """What the hook of finished exchange ``number`` returns: mitmproxy awaits it.

        Holding (``mcpsniff_hold``), a future done once the exchange's findings
        are on its flow; else None, and they follow (``_on_reply``) while the
        flow is among the last ``FLOW_MEMORY``. A plain function returning a
        future, not a coroutine: no coroutine per flow.
        """
        analysis = self.analysis
        if analysis is None:
            self.book.forget(number)
            return None
        if not self.hold:
            return None
        waiter = analysis.sync(number)
        if waiter is None:
            self.book.forget(number)
        else:
            self.book.hold(number)
        return waiter

    # ------------------------------------------------------------------ findings on flows

    def _on_reply(self, book: FlowBook[http.HTTPFlow], reply: Reply) -> None:
        """Findings onto their flows, show lines into the event log; forget synced flows."""
        gone_on = book.apply(reply)
        for line in reply.lines:
            log.info(f"mcpsniff: {line}")
        if gone_on:
            self._announce(gone_on)

    def _announce(self, flows: list[http.HTTPFlow]) -> None:
        """Tell the other addons (mitmweb's view) that these flows have changed."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # mitmproxy's loop is gone: nobody is left to tell
            return
        task = loop.create_task(ctx.master.addons.trigger_event(hooks.UpdateHook(flows)))
        self.updates.add(task)
        task.add_done_callback(self.updates.discard)


async def _both(first: Awaitable[None], second: Awaitable[None] | None) -> None:
    """A held (delayed) response, then its findings."""
    await first
    if second is not None:
        await second


def _log_warning(text: str) -> None:
    log.warning(f"mcpsniff: {text}")


def _log_error(text: str) -> None:
    log.error(f"mcpsniff: {text}")
