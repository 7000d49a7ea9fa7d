"""The analyzer's copy of a compressed body: decoded whole, or as a stream.

Bodies are forwarded as they came, compressed or not; only the analyzer's
copy is decoded (RFC 9110 §8.4 content codings: gzip, deflate, br).
"""

from __future__ import annotations

import zlib
from typing import Any

import brotli  # type: ignore[import-untyped]


def decode_body(body: bytes, encoding: str | None) -> tuple[bytes, str | None]:
    """The analyzer's copy of a whole body, decompressed when its sender compressed it.

    Returns ``(copy, None)``, or ``(b"", why)`` when the body cannot be decoded
    (an unsupported coding such as zstd, or corrupt data): such a body is no
    frame to analyze, and analyzing the compressed bytes as JSON would be a
    false JR-PARSE on every message.
    """
    name = (encoding or "").strip().lower()
    if name in ("", "identity") or not body:
        return body, None
    try:
        if name in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS), None
        if name == "deflate":
            try:
                return zlib.decompress(body), None
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS), None
        if name == "br":
            return bytes(brotli.decompress(body)), None
    except Exception as exc:  # brotli.error, zlib.error: the body is not what it says
        return b"", f"cannot decode {name}: {exc}"
    return b"", f"unsupported content-encoding {name!r}"


class StreamDecoder:
    """Incremental decoding of a compressed event stream for the analyzer.

    An event stream is forwarded as it comes, compressed or not, and must not
    wait for its end to be analyzed. Once a stream cannot be decoded (an
    unsupported coding, corrupt data) it yields nothing more and ``problem``
    says why: the stream still passes, unanalyzed.
    """

    def __init__(self, name: str) -> None:
        self.problem: str | None = None
        self._zlib: Any = None
        self._brotli: Any = None
        if name in ("gzip", "x-gzip", "deflate"):
            # 32 + MAX_WBITS: a gzip or a zlib header, whichever the stream has.
            self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)
        elif name == "br":
            self._brotli = brotli.Decompressor()
        else:
            self.problem = f"unsupported content-encoding {name!r}"
        self.name = name

    def __call__(self, chunk: bytes, final: bool = False) -> bytes:
        """What ``chunk`` decodes to so far; with ``final``, the rest."""
        if self.problem is not None:
            return b""
        try:
            if self._zlib is not None:
                return self._zlib.flush() if final else self._zlib.decompress(chunk)
            return b"" if final else bytes(self._brotli.process(chunk))
        except Exception as exc:  # zlib.error, brotli.error
            self.problem = f"cannot decode {self.name}: {exc}"
            return b""


def stream_decoder(encoding: str | None) -> StreamDecoder | None:
    """A decoder for a compressed stream, or None when it is not compressed."""
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return None
    return StreamDecoder(name)
