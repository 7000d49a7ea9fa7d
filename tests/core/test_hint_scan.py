"""The one-pass literal scanner: same answers as one ``bytes.find`` loop per literal."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from mcpsniff.core.hint_scan import HintScanner, Occurrence
from mcpsniff.core.redact import _SCANNER

HINTS = (b"pass", b"pw", b"key", b"sk-", b"-----begin", b"://", b"aa", b"aaa")


def naive_positions(data: bytes, hints: tuple[bytes, ...]) -> list[int]:
    """The reference: every occurrence of every literal, by repeated ``find``."""
    found: list[int] = []
    for hint in hints:
        at = data.find(hint)
        while at >= 0:
            found.append(at)
            at = data.find(hint, at + 1)
    return sorted(found)


def naive_present(data: bytes, hints: tuple[bytes, ...]) -> set[bytes]:
    return {hint for hint in hints if hint in data}


def haystacks(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    pieces = [*HINTS, b"p", b"a", b"-", b"k", b"e", b"y", b":", b"/", b" ", b"x"]
    out = [b"", b"a", b"aaaa", b"pass" * 3, b"-" * 40 + b"-----begin", b"keykeykey"]
    for _ in range(300):
        out.append(b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 60))))
    return out


@pytest.mark.parametrize("window", [1, 3, 7, 64, 65536])
def test_positions_and_presence_equal_the_naive_search(window: int) -> None:
    scanner = HintScanner(HINTS, window=window)
    every = frozenset(range(len(scanner.hints)))
    subset_hints = (b"pass", b"key", b"aa")
    subset = scanner.ids(subset_hints)
    for data in haystacks(window):
        hits = scanner.scan(data)
        expected = naive_present(data, scanner.hints)
        assert (hits is not None) == bool(expected) == scanner.any(data), data
        if hits is None:
            continue
        assert list(hits.positions(every)) == naive_positions(data, scanner.hints), data
        assert list(hits.positions(subset)) == naive_positions(data, subset_hints), data
        assert {scanner.hints[i] for i in hits.present()} == expected, data


def test_a_literal_across_a_window_boundary_is_found_once() -> None:
    scanner = HintScanner((b"-----begin",), window=8)
    data = b"x" * 5 + b"-----begin" + b"y" * 20 + b"-----BEGIN".lower()
    hits = scanner.scan(data)
    assert hits is not None
    assert list(hits.positions(scanner.ids((b"-----begin",)))) == [5, 35]


def test_long_runs_of_one_letter() -> None:
    """A hostile frame of one letter (or one literal) repeated: exact, and windowed."""
    scanner = HintScanner(HINTS, window=4096)
    run = b"a" * 100_000
    ids = scanner.ids((b"aa",))
    hits = scanner.scan(run)
    assert hits is not None and hits.present() == scanner.ids((b"aa", b"aaa"))
    positions = hits.positions(ids)
    assert next(positions) == 0
    assert sum(1 for _ in positions) == 100_000 - 2  # every offset but the first and the last
    assert scanner.scan(b"x" * 100_000) is None
    assert not scanner.any(b"x" * 100_000)
    repeated = scanner.scan(b"key" * 50_000)
    assert repeated is not None
    assert list(repeated.positions(scanner.ids((b"key",)))) == list(range(0, 150_000, 3))


def test_case_is_the_callers_business() -> None:
    scanner = HintScanner((b"token",))
    assert not scanner.any(b"TOKEN")
    assert scanner.any(b"TOKEN".lower())


def test_duplicates_are_numbered_once_and_bad_literals_refused() -> None:
    scanner = HintScanner((b"a", b"b", b"a"))
    assert scanner.hints == (b"a", b"b")
    assert scanner.ids((b"a",)) == frozenset({0})
    with pytest.raises(ValueError):
        HintScanner(())
    with pytest.raises(ValueError):
        HintScanner((b"a", b""))
    with pytest.raises(ValueError):
        HintScanner((b"a",), window=0)
    with pytest.raises(KeyError):
        scanner.ids((b"c",))


def test_redaction_uses_every_hint_of_every_detector() -> None:
    """The value detectors' hints are all in the redaction scanner (none silently skipped)."""
    from mcpsniff.core.secret_values import DETECTORS

    for detector in DETECTORS:
        assert set(detector.hints) <= set(_SCANNER.hints), detector.name


@pytest.mark.parametrize("window", [64, 200])
def test_dense_data_switches_search_and_still_finds_everything(window: int) -> None:
    """After a window with many matches the standard search alone runs: same answers."""
    rng = random.Random(window)
    scanner = HintScanner(HINTS, window=window)
    every = frozenset(range(len(scanner.hints)))
    quiet = b"x" * (3 * window)  # windows without any match around the dense ones
    dense = b"".join(rng.choice([*HINTS, b"a", b"-", b"k"]) for _ in range(400))
    for data in (dense, quiet + dense + quiet + dense, dense + quiet):
        hits = scanner.scan(data)
        assert hits is not None
        assert list(hits.positions(every)) == naive_positions(data, scanner.hints)
        assert {scanner.hints[i] for i in hits.present()} == naive_present(data, scanner.hints)


def test_a_large_haystack_is_scanned_once_when_its_occurrences_are_few(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scanner = HintScanner(HINTS, window=64)
    passes = 0
    windows = HintScanner.windows

    def counting(self: HintScanner, data: bytes) -> Iterator[list[Occurrence]]:
        nonlocal passes
        passes += 1
        yield from windows(self, data)

    monkeypatch.setattr(HintScanner, "windows", counting)
    data = b"x" * 1000 + b"pass" + b"x" * 1000 + b"key"
    hits = scanner.scan(data)
    assert hits is not None
    every = frozenset(range(len(scanner.hints)))
    for _ in range(3):
        assert list(hits.positions(every)) == [1000, 2004]
    assert passes == 1
    hostile = b"aa" * 20_000  # more occurrences than are kept: scanned per question
    many = scanner.scan(hostile)
    assert many is not None
    passes = 0
    for _ in range(2):
        assert sum(1 for _ in many.positions(every)) == 39_999 + 39_998  # "aa", "aaa"
    assert passes == 2


@pytest.mark.parametrize("window", [5, 64, 65536])
def test_two_byte_and_longer_literals_overlapping_are_each_found_once(window: int) -> None:
    """Short literals have their own leftmost-first search; spans of both groups merge."""
    hints = (b"ab", b"abc", b"bcd", b"cd", b"dab", b"b:")
    scanner = HintScanner(hints, window=window)
    every = frozenset(range(len(scanner.hints)))
    rng = random.Random(window)
    for _ in range(500):
        # Clusters far apart, so that each span is searched on its own (few matches).
        clusters = [
            bytes(rng.choice(b"abcd:x") for _ in range(rng.randint(0, 8))) for _ in range(4)
        ]
        data = (b"x" * rng.randint(100, 300)).join(clusters)
        hits = scanner.scan(data)
        assert (hits is not None) == bool(naive_present(data, hints)) == scanner.any(data)
        if hits is not None:
            assert list(hits.positions(every)) == naive_positions(data, hints), data
            assert {hints[i] for i in hits.present()} == naive_present(data, hints)
