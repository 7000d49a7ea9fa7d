"""A small MCP-ish HTTP upstream for the mitmproxy addon tests, and test certificates.

:class:`Upstream` is one aiohttp application on an ephemeral 127.0.0.1 port,
run in a background thread, optionally over TLS. It plays, by path:

* ``/mcp``: answers every JSON-RPC request with a result carrying the same id
  (``initialize`` gets a session id in ``Mcp-Session-Id``), notifications with
  202, and a body that is not JSON with 400 and a parse error;
* ``/idtype/mcp``: the same, but it echoes a numeric id as a string (a
  JR-RESP-ID finding, cause id-type);
* ``/truncated``: an SSE response whose second event is cut off (its last line
  has no end and no blank line follows), then a clean end of the response;
* ``/abort``: an SSE response that breaks its connection in the middle of an event;
* ``/page.html``: a plain HTML page, for non-MCP traffic;
* ``/legacy/sse`` + ``/legacy/message?sessionId=``: the legacy HTTP+SSE transport,
  answering each POST on the stream *before* its 202 (as servers may: the SDKs
  handle the message, then acknowledge it), the 202 coming ``ACK_DELAY`` later.

:func:`make_certificates` writes a CA and a server certificate for 127.0.0.1
and localhost, signed by that CA, with the ``cryptography`` package.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import ssl
import threading
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

T = TypeVar("T")

PAGE = b"<!doctype html><html><head><title>plain</title></head><body>non-mcp page</body></html>\n"


def whole_event(request_id: Any) -> bytes:
    """The first event ``/truncated`` and ``/abort`` send: the answer to the request."""
    return (
        b'id: t-1\ndata: {"jsonrpc":"2.0","id":%s,"result":{}}\n\n'
        % json.dumps(request_id).encode()
    )


#: The events ``/truncated`` and ``/abort`` send to a request with id 1: a whole one,
#: then a cut-off one.
WHOLE_EVENT = whole_event(1)
CUT_EVENT = b'id: t-2\ndata: {"jsonrpc":"2.0","id":2,"res'
ACK_DELAY = 0.2


class Upstream:
    """The aiohttp upstream on 127.0.0.1, in a thread with its own event loop."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context
        self.port = 0
        self.seen: list[tuple[str, str, bytes]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._streams: dict[str, web.StreamResponse] = {}

    def __enter__(self) -> Upstream:
        self._thread.start()
        self._call(self._start())
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)

    @property
    def origin(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("POST", "/mcp", self.mcp)
        app.router.add_route("POST", "/idtype/mcp", self.mcp)
        app.router.add_route("*", "/truncated", self.truncated)
        app.router.add_route("*", "/abort", self.abort)
        app.router.add_route("GET", "/page.html", self.page)
        app.router.add_route("GET", "/legacy/sse", self.legacy_stream)
        app.router.add_route("POST", "/legacy/message", self.legacy_message)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        assert site._server is not None
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        self._streams.clear()  # ends the legacy streams' handlers
        if self._runner is not None:
            await self._runner.cleanup()

    async def mcp(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.seen.append((request.method, request.path, body))
        try:
            message = json.loads(body)
        except ValueError:
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}}
            return web.json_response(error, status=400)
        if not isinstance(message, dict) or "id" not in message:
            return web.Response(status=202)
        answer_id = message["id"]
        if request.path.startswith("/idtype/") and isinstance(answer_id, int):
            answer_id = str(answer_id)
        headers = {}
        if message.get("method") == "initialize":
            headers["Mcp-Session-Id"] = uuid.uuid4().hex
        reply = {"jsonrpc": "2.0", "id": answer_id, "result": _result(message)}
        return web.json_response(reply, headers=headers)

    async def truncated(self, request: web.Request) -> web.StreamResponse:
        answer = _request_id(await request.read())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(whole_event(answer))
        await response.write(CUT_EVENT)
        await response.write_eof()
        return response

    async def abort(self, request: web.Request) -> web.StreamResponse:
        answer = _request_id(await request.read())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(whole_event(answer))
        await response.write(CUT_EVENT)
        await asyncio.sleep(0.2)  # let the bytes reach the proxy before the connection breaks
        assert request.transport is not None
        request.transport.abort()
        return response

    async def page(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.path, b""))
        return web.Response(body=PAGE, content_type="text/html")

    async def legacy_stream(self, request: web.Request) -> web.StreamResponse:
        session = uuid.uuid4().hex
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self._streams[session] = response
        await response.write(
            f"event: endpoint\ndata: /legacy/message?sessionId={session}\n\n".encode()
        )
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            while session in self._streams:
                await asyncio.sleep(0.05)
        self._streams.pop(session, None)
        return response

    async def legacy_message(self, request: web.Request) -> web.Response:
        stream = self._streams.get(request.query.get("sessionId", ""))
        if stream is None:
            return web.Response(status=404, text="no such session")
        message = json.loads(await request.read())
        if "id" in message:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": _result(message)}
            await stream.write(f"event: message\ndata: {json.dumps(reply)}\n\n".encode())
        await asyncio.sleep(ACK_DELAY)
        return web.Response(status=202, text="Accepted")


def _request_id(body: bytes) -> Any:
    """The id of the JSON-RPC request in ``body``; 1 when there is none."""
    try:
        message = json.loads(body)
    except ValueError:
        return 1
    return message.get("id", 1) if isinstance(message, dict) else 1


def _result(message: dict[str, Any]) -> dict[str, Any]:
    """A valid result for the few methods the tests send."""
    method = message.get("method")
    if method == "initialize":
        params = message.get("params") or {}
        return {
            "protocolVersion": params.get("protocolVersion", "2025-03-26"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcpsniff-addon-test-upstream", "version": "0"},
        }
    if method == "tools/list":
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "ok"}]}
    return {}


@dataclass(frozen=True)
class Certificates:
    """A test CA and a server certificate (with its key) that it signed."""

    ca: Path
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_certificates(folder: Path) -> Certificates:
    """A CA and a 127.0.0.1/localhost server certificate under ``folder``, as PEM files."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    validity = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=30))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcpsniff test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )

    folder.mkdir(parents=True, exist_ok=True)
    paths = Certificates(folder / "ca.pem", folder / "server.pem", folder / "server-key.pem")
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths
