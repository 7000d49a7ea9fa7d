"""The ``mcpsniff ui`` web server: the page, a small JSON API and server-sent events.

The page (``static/``) is plain HTML, CSS and JavaScript shipped in the
package. Every response carries a strict Content-Security-Policy: scripts and
styles come from this server only, nothing is fetched from anywhere else, and
no inline script runs, so even a string from traffic that reached the DOM as
markup could not execute (the page only ever sets ``textContent``).

Who may ask is decided by ``guard.py``: the Host check against DNS
rebinding, the refusal of cross-site requests (``Sec-Fetch-Site``, ``Origin``)
and the run's token, which the page receives as a ``SameSite=Strict`` cookie.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson
from aiohttp import web

from mcpsniff.ui.assets import STATIC, static_text
from mcpsniff.ui.collector import collector_paused
from mcpsniff.ui.details import json_safe, message_detail
from mcpsniff.ui.downloads import FORMATS, DownloadError, session_download
from mcpsniff.ui.follow import file_size
from mcpsniff.ui.guard import Guard
from mcpsniff.ui.library import Library
from mcpsniff.ui.model import SESSION_LIST_LIMIT
from mcpsniff.ui.queries import QueryCache, cached_key, parse, session_query, session_stats

#: How often the trace files are polled (seconds).
POLL_INTERVAL = 0.3
#: A comment line on the event stream this often keeps proxies and browsers from timing out.
KEEPALIVE = 15.0
#: Rows per page of ``/api/session/{id}/rows``.
PAGE_LIMIT = 5000
#: A trace file larger than this is not compared in the page (``mcpsniff diff`` reads any):
#: the comparison reads both files whole, in the server's memory.
COMPARE_FILE_LIMIT = 256 << 20
#: Server-sent event streams open at once.
STREAM_LIMIT = 64
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
T = TypeVar("T")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
#: Two sessions (trace file, session key each) compared request by request, for the page.
#: ``replay`` sits beside ``ui`` in the layers (docs/architecture.md), so the command
#: line, above both, hands its comparison in.
Comparer = Callable[[Path, str, Path, str], dict[str, Any]]


def dumps(value: Any) -> bytes:
    """JSON for the page; values from traffic that orjson refuses go through ``json_safe``."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(json_safe(value), ensure_ascii=True).encode("ascii")


def json_response(value: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=dumps(value), status=status, content_type="application/json", headers=SECURITY_HEADERS
    )


class UiServer:
    """The aiohttp application over a ``Library``."""

    def __init__(
        self,
        library: Library,
        host: str,
        port: int,
        token: str | None = None,
        comparer: Comparer | None = None,
    ) -> None:
        self.library = library
        self.comparer = comparer
        self.host = host
        self.port = port
        self.guard = Guard(host, token)
        self.cache = QueryCache()
        self._changed = asyncio.Event()
        self._streams = 0
        #: The open event streams, ended at shutdown (they wait up to KEEPALIVE otherwise).
        self.stream_tasks: set[asyncio.Task[Any]] = set()
        self.app = web.Application(middlewares=[self._guard])
        self.app.add_routes(
            [
                web.get("/", self.index),
                web.get("/static/{name}", self.static),
                web.get("/api/sessions", self.sessions),
                web.get("/api/events", self.events),
                web.get("/api/session/{sid}/rows", self.rows),
                web.get("/api/session/{sid}/findings", self.findings),
                web.get("/api/session/{sid}/message/{n}", self.message),
                web.get("/api/session/{sid}/filter", self.filter),
                web.get("/api/session/{sid}/stats", self.stats),
                web.get("/api/session/{sid}/download/{fmt}", self.download),
                web.get("/api/compare", self.compare),
            ]
        )

    # ------------------------------------------------------------------ plumbing

    def allowed_host(self, value: str | None) -> bool:
        """Whether a request's Host header names this server (DNS-rebinding guard)."""
        return self.guard.allowed_host(value)

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        guard = self.guard
        if not guard.allowed_host(request.headers.get("Host")):
            return web.Response(status=421, text="mcpsniff ui: unknown Host\n")
        if request.path.startswith("/static/"):
            return await handler(request)  # the page's own code: no data in it
        if request.path == "/":
            # The page holds no data, so a link from anywhere may open it; on a
            # listener others can reach it needs the token (the printed URL's).
            if (
                guard.loopback
                or guard.token_in_query(request.query)
                or guard.has_token(request.headers, request.cookies, self.port)
            ):
                return await handler(request)
            return web.Response(
                status=403,
                text="mcpsniff ui: open the URL mcpsniff ui printed, with its ?token=\n",
            )
        why = guard.cross_site(request.headers)
        if why is not None:
            return web.Response(
                status=403, text=f"mcpsniff ui: cross-site request refused ({why})\n"
            )
        if not guard.has_token(request.headers, request.cookies, self.port):
            return web.Response(
                status=403,
                text="mcpsniff ui: this run's token is missing (load the page first)\n",
            )
        return await handler(request)

    async def poll_forever(self) -> None:
        """Follow the trace files, waking the event streams when something changed."""
        while True:
            try:
                changed = await asyncio.to_thread(self.library.poll)
            except Exception as exc:  # a bad file must not stop the UI
                print(f"mcpsniff ui: reading the traces failed: {exc!r}", flush=True)
                changed = False
            if changed:
                self._changed.set()
                self._changed = asyncio.Event()
                await asyncio.sleep(POLL_INTERVAL / 3)
            else:
                await asyncio.sleep(POLL_INTERVAL)

    def _session(self, request: web.Request) -> tuple[Any, Any]:
        found = self.library.find(request.match_info["sid"])
        if found is None:
            raise web.HTTPNotFound(text="no such session", headers=SECURITY_HEADERS)
        return found

    # ------------------------------------------------------------------ handlers

    async def index(self, request: web.Request) -> web.Response:
        response = web.Response(
            text=static_text("index.html"), content_type="text/html", headers=SECURITY_HEADERS
        )
        # The page's fetch and EventSource send it back; no other site's request
        # does (SameSite=Strict), and no script reads it (HttpOnly).
        response.set_cookie(
            self.guard.cookie_name(self.port),
            self.guard.token,
            path="/",
            httponly=True,
            samesite="Strict",
        )
        return response

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        return web.Response(
            text=static_text(name), content_type=STATIC[name], headers=SECURITY_HEADERS
        )

    def _snapshot(self) -> dict[str, Any]:
        return {
            "version": self.library.version,
            # The newest ones: a trace of 200,000 sessions made every snapshot (sent
            # again on each change) 59 MB, and a list no page can draw.
            "sessions": self.library.sessions(SESSION_LIST_LIMIT),
            "total": self.library.session_count(),
            "problems": self.library.problems(),
            "live": True,
        }

    async def sessions(self, request: web.Request) -> web.Response:
        return json_response(self._snapshot())

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: the session list now, and again whenever it changes."""
        if self._streams >= STREAM_LIMIT:
            return web.Response(status=503, text="too many open event streams\n")
        response = web.StreamResponse(
            headers={**SECURITY_HEADERS, "Content-Type": "text/event-stream"}
        )
        await response.prepare(request)
        self._streams += 1
        task = asyncio.current_task()
        if task is not None:
            self.stream_tasks.add(task)
        try:
            while True:
                changed = self._changed
                await response.write(b"event: sessions\ndata: " + dumps(self._snapshot()) + b"\n\n")
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), KEEPALIVE)
                if not changed.is_set():
                    await response.write(b": keepalive\n\n")
        except ConnectionResetError:
            pass
        finally:
            self._streams -= 1
            if task is not None:
                self.stream_tasks.discard(task)
        return response

    async def rows(self, request: web.Request) -> web.Response:
        _followed, session = self._session(request)
        start = _int(request.query.get("from"), 0)
        limit = min(_int(request.query.get("limit"), PAGE_LIMIT), PAGE_LIMIT)
        with self.library.lock:
            rows = session.rows_json(start, start + limit)
            total = len(session.rows)
        body = b'{"from":%d,"total":%d,"rows":%s}' % (start, total, rows)
        return web.Response(body=body, content_type="application/json", headers=SECURITY_HEADERS)

    async def findings(self, request: web.Request) -> web.Response:
        _followed, session = self._session(request)
        start = _int(request.query.get("from"), 0)
        with self.library.lock:
            findings = session.findings[start : start + PAGE_LIMIT]
            total = len(session.findings)
        return json_response({"from": start, "findings": findings, "total": total})

    async def message(self, request: web.Request) -> web.Response:
        followed, session = self._session(request)
        n = _int(request.match_info["n"], -1)
        detail = await _bulk(message_detail, followed.model.path, session, n)
        if detail is None:
            raise web.HTTPNotFound(text="no such message", headers=SECURITY_HEADERS)
        return json_response(detail)

    async def filter(self, request: web.Request) -> web.Response:
        followed, session = self._session(request)
        expression = request.query.get("q", "").strip()
        if not expression:
            return json_response({"rows": None})
        flt = parse(expression)
        if isinstance(flt, dict):
            return json_response(flt)
        path = followed.model.path
        key = cached_key(path, session, "filter:" + expression)
        stats_key = cached_key(path, session, "stats")

        def query() -> list[int]:
            # The pass that filters the session also sums it up: the stats tab
            # then answers from the cache instead of reading the trace again.
            rows, stats = session_query(path, session, flt)
            self.cache.put(stats_key, stats)
            return rows

        rows = await _bulk(self.cache.get, key, query)
        return json_response({"rows": rows})

    async def stats(self, request: web.Request) -> web.Response:
        followed, session = self._session(request)
        path = followed.model.path
        key = cached_key(path, session, "stats")
        stats = await _bulk(self.cache.get, key, lambda: session_stats(path, session))
        return json_response(json_safe(stats))

    async def download(self, request: web.Request) -> web.Response:
        """The session as a trace slice, a HAR or an HTML report, to save."""
        followed, session = self._session(request)
        fmt = request.match_info["fmt"]
        if fmt not in FORMATS:
            raise web.HTTPNotFound(text="no such format", headers=SECURITY_HEADERS)
        try:
            made = await _bulk(session_download, followed.model.path, session.key, fmt)
        except DownloadError as exc:
            return web.Response(status=409, text=f"{exc}\n", headers=SECURITY_HEADERS)
        except OSError as exc:
            return web.Response(
                status=500,
                text=f"reading the trace failed: {exc.strerror or exc}\n",
                headers=SECURITY_HEADERS,
            )
        headers = {
            **SECURITY_HEADERS,
            # Saved, never shown: an HTML report would otherwise open under this origin.
            "Content-Disposition": f'attachment; filename="{made.filename}"',
        }
        return web.Response(body=made.body, content_type=made.media_type, headers=headers)

    async def compare(self, request: web.Request) -> web.Response:
        """Two sessions (``?a=ID&b=ID``) side by side: requests aligned, answers compared."""
        if self.comparer is None:
            raise web.HTTPNotFound(text="comparison not available", headers=SECURITY_HEADERS)
        sides = []
        for name in ("a", "b"):
            found = self.library.find(request.query.get(name, ""))
            if found is None:
                raise web.HTTPNotFound(text=f"no such session {name}", headers=SECURITY_HEADERS)
            followed, session = found
            sides.append((followed.model.path, session.key))
        (path_a, key_a), (path_b, key_b) = sides
        for path in (path_a, path_b):
            if file_size(path) > COMPARE_FILE_LIMIT:
                limit = COMPARE_FILE_LIMIT >> 20
                return json_response(
                    {"error": f"{path.name} is over {limit} MiB: compare it with mcpsniff diff"}
                )
        # Keyed by both files' sizes: a session that grew is compared again.
        key = ("compare", str(path_a), file_size(path_a), key_a)
        key += (str(path_b), file_size(path_b), key_b)
        comparer = self.comparer
        result = await asyncio.to_thread(
            self.cache.get, key, lambda: comparer(path_a, key_a, path_b, key_b)
        )
        return json_response(json_safe(result))


async def _bulk(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a thread, the cycle collector paused (it reads a trace in bulk)."""

    def paused() -> T:
        with collector_paused():
            return work(*args)

    return await asyncio.to_thread(paused)


def _int(text: str | None, default: int) -> int:
    try:
        return max(0, int(text)) if text is not None else default
    except ValueError:
        return default


async def serve(
    roots: list[Path],
    host: str,
    port: int,
    announce: Callable[[str], None],
    ready: Callable[[str], None] | None = None,
    token: str | None = None,
    comparer: Comparer | None = None,
) -> None:
    """Serve the UI over ``roots`` until cancelled (``token``: the run's, else a random one).

    ``comparer`` answers ``/api/compare`` (none: the page offers no comparison).
    """
    stop = asyncio.Event()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        # SIGTERM (kill, a service manager) stops as cleanly as Ctrl-C does;
        # installed before the URL is announced, so no early TERM is lost.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    library = Library(roots)
    server = UiServer(library, host, port, token, comparer)
    await asyncio.to_thread(library.poll)
    runner = web.AppRunner(server.app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
    bound = sockets[0].getsockname()[1] if sockets else port
    server.port = bound
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    if not server.guard.loopback:
        # Anyone on the network can connect: the page, too, needs the token.
        url += f"?token={server.guard.token}"
    announce(f"mcpsniff ui: serving {url} (Ctrl-C stops)")
    if ready is not None:
        ready(url)
    poller = asyncio.create_task(server.poll_forever())
    try:
        await stop.wait()
    finally:
        poller.cancel()
        for task in list(server.stream_tasks):
            task.cancel()
        await runner.cleanup()
