"""What definitions cost in a model's context: bytes, and tokens by real offline tokenizers.

The tokenizers are those of the ``bpe-openai`` library (the optional extra
``guard``), which ships its vocabularies inside its wheel: nothing is
downloaded at run time. OpenAI publishes its models' encodings, so the counts
for those models are exact for the text counted; Anthropic and Google publish
no tokenizer for Claude or Gemini, so mcpsniff gives no count for them rather
than a guess (``NO_EXACT_TOKENIZER``).

What is counted for one definition is its compact JSON without ``icons`` and
``_meta``: what a client passes to a model is the name, description and
schemas, and clients wrap them in their own framing, which is not counted.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from mcpsniff.core.guard.fingerprint import Definition

#: The encodings counted, and the model families that use each.
TOKENIZERS: dict[str, str] = {
    "o200k_base": "GPT-4o, GPT-4.1, o1, o3, o4-mini",
    "cl100k_base": "GPT-4, GPT-3.5",
}
#: Model families whose vendor ships no tokenizer: no count is given for them.
NO_EXACT_TOKENIZER = "Claude, Gemini: no published tokenizer, not estimated"
#: Members a client does not pass to a model.
NOT_SENT = frozenset({"icons", "_meta"})


class TokenizerMissing(Exception):
    """The ``guard`` extra is not installed: a one-line reason."""


MISSING = (
    "token counts need the guard extra: pip install 'mcpsniff[guard]' (the bpe-openai tokenizer)"
)


@functools.cache
def _encoding(name: str) -> Any:
    with warnings.catch_warnings():
        # Its loader uses importlib.resources.open_binary, deprecated in 3.11.
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import bpe_openai
        except ImportError:
            raise TokenizerMissing(MISSING) from None
        encoding = bpe_openai.get_encoding(name)
        encoding.encode_ordinary("x")  # it loads its vocabulary on first use
    return encoding


def available() -> bool:
    """Whether the tokenizers can be loaded."""
    try:
        _encoding(next(iter(TOKENIZERS)))
    except TokenizerMissing:
        return False
    return True


def count_tokens(text: str) -> dict[str, int]:
    """Tokens of ``text`` by each of ``TOKENIZERS``; ``TokenizerMissing`` without the extra.

    Special-token text (``<|endoftext|>``) in traffic is counted as plain text:
    a model's client sends it as text too.
    """
    return {name: len(_encoding(name).encode_ordinary(text)) for name in TOKENIZERS}


def sent_text(definition: Definition) -> str:
    """The part of a definition a client passes to a model, as compact JSON."""
    body = {k: v for k, v in definition.body.items() if k not in NOT_SENT}
    try:
        return orjson.dumps(body).decode("utf-8", "replace")
    except TypeError:
        return definition.canonical.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Cost:
    """What one definition, or a server's whole offer, costs."""

    bytes: int
    #: Tokens by tokenizer name; empty when the tokenizers are not installed.
    tokens: dict[str, int]

    def as_data(self) -> dict[str, Any]:
        """JSON-ready: ``{"bytes": n, "tokens": {"o200k_base": n, ...}}``."""
        return {"bytes": self.bytes, "tokens": dict(self.tokens)}


def definition_cost(definition: Definition, *, tokens: bool = True) -> Cost:
    """The bytes and tokens of one definition (no tokens when ``tokens`` is False)."""
    text = sent_text(definition)
    return Cost(len(text.encode("utf-8", "surrogatepass")), count_tokens(text) if tokens else {})


def total_cost(costs: Iterable[Cost]) -> Cost:
    """The sum of ``costs``."""
    total_bytes = 0
    total_tokens: dict[str, int] = {}
    for cost in costs:
        total_bytes += cost.bytes
        for name, count in cost.tokens.items():
            total_tokens[name] = total_tokens.get(name, 0) + count
    return Cost(total_bytes, total_tokens)
