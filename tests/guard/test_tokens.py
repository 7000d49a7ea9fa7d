"""Token counts are the tokenizer library's own, on fixed strings."""

from __future__ import annotations

import pytest

from mcpsniff.core.guard.fingerprint import definitions
from mcpsniff.guard.tokens import (
    NO_EXACT_TOKENIZER,
    TOKENIZERS,
    available,
    count_tokens,
    definition_cost,
    sent_text,
    total_cost,
)

bpe_openai = pytest.importorskip("bpe_openai")
pytestmark = pytest.mark.filterwarnings("ignore:open_binary is deprecated:DeprecationWarning")

FIXED = [
    "hello world",
    "Adds two numbers and returns their sum.",
    '{"name":"read_file","inputSchema":{"type":"object"}}',
    "<|endoftext|> is text here",
    "Ünïcödé 漢字 🙂",
]


def test_counts_match_the_library_on_fixed_strings() -> None:
    assert available()
    for text in FIXED:
        counts = count_tokens(text)
        assert set(counts) == set(TOKENIZERS) == {"o200k_base", "cl100k_base"}
        for name, count in counts.items():
            assert count == len(bpe_openai.get_encoding(name).encode_ordinary(text))


def test_known_values() -> None:
    # Fixed by the published vocabularies: "hello world" is two tokens in both.
    assert count_tokens("hello world") == {"o200k_base": 2, "cl100k_base": 2}
    assert count_tokens("") == {"o200k_base": 0, "cl100k_base": 0}


def test_a_definition_costs_its_text_without_icons_and_meta() -> None:
    body = {
        "name": "add",
        "description": "Adds.",
        "inputSchema": {"type": "object"},
        "icons": [{"src": "https://example.com/a.png"}],
        "_meta": {"x": "y" * 500},
    }
    (definition,) = definitions("tools/list", {"tools": [body]})
    text = sent_text(definition)
    assert text == '{"name":"add","description":"Adds.","inputSchema":{"type":"object"}}'
    cost = definition_cost(definition)
    assert cost.bytes == len(text)
    assert cost.tokens == count_tokens(text)
    assert definition_cost(definition, tokens=False).tokens == {}
    total = total_cost([cost, cost])
    assert total.bytes == 2 * cost.bytes
    assert total.tokens == {k: 2 * v for k, v in cost.tokens.items()}


def test_no_guess_for_model_families_without_a_tokenizer() -> None:
    assert "Claude" in NO_EXACT_TOKENIZER and "not estimated" in NO_EXACT_TOKENIZER
