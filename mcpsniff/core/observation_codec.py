"""Observations to bytes and back: the one wire format between a shell and its analysis.

A frame is a fixed header (tag, length of the metadata, length of the
bytes), the metadata as a JSON array (orjson) and the bytes field as it is.
Nothing but the registered frozen dataclasses can come out of it: no pickle,
no method names. ``encode`` returns the bytes field apart, so that a big body
is written with ``writev`` and never copied into the frame.

Header pairs are text, or bytes (mitmproxy's): bytes travel as latin-1 text
(one byte per character, lossless) with a marker, and come back as bytes.
"""

from __future__ import annotations

import struct
from dataclasses import fields
from operator import attrgetter
from typing import Any

import orjson

from mcpsniff.core.observations import KINDS

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
    spec = _BY_CLASS.get(type(observation))
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
    out, used = decode_prefix(data)
    if used != len(data):
        raise CodecError(
            "truncated frame" if len(data) - used >= HEADER_SIZE else "truncated frame header"
        )
    return out


def decode_prefix(data: bytes | bytearray | memoryview) -> tuple[list[Any], int]:
    """The observations of the whole frames at the start of ``data``, and their bytes.

    A frame cut at the end of ``data`` is left for the caller to complete (a
    pipe's reader keeps it for its next read). Raises ``CodecError`` on a
    frame that is whole but no frame of this codec.
    """
    out: list[Any] = []
    append = out.append
    view = memoryview(data)
    position = 0
    end = len(view)
    unpack = _HEADER.unpack_from
    loads = orjson.loads
    by_tag = _BY_TAG
    while end - position >= HEADER_SIZE:
        tag, meta_size, payload_size = unpack(view, position)
        start = position + HEADER_SIZE
        stop = start + meta_size + payload_size
        if stop > end:
            break
        spec = by_tag.get(tag)
        if spec is None:
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
            if isinstance(exc, CodecError):
                raise
            raise CodecError(f"bad frame for {spec.cls.__name__}: {exc}") from None
        position = stop
    return out, position
