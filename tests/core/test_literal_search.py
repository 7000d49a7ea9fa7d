"""LiteralSearch: any of some literals, with or without ASCII case, by Hyperscan."""

from __future__ import annotations

import random

import pytest

from mcpsniff.core import literal_search
from mcpsniff.core.literal_search import LiteralSearch

HINTS = (b"token", b"pw", b"sk-", b"://", b"key")


@pytest.fixture
def search() -> LiteralSearch:
    found = LiteralSearch((hint, True) for hint in HINTS)
    if found.found(b"") is None:
        pytest.skip("hyperscan cannot run here")
    return found


def test_caseless_literals_match_in_any_ascii_case(search: LiteralSearch) -> None:
    assert search.found(b'{"Authorization":"x","ToKeN":1}') is True
    assert search.found(b"HTTPS://EXAMPLE") is True
    assert search.found(b"SK-abc") is True
    assert search.found(b'{"jsonrpc":"2.0","id":1,"result":{}}') is False
    assert search.found(b"") is False


def test_a_case_sensitive_literal_matches_its_own_case_only() -> None:
    search = LiteralSearch([(b"Ab", False), (b"zz", True)])
    if search.found(b"") is None:
        pytest.skip("hyperscan cannot run here")
    assert search.found(b"xAbx") is True
    assert search.found(b"xabx") is False
    assert search.found(b"xZzx") is True


def test_case_folding_is_ascii_only_as_bytes_lower_is(search: LiteralSearch) -> None:
    # U+212A KELVIN SIGN lowers to "k" as str, never as UTF-8 bytes.
    text = "\u212aey and \u0130".encode()
    assert search.found(text) is False
    assert (b"key" in text.lower()) is False


def test_the_answer_is_the_lower_cased_search_s_on_random_data(search: LiteralSearch) -> None:
    rng = random.Random(30)
    alphabet = b"tokenTOKENpwPWsk-SK-:/keyKEY xX\xc4\xb0\xff"
    for _ in range(3000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
        expected = any(hint in data.lower() for hint in HINTS)
        assert search.found(data) is expected, data


def test_without_hyperscan_the_search_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_hyperscan(name: str, *args: object, **kwargs: object) -> object:
        if name == "hyperscan":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_hyperscan)
    search = LiteralSearch([(b"key", True)])
    assert search.found(b"key") is None
    assert search.found(b"none") is None


def test_data_beyond_hyperscan_s_length_is_not_searched(
    search: LiteralSearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(literal_search, "MAX_LENGTH", 4)
    assert search.found(b"token") is None
    assert search.found(b"pw") is True


def test_a_search_error_leaves_the_answer_to_the_caller(search: LiteralSearch) -> None:
    class Failing:
        def scan(self, *args: object) -> None:
            raise literal_search.hyperscan.error("error code -10")

    search._scratch.of = (Failing(), None)
    assert search.found(b"token") is None


def test_each_thread_searches_with_its_own_scratch_space(search: LiteralSearch) -> None:
    import threading

    answers: list[bool | None] = []
    scratches: list[object] = []

    def work() -> None:
        answers.append(search.found(b"a TOKEN"))
        scratches.append(search._scratch.of[1])

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert answers == [True]
    assert scratches[0] is not None and scratches[0] is not search._scratch.of[1]


def test_no_literal_or_an_empty_one_is_refused() -> None:
    with pytest.raises(ValueError):
        LiteralSearch([])
    with pytest.raises(ValueError):
        LiteralSearch([(b"", True)])


def test_a_literal_becomes_a_pattern_of_letters_digits_and_escapes() -> None:
    assert literal_search._pattern(b"[/inst") == b"\\x5b\\x2finst"
    assert literal_search._pattern("\u200b".encode()) == b"\\xe2\\x80\\x8b"
    assert literal_search._pattern(b"sk-9") == b"sk\\x2d9"
