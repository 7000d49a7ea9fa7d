"""Writing traffic text to standard output: lone surrogates never end a command.

A peer may put ``"\\ud800"`` in a method name, a session id or a tool name: it
is valid JSON (RFC 8259 §7 allows any ``\\uXXXX`` escape), and Python decodes it
to a lone surrogate, which UTF-8 cannot encode. ``terminal_safe`` leaves such a
code point alone, so ``show``, ``check`` and ``stats`` ended with
``UnicodeEncodeError`` in the middle of their output, and ``orjson`` refuses
such strings with ``TypeError`` in every ``--format json``.

Commands that print traffic call :func:`tolerate_surrogates` once, so that a
lone surrogate is written as the visible text ``\\ud800``; JSON output goes
through :func:`json_line`, which writes it as the JSON escape ``\\ud800``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import IO, Any

import orjson

from mcpsniff.core.lazy_pattern import lazy

_SURROGATE = lazy("[\ud800-\udfff]")
# What JSON leaves raw but a terminal may act on (core/escape.py's set above
# U+001F, which JSON already escapes): DEL and the C1 controls, the bidi marks,
# embeddings, overrides and isolates, U+2028/U+2029 (line breaks to some
# readers), and lone surrogates, which UTF-8 cannot write.
_TERMINAL_ACTIVE = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def tolerate_surrogates(stream: IO[str] | None = None) -> None:
    """Make ``stream`` (standard output) write a lone surrogate as ``\\udXXX``, not fail."""
    target = sys.stdout if stream is None else stream
    reconfigure = getattr(target, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def json_line(obj: Any, option: int = 0) -> str:
    """``obj`` as one compact JSON text; exact for big integers and lone surrogates.

    ``orjson`` first (fast); for what it refuses (integers beyond 64 bits,
    lone surrogates), the standard encoder, with each lone surrogate written
    as its ``\\uXXXX`` escape so the text is valid JSON and valid UTF-8.
    """
    try:
        return orjson.dumps(obj, option=option).decode()
    except TypeError:
        pass
    try:
        text = json.dumps(
            obj, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False
        )
    except ValueError:
        # NaN or Infinity (a hostile trace's): null, as orjson writes them; bare
        # NaN is no JSON, and jq or any strict parser would stop at the line.
        text = json.dumps(_finite(obj, 0), ensure_ascii=False, separators=(",", ":"), default=str)
    return escape_surrogates(text)


def terminal_json_line(obj: Any, option: int = 0) -> str:
    """:func:`json_line` for a terminal: C1 controls and bidi marks as ``\\uXXXX`` too.

    JSON escapes only U+0000..U+001F; a peer's U+009B (the one-byte CSI, which
    terminals that honour C1 controls act on) or U+202E (RIGHT-TO-LEFT OVERRIDE,
    "Trojan Source") would reach the terminal raw through ``--format json``, as
    docs/architecture.md, invariant 6 forbids. Such code points occur only inside JSON
    strings, where the escape is the same value: a parser reads what was sent.
    """
    text = json_line(obj, option)
    if _TERMINAL_ACTIVE.search(text) is None:
        return text
    return _TERMINAL_ACTIVE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(value: Any, depth: int) -> Any:
    """``value`` with every non-finite float as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 1000:  # json.dumps stops at this depth on its own
        return value
    if isinstance(value, dict):
        return {key: _finite(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item, depth + 1) for item in value]
    return value


def escape_surrogates(json_text: str) -> str:
    """JSON text from ``json.dumps(ensure_ascii=False)`` with each lone surrogate as ``\\uXXXX``.

    Inside a JSON string (the only place one can be) the escape is the same
    value, and the text becomes encodable as UTF-8.
    """
    if _SURROGATE.search(json_text) is None:
        return json_text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
