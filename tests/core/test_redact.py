"""Redaction: the name signal, the value signal, and where each applies."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Iterable, Iterator

import pytest

from mcpsniff.core.model import FrameRecord
from mcpsniff.core.redact import (
    MARK,
    holds_mark,
    holds_no_hint,
    redact_argv,
    redact_frame,
    redact_header_pairs,
    redact_json_value,
    redact_text,
    redact_url,
    redaction_explains,
)
from mcpsniff.core.secret_names import is_secret_name, words
from tests.core import redact_reference


@pytest.mark.parametrize(
    "name",
    [
        "secret_key",
        "aws_secret_access_key",
        "access_key",
        "auth",
        "pass",
        "pw",
        "private_key_pem",
        "apiKeys",
        "password",
        "api_key",
        "apiKey",
        "APIKey",
        "X-Api-Key",
        "OPENAI_API_KEY",
        "githubtoken",
        "accesstoken",
        "client_secret",
        "Authorization",
        "Proxy-Authorization",
        "X-Forwarded-Authorization",
        "X-Custom-Token",
        "X-Amz-Security-Token",
        "X-Access-Key",
        "X-Auth",
        "Cookie",
        "Set-Cookie",
        "db_password",
        "passphrase",
        "refresh_tokens",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "implementation",
        "pwd",
        "progressToken",
        "nextCursor",
        "cursor",
        "maxTokens",
        "max_tokens",
        "total_tokens",
        "token_type",
        "token_count",
        "authorization_endpoint",
        "authorization_servers",
        "password_required",
        "author",
        "keyboard",
        "key",
        "code",
        "signature",
        "public_key",
        "keyId",
        "passage",
        "compass",
        "bypass",
        "Mcp-Session-Id",
        "nextPageToken",
        "private_key_file",
    ],
)
def test_not_secret_names(name: str) -> None:
    assert not is_secret_name(name)


def test_key_code_and_sig_are_secrets_only_where_they_usually_are() -> None:
    assert is_secret_name("key", "query") and is_secret_name("code", "query")
    assert is_secret_name("sig", "query") and is_secret_name("X-Amz-Signature", "query")
    assert is_secret_name("key", "arg") and not is_secret_name("code", "arg")


def test_words_split_at_case_and_separators() -> None:
    assert words("aws_secret_access_key") == ["aws", "secret", "access", "key"]
    assert words("X-Amz-Security-Token") == ["x", "amz", "security", "token"]
    assert words("APIKeys") == ["api", "keys"]


def _redacted(obj: object) -> tuple[dict[str, object], int]:
    raw, count = redact_frame(json.dumps(obj).encode() + b"\n")
    assert raw.endswith(b"\n")
    return json.loads(raw), count


def test_members_of_every_value_type_are_replaced_and_the_frame_stays_json() -> None:
    obj, count = _redacted(
        {"password": 999999, "apiKeys": ["a", {"b": 1}], "pw": "x", "auth": {"token": "t"}}
    )
    assert obj == {"password": MARK, "apiKeys": MARK, "pw": MARK, "auth": {"token": MARK}}
    assert count == 4


def test_booleans_null_and_empty_values_are_left_alone() -> None:
    obj = {"password": None, "token": True, "secret": ""}
    assert _redacted(obj) == (obj, 0)


def test_a_frame_without_secrets_is_returned_as_is() -> None:
    raw = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a basic tool"}}\n'
    assert redact_frame(raw) == (raw, 0)
    assert redact_frame(raw)[0] is raw


def test_redaction_keeps_every_other_byte() -> None:
    raw = b'{ "id" : 7,\t"password" :  "hunter2" , "x":[1, 2] }\r\n'
    assert redact_frame(raw) == (b'{ "id" : 7,\t"password" :  "[REDACTED]" , "x":[1, 2] }\r\n', 1)


def test_json_inside_strings_is_redacted_at_any_depth() -> None:
    inner = json.dumps({"api_key": "k1", "n": 1})
    twice = json.dumps({"wrap": json.dumps({"password": "k2"})})
    obj, count = _redacted({"content": [{"type": "text", "text": inner}, {"text": twice}]})
    assert json.loads(obj["content"][0]["text"]) == {"api_key": MARK, "n": 1}
    assert json.loads(json.loads(obj["content"][1]["text"])["wrap"]) == {"password": MARK}
    assert count == 2


@pytest.mark.parametrize(
    "secret",
    [
        "Bearer abcDEF0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_value-1",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "sk-ant-api03-abcdefghijklmnopqrstuvwx",
        "ghp_" + "a" * 36,
        "github_pat_" + "A" * 30,
        "xoxb-1234567890-abcdef",
        "AKIAIOSFODNN7EXAMPLE",
        "AIza" + "b" * 35,
        "glpat-" + "c" * 20,
        "npm_" + "d" * 36,
        "hf_" + "e" * 34,
        "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
    ],
)
def test_value_secrets_are_found_under_any_name(secret: str) -> None:
    obj, count = _redacted({"note": f"here: {secret} ok"})
    assert count == 1
    assert obj["note"] in (f"here: {MARK} ok", f"here: Bearer {MARK} ok")


def test_protocol_fields_keep_values_that_look_like_secrets() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc"
    obj = {
        "id": "sk-proj-abcdefghijklmnopqrstuvwx",
        "params": {"_meta": {"progressToken": "ghp_" + "a" * 36}, "cursor": jwt},
        "result": {"nextCursor": jwt},
    }
    assert _redacted(obj) == (obj, 0)


def test_prose_is_not_a_credential() -> None:
    for text in ("a basic implementation of x", "Bearer in mind", "basic auth is supported"):
        assert redact_text(text) == (text, 0)


def test_plain_text_pairs() -> None:
    assert redact_text("login failed: password=hunter2 user=bob") == (
        f"login failed: password={MARK} user=bob",
        1,
    )
    assert redact_text("api_key: abc123, token='zzz'")[0] == f"api_key: {MARK}, token='{MARK}'"
    assert redact_text("Authorization: Bearer abc.def-123") == (
        f"Authorization: Bearer {MARK}",
        1,
    )
    assert redact_text("pwd=/home/u") == ("pwd=/home/u", 0)


def test_urls() -> None:
    url = "https://user:pw1@example.com/p?key=k&x=1&code=c&sig=s&cursor=5"
    assert redact_url(url) == (
        f"https://user:{MARK}@example.com/p?key={MARK}&x=1&code={MARK}&sig={MARK}&cursor=5",
        4,
    )
    assert redact_url("/mcp?session=1") == ("/mcp?session=1", 0)


def test_argv() -> None:
    argv = ["srv", "--api-key", "K", "--token=T", "postgres://u:p@h/db", "--pwd", "/tmp", "-v"]
    out, count = redact_argv(argv)
    assert out[:5] == ["srv", "--api-key", MARK, f"--token={MARK}", f"postgres://u:{MARK}@h/db"]
    assert out[5:] == ["--pwd", "/tmp", "-v"] and count == 3


def test_headers_by_name_and_by_value() -> None:
    pairs, count = redact_header_pairs(
        [
            ("X-Custom-Token", "a"),
            ("X-Forwarded-Authorization", "Bearer abcdefgh12"),
            ("Link", "<https://x/?key=abc>"),
            ("Mcp-Session-Id", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc"),
            ("Content-Type", "application/json"),
        ]
    )
    assert pairs[0][1] == MARK and pairs[1][1] == MARK
    assert pairs[2][1] == f"<https://x/?key={MARK}>"
    assert pairs[3][1].startswith("eyJ") and pairs[4][1] == "application/json"
    assert count == 3


def test_json_values() -> None:
    value = {"line": "password=x", "headers": {"X-Auth": "y"}, "n": 3, "ok": True}
    assert redact_json_value(value) == (
        {"line": f"password={MARK}", "headers": {"X-Auth": MARK}, "n": 3, "ok": True},
        2,
    )


def test_redaction_explains_only_a_redacted_frame_with_a_mark_in_the_value() -> None:
    frame = FrameRecord(1, 1.0, "s", "c2s", "stdio", b"", {"redacted": 1})
    assert redaction_explains(frame, {"a": [MARK]})
    assert not redaction_explains(frame, {"a": 1})
    assert not redaction_explains(FrameRecord(1, 1.0, "s", "c2s", "stdio", b""), {"a": MARK})
    assert holds_mark([[{"x": f"y {MARK}"}]])


def _corpus_frames() -> list[bytes]:
    from tests.e2e import secrets_corpus as corpus

    frames = [json.dumps(corpus.tool_call(i)).encode() for i in range(3)]
    frames += [json.dumps(corpus.tool_result(i)).encode() for i in range(3)]
    frames += [json.dumps(corpus.tool_error(i)).encode() for i in range(3)]
    frames += [line.encode() for line in corpus.STDERR_LINES]
    frames += [json.dumps(text).encode() for text in corpus.NESTED_TEXTS]
    return frames


def test_windowed_scanning_redacts_exactly_like_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large frames are scanned window by window; the result may not depend on the seams."""
    from mcpsniff.core import redact
    from mcpsniff.core.hint_scan import HintScanner

    frames = _corpus_frames()
    whole = [redact_frame(frame) for frame in frames]
    assert sum(count for _, count in whole) > 50
    for window in (1, 5, 13):
        monkeypatch.setattr(redact, "_SCANNER", HintScanner(redact._SCANNER.hints, window))
        assert [redact_frame(frame) for frame in frames] == whole, window


def test_long_runs_of_one_letter_or_one_hint() -> None:
    """Hostile frames: nothing to redact stays identical, a secret at the end is still found."""
    for run in (b"a" * 1_000_000, b"key" * 300_000, b"-" * 500_000, b"pass" * 200_000):
        assert redact_frame(run) == (run, 0)
    tail = b"x" * 300_000 + b" password=hunter2"
    assert redact_frame(tail) == (b"x" * 300_000 + b" password=" + MARK.encode(), 1)
    member = b'{"a":"' + b"key" * 100_000 + b'","api_key":"s3cr3t"}'
    assert redact_frame(member) == (b'{"a":"' + b"key" * 100_000 + b'","api_key":"[REDACTED]"}', 1)


@pytest.mark.parametrize(
    ("raw", "redacted"),
    [
        (b'{"_meta":{"progressToken":"p-1"}}', None),
        (b'{"_meta":{"PROGRESSTOKEN":7},"params":{"progressToken":"abc"}}', None),
        (b'{"text":"{\\"progressToken\\": \\"x\\"}"}', None),
        (b'{"xprogressToken":"s3cr3t-v4lue"}', b'{"xprogressToken":"[REDACTED]"}'),
        (b'{"progressTokenKey":"v"}', None),
        (b'{"progressToken":"p","api_key":"k"}', b'{"progressToken":"p","api_key":"[REDACTED]"}'),
        (b"progressToken=abc token=def", b"progressToken=abc token=[REDACTED]"),
        (b'{"progressToken":"Bearer abcdefgh12"}', None),  # a protocol value: kept exactly
        (
            b'{"a":"Bearer abcdefgh12","progressToken":1}',
            b'{"a":"Bearer [REDACTED]","progressToken":1}',
        ),
    ],
)
def test_progress_tokens_pass_and_what_only_looks_like_them_does_not(
    raw: bytes, redacted: bytes | None
) -> None:
    """The fast path for ``"progressToken"`` names gives what the full steps give."""
    out, count = redact_frame(raw)
    assert out == (raw if redacted is None else redacted)
    assert count == (0 if redacted is None else 1)


def _value_haystacks() -> list[bytes]:
    """Text around every detector's formats, cut and case-mangled, plus the corpus."""
    import random

    from tests.e2e import secrets_corpus as corpus

    rng = random.Random(12)
    samples = [json.dumps(value).encode() for value in corpus.VALUE_SECRETS.values()]
    samples += [
        b"Bearer abcdefgh12 basic dXNlcjpwYXNzd29yZA== https://u:p@h http://a:b@c:d@e",
        b"ftp://x:y@z gh" + b"p_" + b"a" * 40 + b" sk-proj-" + b"b" * 30 + b" AKIA" + b"C" * 16,
        b"-----BEGIN RSA PRIVATE KEY-----abc-----END RSA PRIVATE KEY----- xoxb-1234567890ab",
        b"svn+ssh://u:p@h a.b-c1://x:y@z _x://u:p@h 9http://u:p@h x-://a:b@c +s3://k:v@b",
        b"averyveryverylongschemename://u:p@h ab://u:p@h a://u:p@h http://h/p?q=1",
    ]
    samples += _corpus_frames()
    out = list(samples)
    for _ in range(600):
        base = bytearray(rng.choice(samples))
        for _ in range(rng.randint(1, 5)):
            at = rng.randint(0, len(base))
            piece = rng.choice(samples)
            cut = rng.randint(0, len(piece))
            base[at:at] = piece[cut : cut + rng.randint(1, 40)]
        if rng.random() < 0.3:
            base = bytearray(bytes(base).swapcase())
        out.append(bytes(base))
    return out


def test_anchored_matches_are_exactly_what_finditer_finds() -> None:
    """Each detector tried only near its hints finds the same matches as a full search."""
    from mcpsniff.core.redact import _DETECTOR_IDS, _SCANNER, anchored_matches

    found = 0
    for data in _value_haystacks():
        hits = _SCANNER.scan(data.lower())
        for detector, ids in _DETECTOR_IDS:
            expected = [m.span() for m in detector.pattern.finditer(data)]
            starts = [] if hits is None else hits.positions(ids)
            assert [m.span() for m in anchored_matches(detector, data, starts)] == expected
            found += len(expected)
    assert found > 500


class _Counting:
    """A compiled pattern whose ``match`` calls are counted."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.calls = 0

    def match(self, data: bytes, pos: int = 0) -> re.Match[bytes] | None:
        self.calls += 1
        return self.pattern.match(data, pos)

    def finditer(self, data: bytes, pos: int = 0) -> Iterator[re.Match[bytes]]:
        self.calls += 1
        return self.pattern.finditer(data, pos)


def test_one_long_value_is_measured_once_not_once_per_hint_inside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``key=key=key=...``: every hint starts a pair whose value runs to the end (was quadratic)."""
    from mcpsniff.core import redact

    counting = _Counting(redact._VALUE_RUN)
    monkeypatch.setattr(redact, "_VALUE_RUN", counting)
    frame = b'{"k":"' + b"key=" * 20_000 + b'","password":"hunter2"}'
    out, count = redact_frame(frame)
    assert count == 1 and out.endswith(b'"password":"[REDACTED]"}')
    assert counting.calls <= 2


def test_a_detector_tried_at_hints_everywhere_searches_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``eyJeyJ...``: past its budget of tries the detector searches once, finding the same."""
    from mcpsniff.core import redact
    from mcpsniff.core.secret_values import DETECTORS

    jwt = next(detector for detector in DETECTORS if detector.name == "jwt")
    counting = _Counting(jwt.pattern)
    data = b"eyJ" * 100_000 + b" eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"
    hits = redact._SCANNER.scan(data.lower())
    assert hits is not None
    ids = redact._SCANNER.ids(jwt.hints)
    found = list(
        redact.anchored_matches(
            dataclasses.replace(jwt, pattern=counting), data, hits.positions(ids)
        )
    )  # type: ignore[arg-type]
    assert [m.span() for m in found] == [m.span() for m in jwt.pattern.finditer(data)]
    assert len(found) == 1
    assert counting.calls <= redact._PROBE_BUDGET + len(data) // 64 + 1


def _walked_array_end(data: bytes, start: int) -> int | None:
    """The reference: an array's end, walked byte by byte (strings skipped whole)."""
    level = 0
    i = start
    while i < len(data):
        if data[i] == 0x22:
            match = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL).match(data, i)
            if match is None:
                return None
            i = match.end()
            continue
        if data[i] in b"[{":
            level += 1
        elif data[i] in b"]}":
            level -= 1
            if level == 0:
                return i + 1
        i += 1
    return None


def test_array_ends_with_a_shared_cache_equal_a_fresh_walk() -> None:
    """Any order of starts, one cache (as within one frame): the same ends as walking each."""
    import random

    from mcpsniff.core.redact import _array_end

    rng = random.Random(5)
    for _ in range(3000):
        data = bytes(rng.choice(b'[]{}"\\ a,') for _ in range(rng.randint(1, 40)))
        starts = [i for i, byte in enumerate(data) if byte == 0x5B]
        rng.shuffle(starts)
        closes: dict[int, int | None] = {}
        for start in starts:
            assert _array_end(data, start, closes) == _walked_array_end(data, start), (data, start)


def test_many_unterminated_secret_arrays_are_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``{"api_key":[`` repeated: each array ran to the end of the frame (was quadratic)."""
    from mcpsniff.core import redact

    pattern = redact._ARRAY_TOKEN

    class Tokens:
        calls = 0

        def search(self, data: bytes, pos: int) -> re.Match[bytes] | None:
            Tokens.calls += 1
            return pattern.search(data, pos)

    frame = b'{"api_key":[' * 2_000 + b'{"api_key":["s3cr3t"]'
    monkeypatch.setattr(redact, "_ARRAY_TOKEN", Tokens())
    out, count = redact_frame(frame)
    # Only the last array closes: the one value that is whole is the one replaced.
    assert count == 1 and out == frame[: -len(b'["s3cr3t"]')] + b'"[REDACTED]"'
    assert Tokens.calls < 3 * frame.count(b"[") + 10


def test_json_strings_are_exactly_what_finditer_finds() -> None:
    """The linear string walk yields the same literals as ``finditer`` on any bytes."""
    import random

    from mcpsniff.core.redact import _STRING_AT, json_strings

    rng = random.Random(12)
    found = 0
    for _ in range(5000):
        data = bytes(rng.choice(b'"\\\\ a{}:\n') for _ in range(rng.randint(0, 40)))
        expected = [m.span() for m in _STRING_AT.finditer(data)]
        assert [m.span() for m in json_strings(data)] == expected, data
        found += len(expected)
    assert found > 1000


class _BytesRead:
    """The JSON-string pattern, counting the bytes its tries read (as ``re`` does them)."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.read = 0

    def match(self, data: bytes, pos: int = 0) -> re.Match[bytes] | None:
        found = self.pattern.match(data, pos)
        self.read += (len(data) if found is None else found.end()) - pos
        return found

    def finditer(self, data: bytes, pos: int = 0) -> Iterator[re.Match[bytes]]:
        # What ``re`` does: a try at every quote from ``pos``, a failed one reading to the end.
        at = data.find(b'"', pos)
        while at >= 0:
            found = self.match(data, at)
            at = data.find(b'"', at + 1 if found is None else found.end())
            if found is not None:
                yield found


def test_unterminated_escaped_strings_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``{\\"key\\":`` repeated: every escaped quote started a try to the end (was quadratic)."""
    from mcpsniff.core import redact

    counting = _BytesRead(redact._STRING_AT)
    monkeypatch.setattr(redact, "_STRING_AT", counting)
    frame = b'{\\"key\\":' * 20_000
    assert redact_frame(frame) == (frame, 0)
    # Quadratic read about 10**10 bytes here; linear reads each byte at most twice.
    assert 0 < counting.read <= 2 * len(frame)
    # And a big one through the real pattern: seconds when linear, about an hour when quadratic.
    monkeypatch.undo()
    big = b'{\\"key\\":' * 120_000 + b'"password":"hunter2"'
    out, count = redact_frame(big)
    assert count == 1 and out == big[: -len(b'"hunter2"')] + b'"[REDACTED]"'


# Differential: today's redaction against the one of commit 49ad5f7.
#
# The Aho-Corasick prefilter (``core/hint_scan.py``), the skipped steps and the
# ``"progressToken"`` fast path must be pure speed-ups: on every input of
# ``redact_reference``, the redaction of 49ad5f7 (its outputs recorded in
# ``data/redact_49ad5f7.json``) and today's give the same bytes and the same count;
# when they differ, the message says which secrets the frame still holds.


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, str]]:
    return redact_reference.load()


def _assert_as_recorded(recorded: dict[str, dict[str, str]], frames: Iterable[bytes]) -> None:
    from mcpsniff.core import redact

    for frame in frames:
        key = redact_reference.digest(frame)
        assert key in recorded["frames"], (
            f"no recorded outcome for {frame[:200]!r}: the inputs of tests/core/"
            "redact_reference.py changed; record them again (see its docstring)"
        )
        got = redact_reference.frame_outcome(redact, frame)
        if got == recorded["frames"][key]:
            continue
        redacted = redact_frame(frame)[0]
        held = [s for s in redact_reference.SECRET_VALUES if s.encode() in redacted]
        raise AssertionError(
            f"redaction differs from 49ad5f7 on {frame[:300]!r}\n"
            f"recorded: {recorded['frames'][key]}, now: {got} {redacted[:300]!r}\n"
            f"secrets the redacted frame still holds: {held}"
        )


def test_generated_frames_redact_as_before(recorded: dict[str, dict[str, str]]) -> None:
    _assert_as_recorded(recorded, redact_reference.generated_frames())


@pytest.mark.parametrize("builder", redact_reference.CORPUS_BUILDERS)
def test_corpus_messages_redact_as_before(
    recorded: dict[str, dict[str, str]], builder: str
) -> None:
    _assert_as_recorded(recorded, redact_reference.corpus_frames(builder))


@pytest.mark.parametrize("shift", redact_reference.WINDOW_SHIFTS)
def test_hints_across_the_scanner_window_redact_as_before(
    recorded: dict[str, dict[str, str]], shift: int
) -> None:
    """Each secret placed so that its hint straddles the 64 KiB window boundary."""
    _assert_as_recorded(recorded, redact_reference.window_frames(shift))


def test_secrets_at_every_position_of_a_short_frame(recorded: dict[str, dict[str, str]]) -> None:
    _assert_as_recorded(recorded, redact_reference.short_frames())


def test_huge_frames_redact_as_before(recorded: dict[str, dict[str, str]]) -> None:
    from tests.e2e import secrets_corpus as corpus

    frame = redact_reference.huge_frame()
    _assert_as_recorded(recorded, [frame])
    assert b"s3cr3t" not in redact_frame(frame)[0]
    assert corpus.VALUE_SECRETS["openai"].encode() not in redact_frame(frame)[0]


def test_urls_headers_and_argv_redact_as_before(recorded: dict[str, dict[str, str]]) -> None:
    from mcpsniff.core import redact

    for text in redact_reference.url_texts():
        key = redact_reference.digest(text.encode("utf-8", "surrogatepass"))
        assert key in recorded["texts"], f"no recorded outcome for {text!r}"
        assert redact_reference.text_outcome(redact, text) == recorded["texts"][key], (
            f"redaction of {text!r} as a URL, header, argument or member differs from 49ad5f7: "
            f"{redact_url(text)}, {redact_argv(['--token', text])}"
        )


class _CountingTail:
    """Stands in for redact._PAIR_TAIL and adds up how many bytes its matches cover."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def match(self, data: bytes, pos: int) -> re.Match[bytes] | None:
        found = self.pattern.match(data, pos)
        if found is not None:
            self.scanned += found.end() - pos
        return found


def test_text_pairs_read_each_byte_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``monkey=monkey=...`` (any non-secret name with a ``key`` hint, repeated): for each
    hint the value pattern runs to the end of the frame, so a 800 KB stderr line costs
    minutes of analysis CPU (153 s measured at 20ff1a0; 266 s in 49ad5f7; fixed on main
    by bed7d13). Counted in bytes, not seconds: each byte read a few times, not n/7."""
    from mcpsniff.core import redact

    tail = _CountingTail(redact._PAIR_TAIL)
    monkeypatch.setattr(redact, "_PAIR_TAIL", tail)
    frame = b"monkey=" * 2000
    redact.redact_frame(frame)
    assert tail.scanned <= 8 * len(frame), f"{tail.scanned} bytes read for {len(frame)}"


# ---------------------------------------------------------------- may_redact: the count's pre-test


def _pieces() -> list[bytes]:
    """What stands around a hint: separators, JSON escapes, quotes, non-ASCII and stray bytes."""
    from mcpsniff.core import redact

    hints = [hint.decode() for hint in redact._SCANNER.hints]
    names = [*redact_reference.NAMES, "api_key", "x-token", "passwd", "client_secret", "pw"]
    return [
        *(piece.encode() for piece in (*hints, *names, *redact_reference.SNIPPETS)),
        *(value.encode() for value in redact_reference.SECRET_VALUES),
        *(b'"', b"\\", b'\\"', b"\\\\", b":", b"=", b" ", b"\t", b"\n", b"\r", b",", b"{", b"}"),
        *(b"\\u0074", b"\\/", b"-", b"_", b".", b"?", b"&", b"@", b"\xc3\xa9", b"\xff", b"\x00"),
        *(b"x" * 20, b"y" * 39, b"z" * 41, b"w" * 63, b"v" * 65, b"plain words ", b"\xe6\x95\xb0"),
    ]


def _mixed(rng: random.Random, piece: bytes) -> bytes:
    return bytes(
        b ^ 0x20 if 0x61 <= (b | 0x20) <= 0x7A and rng.random() < 0.5 else b for b in piece
    )


def _assert_may_redact(frames: Iterable[bytes]) -> int:
    """Every frame ``redact_frame`` replaces something in, ``may_redact`` lets through."""
    from mcpsniff.core.redact import may_redact

    redacted = 0
    for frame in frames:
        if redact_frame(frame)[1]:
            redacted += 1
            assert may_redact(frame), frame[:300]
    return redacted


def test_may_redact_lets_through_every_frame_the_reference_redacts() -> None:
    """The recorded reference's frames (generated, corpus, window-straddling, short, huge)."""
    assert _assert_may_redact(redact_reference.every_frame()) > 500


@pytest.mark.parametrize("seed", range(12))
def test_may_redact_lets_through_every_adversarial_frame_that_redacts(seed: int) -> None:
    """Hints in any case beside escapes, quotes, separators and runs of 39 to 65 bytes;
    JSON of secret members with JSON inside its strings, escaped again at random."""
    rng = random.Random(seed)
    pieces = _pieces()
    frames: list[bytes] = []
    for _ in range(400):
        frames.append(b"".join(_mixed(rng, rng.choice(pieces)) for _ in range(rng.randint(1, 9))))
    for _ in range(150):
        value = redact_reference._value(rng)
        text = json.dumps(value, ensure_ascii=rng.random() < 0.3)
        if rng.random() < 0.3:
            text = json.dumps(text)  # a whole frame inside a string
        frames.append(_mixed(rng, text.encode()) if rng.random() < 0.5 else text.encode())
    assert _assert_may_redact(frames) > 50


@pytest.mark.parametrize("seed", range(4))
def test_may_redact_answers_as_the_single_pattern_search(seed: int) -> None:
    """The pre-test asks an RE2 set of its one pattern: the same verdict as RE2's own
    search for it, on adversarial frames (six a seed of 9 KB to 100 KB)."""
    from mcpsniff.core import redact

    search = redact._re2.RE2(redact._MAY_REDACT_PATTERN, redact._MAY_REDACT_OPTIONS).Match
    unanchored = redact._re2.RE2.Anchor.UNANCHORED
    rng = random.Random(seed)
    pieces = _pieces()
    frames = [
        b"".join(_mixed(rng, rng.choice(pieces)) for _ in range(rng.randint(1, 9)))
        for _ in range(1500)
    ]
    frames += [
        b"".join(rng.choice(pieces) for _ in range(rng.randint(400, 6000))) for _ in range(6)
    ]
    found = 0
    for frame in frames:
        low = frame.lower()
        expected = search(unanchored, low, 0, len(low))[0] != (-1, -1)
        assert redact.may_redact(frame) is expected, frame[:300]
        found += expected
    assert 100 < found < len(frames) - 100


def test_may_redact_at_the_bounds_of_a_name_and_its_run() -> None:
    """A member name whose quote is 64 bytes after its hint, a name run of 40: as the steps."""
    from mcpsniff.core.redact import may_redact

    for pad in range(55, 70):
        frame = b'{"token' + b"a" * pad + b'": "abc123def456"}'
        assert may_redact(frame) or not redact_frame(frame)[1], pad
        frame = b"token" + b"a" * pad + b"=abc123def456"
        assert may_redact(frame) or not redact_frame(frame)[1], pad
    assert may_redact(b'{"Api_Key"\n\t :"x"}') and redact_frame(b'{"Api_Key"\n\t :"x"}')[1]
    assert may_redact(b'{"t":"{\\"pass\\u0077ord\\": \\"x1\\"}"}')
    assert may_redact(b'{"t":"a\\n\\\\\\"\\nPASSWORD=hunter2"}')


@pytest.mark.parametrize(
    "frame",
    [
        # A member name: its quote 49 bytes after the hint, whitespace with a newline.
        b'{"api_token_for_the_staging_cluster_number_one_and_two": "abc123def"}',
        b'{"my_token"\n: "abc123def"}',
        b'{"token\xff": "abc123def"}',  # a byte that is no UTF-8 in the name
        # JSON in a string whose pair only its decoding shows, before and after the quote.
        b'{"t":"\\"x\\" password\\u003dhunter2xyz"}',
        b'{"t":"password\\u003dhunter2xyz \\"x\\""}',
        # Text pairs: a query hint, a name run of 40 bytes, blanks before the "=".
        b"GET /cb?code=abc123def HTTP/1.1",
        b"api_token_for_the_staging_cluster_number_one=abc123def",
        b"token \t= abc123def",
        b"cloning with ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",  # a value
    ],
)
def test_may_redact_lets_through_what_one_step_alone_redacts(frame: bytes) -> None:
    """Each frame needs one alternative of the pre-test: dropping it must fail here."""
    from mcpsniff.core.redact import may_redact

    assert redact_frame(frame)[1] == 1
    assert may_redact(frame)


def test_may_redact_passes_prose_over() -> None:
    """Hints in prose, escaped quotes without a hint, names that are values: no step acts."""
    from mcpsniff.core.redact import may_redact

    for frame in (
        b'{"event":"decode the token offset","note":"a \\"quoted\\" cache","pending":3}',
        b'{"event":"a \\"quoted\\" word","count":"12 tokens"}',
        b"the password policy and the api key rotation schedule",
        b'{"note":"encode \xc3\xa9 \xff code"}',
    ):
        assert not may_redact(frame), frame
        assert redact_frame(frame)[1] == 0, frame


def test_the_caseless_pre_test_and_the_scanner_alone_redact_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``redact_frame`` with Hyperscan's pre-test, and without it (None: the scanner decides)."""
    from mcpsniff.core import redact

    frames = [
        *redact_reference.short_frames(),
        b'{"PASSWORD":"hunter2","Api_Key":"abcdef123456"}',
        b"Authorization: BEARER abcdefghijklmnop0123",
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"yyyy"}]}}',
        "\u212aey=\u0130 caf\u00e9".encode(),
    ]
    with_pre_test = [redact_frame(frame) for frame in frames]
    monkeypatch.setattr(redact, "_ANY_HINT", lambda raw: None)
    assert [redact_frame(frame) for frame in frames] == with_pre_test
    assert with_pre_test[-4][1] == 2


def test_nested_string_pre_test_keeps_what_the_steps_replace() -> None:
    """``_nested`` skips a decoded string ``may_redact`` clears; a secret inside one still goes."""
    prose = b'{"event":"encode \\"quoted\\" token data","pending":16}'
    assert redact_frame(prose) == (prose, 0)
    inner = b'{"t":"{\\"password\\": \\"hunter2\\", \\"note\\": \\"encode\\"}"}'
    out, count = redact_frame(inner)
    assert count == 1 and b"hunter2" not in out
    deeper = b'{"t":"{\\"u\\": \\"{\\\\\\"api_key\\\\\\": \\\\\\"s3cr3t\\\\\\"}\\"}"}'
    assert json.loads(json.loads(json.loads(deeper)["t"])["u"]) == {"api_key": "s3cr3t"}
    out, count = redact_frame(deeper)
    assert count == 1 and b"s3cr3t" not in out


def test_holds_no_hint_where_redaction_leaves_every_part_as_it_is() -> None:
    plain = b'{"jsonrpc":"2.0","id":1,"result":{}}\n' * 3
    assert holds_no_hint(plain)
    assert all(redact_frame(line + b"\n") == (line + b"\n", 0) for line in plain.split(b"\n"))
    assert not holds_no_hint(plain + b'{"PassWord":"x"}\n')  # a hint in any case
    assert not holds_no_hint(bytearray(plain))  # not bytes: redact_frame scans it
