"""core/http/decoding.py: the analyzer's decoded copy of a compressed body or stream."""

from __future__ import annotations

import gzip
import zlib

import brotli  # type: ignore[import-untyped]

from mcpsniff.core.http.decoding import decode_body, stream_decoder

BODY = b'{"jsonrpc":"2.0","id":1,"result":{}}'


def test_each_supported_coding_is_undone() -> None:
    assert decode_body(gzip.compress(BODY), "gzip") == (BODY, None)
    assert decode_body(gzip.compress(BODY), " X-GZIP ") == (BODY, None)
    assert decode_body(zlib.compress(BODY), "deflate") == (BODY, None)
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert decode_body(raw_deflate.compress(BODY) + raw_deflate.flush(), "deflate") == (BODY, None)
    assert decode_body(brotli.compress(BODY), "br") == (BODY, None)


def test_an_uncompressed_body_is_the_copy_itself() -> None:
    assert decode_body(BODY, None) == (BODY, None)
    assert decode_body(BODY, "identity") == (BODY, None)


def test_an_unsupported_or_corrupt_body_is_no_copy_and_says_why() -> None:
    assert decode_body(BODY, "zstd") == (b"", "unsupported content-encoding 'zstd'")
    copy, why = decode_body(b"not gzip", "gzip")
    assert copy == b"" and why is not None and why.startswith("cannot decode gzip:")


def test_a_compressed_stream_decodes_piece_by_piece() -> None:
    data = gzip.compress(BODY * 3)
    decoder = stream_decoder("gzip")
    assert decoder is not None
    out = b"".join(decoder(data[i : i + 4]) for i in range(0, len(data), 4))
    assert out + decoder(b"", final=True) == BODY * 3 and decoder.problem is None


def test_a_stream_that_breaks_yields_nothing_more_and_keeps_its_problem() -> None:
    decoder = stream_decoder("br")
    assert decoder is not None
    assert decoder(b"\xff\xff\xff\xff") == b""
    assert decoder.problem is not None and decoder.problem.startswith("cannot decode br:")
    assert decoder(brotli.compress(BODY)) == b""
    assert stream_decoder("zstd").problem == "unsupported content-encoding 'zstd'"  # type: ignore[union-attr]
    assert stream_decoder("") is None and stream_decoder("identity") is None
