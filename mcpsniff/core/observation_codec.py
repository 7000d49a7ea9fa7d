"""Observations to bytes and back: the one wire format between a shell and its analysis.

A frame is a fixed header (tag, length of the metadata, length of the
bytes), the metadata as a JSON array (orjson) and the bytes field as it is.
Nothing but the registered frozen dataclasses can come out of it: no pickle,
no method names. ``encode`` returns the bytes field apart, so that a big body
is written with ``writev`` and never copied into the frame.

Header pairs are text, or bytes (mitmproxy's): bytes travel as latin-1 text
(one byte per character, lossless) with a marker, and come back as bytes.

``StreamData``, a stdio relay's every chunk, has metadata of a fixed shape
(a direction code and the time as a double) instead of JSON: it is the hot
path, and the forwarding side encodes it without building the object
(``encode_stream_data``).
"""

from __future__ import annotations

import struct
from dataclasses import fields
from operator import attrgetter
from typing import Any

import orjson

from mcpsniff.core.frozen import maker
from mcpsniff.core.observations import KINDS, StreamData

_HEADER = struct.Struct("<BII")
HEADER_SIZE = _HEADER.size
#: Tags from 200 up are the channel's own messages (``register``), not observations.
_CHANNEL_TAGS = 200


class CodecError(ValueError):
    """Bytes that are no frame of this codec."""


class _Spec:
    """How one class's fields are laid out in a frame."""

    __slots__ = ("cls", "getter", "headers", "names", "payload", "payload_getter", "tag")

    def __init__(self, cls: type, tag: int) -> None:
        self.cls = cls
        self.tag = tag
        names = [f.name for f in fields(cls)]
        self.payload = "body" if "body" in names else None
        if self.payload and names[-1] != self.payload:
            raise TypeError(f"{cls.__name__}: its bytes field must come last")
        self.names = tuple(n for n in names if n != self.payload)
        #: Where the headers are among ``names`` (-1: none).
        self.headers = self.names.index("headers") if "headers" in self.names else -1
        getter = attrgetter(*self.names)
        self.getter = getter if len(self.names) > 1 else (lambda o: (getter(o),))
        self.payload_getter = attrgetter(self.payload) if self.payload else None


_BY_CLASS: dict[type, _Spec] = {}
_BY_TAG: dict[int, _Spec] = {}


def register(cls: type, tag: int) -> None:
    """Make a frozen dataclass encodable under ``tag`` (the channel's own messages: 200-255)."""
    if tag in _BY_TAG and _BY_TAG[tag].cls is not cls:
        raise ValueError(f"tag {tag} is taken by {_BY_TAG[tag].cls.__name__}")
    spec = _Spec(cls, tag)
    _BY_CLASS[cls] = spec
    _BY_TAG[tag] = spec


for _tag, _cls in enumerate(KINDS):
    register(_cls, _tag)

_STREAM_TAG = _BY_CLASS[StreamData].tag
#: A whole ``StreamData`` header: tag, metadata size, payload size, direction code, time.
_STREAM_FRAME = struct.Struct("<BIIBd")
_STREAM_META = struct.Struct("<Bd")
#: The directions of a byte stream, by their code.
_STREAM_DIRECTIONS = ("c2s", "s2c")
_STREAM_CODES = {"c2s": 0, "s2c": 1}
#: ``StreamData(direction, t, body)`` without the class call: the decoder makes
#: one per stdio chunk, so this is most of its cost.
_make_stream_data = maker(StreamData)


def encode_stream_data(direction: str, t: float, body: bytes) -> bytes:
    """The header of ``StreamData(direction, t, body)`` (the body follows it, apart)."""
    try:
        code = _STREAM_CODES[direction]
    except KeyError:
        raise ValueError(f"StreamData: no stream direction {direction!r}") from None
    return _STREAM_FRAME.pack(_STREAM_TAG, _STREAM_META.size, len(body), code, t)


def _headers_out(pairs: Any) -> list[Any]:
    if pairs and isinstance(pairs[0][0], bytes):
        return [1, [[k.decode("latin-1"), v.decode("latin-1")] for k, v in pairs]]
    return [0, pairs]  # orjson writes tuples as arrays


def _headers_in(value: Any) -> tuple[tuple[Any, Any], ...]:
    kind, pairs = value
    if kind:
        return tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs)
    return tuple((k, v) for k, v in pairs)


def encode(observation: Any) -> tuple[bytes, bytes]:
    """The frame of ``observation``: its header and metadata, and its bytes field apart."""
    kind = type(observation)
    if kind is StreamData:
        body = observation.body
        return encode_stream_data(observation.direction, observation.t, body), body
    spec = _BY_CLASS.get(kind)
    if spec is None:
        raise TypeError(f"not an observation: {type(observation).__name__}")
    values = spec.getter(observation)
    if spec.headers >= 0:
        values = list(values)
        values[spec.headers] = _headers_out(values[spec.headers])
    meta = orjson.dumps(values)
    payload = spec.payload_getter(observation) if spec.payload_getter else b""
    return _HEADER.pack(spec.tag, len(meta), len(payload)) + meta, payload


def encode_bytes(observation: Any) -> bytes:
    """The frame of ``observation`` in one piece (for small ones)."""
    head, payload = encode(observation)
    return head + payload if payload else head


def decode_all(data: bytes | memoryview) -> list[Any]:
    """Every observation in ``data``, a concatenation of whole frames.

    Raises ``CodecError`` on anything else: a truncated frame, an unknown tag,
    metadata that does not fit its class.
    """
    out: list[Any] = []
    view = memoryview(data)
    while view:
        more, used = decode_prefix(view)  # raises for a bad frame at its start
        if not used:
            raise CodecError(
                "truncated frame" if len(view) >= HEADER_SIZE else "truncated frame header"
            )
        out += more
        view = view[used:]
    return out


def decode_prefix(data: bytes | bytearray | memoryview) -> tuple[list[Any], int]:
    """The observations of the whole frames at the start of ``data``, and their bytes.

    A frame cut at the end of ``data`` is left for the caller to complete (a
    pipe's reader keeps it for its next read). A whole frame that is no frame
    of this codec ends the prefix; it raises ``CodecError`` when it comes first.
    """
    out: list[Any] = []
    append = out.append
    view = memoryview(data)
    # Bodies are cut from ``data`` itself when it is bytes (one copy); from a
    # bytearray, through the view (a bytearray slice would be a second copy).
    source: bytes | memoryview = data if type(data) is bytes else view
    position = 0
    end = len(view)
    unpack = _HEADER.unpack_from
    unpack_stream = _STREAM_FRAME.unpack_from
    stream_size = _STREAM_FRAME.size
    loads = orjson.loads
    by_tag = _BY_TAG
    stream_tag = _STREAM_TAG
    stream_meta = _STREAM_META
    stream_meta_size = _STREAM_META.size
    directions = _STREAM_DIRECTIONS
    make_stream_data = _make_stream_data
    while end - position >= HEADER_SIZE:
        if end - position >= stream_size:
            # The commonest frame, StreamData, read with one unpack (header,
            # direction code and time); anything else goes the general way.
            tag, meta_size, payload_size, code, t = unpack_stream(view, position)
            if tag == stream_tag and meta_size == stream_meta_size and code <= 1:
                start = position + stream_size
                stop = start + payload_size
                if stop > end:
                    break
                body = source[start:stop]
                if source is view:
                    body = bytes(body)
                append(make_stream_data(directions[code], t, body))
                position = stop
                continue
        tag, meta_size, payload_size = unpack(view, position)
        start = position + HEADER_SIZE
        stop = start + meta_size + payload_size
        if stop > end:
            break
        if tag == stream_tag:
            code = view[start] if meta_size == stream_meta.size else 2
            if code > 1:
                if out:
                    break  # the good frames before it first
                raise CodecError("bad metadata for StreamData")
            code, t = stream_meta.unpack_from(view, start)
            append(make_stream_data(directions[code], t, bytes(view[start + meta_size : stop])))
            position = stop
            continue
        spec = by_tag.get(tag)
        if spec is None:
            if out:
                break  # the good frames before it first
            raise CodecError(f"unknown tag {tag}")
        try:
            values = loads(view[start : start + meta_size])
            if not isinstance(values, list) or len(values) != len(spec.names):
                raise CodecError(f"bad metadata for {spec.cls.__name__}")
            if spec.headers >= 0:
                values[spec.headers] = _headers_in(values[spec.headers])
            if spec.payload:
                # The bytes field is the last one of every class that has one.
                values.append(bytes(view[start + meta_size : stop]))
            append(spec.cls(*values))
        except (orjson.JSONDecodeError, TypeError, ValueError) as exc:
            if out:
                break  # the good frames before it first
            if isinstance(exc, CodecError):
                raise
            raise CodecError(f"bad frame for {spec.cls.__name__}: {exc}") from None
        position = stop
    return out, position
