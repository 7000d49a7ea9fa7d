"""The inputs of the redaction differential test, and the recorded outputs of the old redaction.

``tests/core/test_redact.py`` checks that the speed-ups of ``core/redact.py``
(the Aho-Corasick prefilter of ``core/hint_scan.py``, the skipped steps, the
``"progressToken"`` fast path) changed no output: on every input below, today's
redaction must give the same bytes and the same count as ``redact.py`` at
commit 49ad5f7, before those speed-ups. That version's outputs were recorded
once into ``data/redact_49ad5f7.json`` (a digest of each output, keyed by a
digest of its input), so no copy of old code lives in the tests. To record
them again, from the old module's source::

    git show 49ad5f7:mcpsniff/core/redact.py > /tmp/redact_49ad5f7.py
    python -m tests.core.redact_reference /tmp/redact_49ad5f7.py

Every input is made by seeded, deterministic code, so the same inputs come
back on every run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from mcpsniff.core.hint_scan import WINDOW
from tests.e2e import secrets_corpus as corpus

RECORDING = Path(__file__).parent / "data" / "redact_49ad5f7.json"

NAMES = [*corpus.MEMBER_NAMES, "password", "token", "progressToken", "nextCursor", "id"]
NAMES += [*corpus.LOOKALIKE_ARGUMENTS, "access_token", "sig", "code", "Authorization"]
SECRET_VALUES = list(corpus.SECRETS.values()) + list(corpus.VALUE_SECRETS.values())
SNIPPETS = [
    *corpus.NESTED_TEXTS,
    *corpus.STDERR_LINES,
    *corpus.LOOKALIKES,
    corpus.ERROR_MESSAGE,
    corpus.ERROR_BODY,
    '"progressToken"',
    '"progressToken": "tok-1"',
    "progresstoken",
    "token=abc123",
    "?key=abc&sig=def&code=ghi",
    "https://user:hunter2pass@example.com/x",
    "Bearer abc.def-123",
    "-----BEGIN PRIVATE KEY-----\nMIIBVQ\n-----END PRIVATE KEY-----",
    '{\\"api_key\\": \\"nested-secret-1\\"}',
    "[REDACTED]",
    "\\",
    '"',
    ":",
    "=",
    " ",
    "\n",
]
URL_PARTS = [
    "https://",
    "http://u:",
    "p4ss",
    "@",
    "host",
    "/p",
    "?",
    "key=",
    "abc",
    "&",
    "sig=",
    "x",
    "code=",
    "token=",
    "%20",
    "Bearer ",
    "sk-proj-A1b2C3d4E5f6G7h8I9j0",
]

#: Frames that once told the two versions apart (kept from the property test's examples).
EXAMPLE_FRAMES = [
    b'"progressToken"=abc123xyz',
    b'{"progressToken": "x", "note": "token=abc123xyz"}',
    b'"progressToken" "progressToken": token: abc123xyz',
    b"AUTHORIZATION: BEARER abc.def-123",
]
GENERATED_FRAMES = 1500
GENERATED_URLS = 500
WINDOW_SHIFTS = [-20, -9, -5, -3, -1, 0, 1, 3]
CORPUS_BUILDERS = ["call", "result", "error"]


def mixed_case(text: str, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


def _value(rng: random.Random, depth: int = 0) -> object:
    """A JSON value made of secrets, look-alikes and snippets, nested up to three deep."""
    kind = rng.randint(0, 5 if depth < 3 else 2)
    if kind == 0:
        return rng.choice(SECRET_VALUES)
    if kind == 1:
        return rng.choice(SNIPPETS)
    if kind == 2:
        text = "".join(rng.choice(SNIPPETS + SECRET_VALUES) for _ in range(rng.randint(0, 5)))
        return mixed_case(text, rng.randint(0, 1000)) if rng.random() < 0.5 else text
    if kind == 3:
        return {rng.choice(NAMES): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if kind == 4:
        # JSON inside a JSON string, as tool results carry it.
        return json.dumps(_value(rng, depth + 1))
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def generated_frames() -> Iterator[bytes]:
    """Frames: JSON (maybe with JSON in its strings), text, or JSON with text around it."""
    yield from EXAMPLE_FRAMES
    rng = random.Random(49)
    for _ in range(GENERATED_FRAMES):
        value = _value(rng)
        use_json = not isinstance(value, str) or rng.random() < 0.5
        body = json.dumps(value) if use_json else str(value)
        if rng.random() < 0.5:
            body = mixed_case(body, rng.randint(0, 1000))
        prefix = rng.choice(["", "x" * 40, "progressToken ", "debug: "])
        yield (prefix + body).encode("utf-8", "surrogatepass")


def corpus_frames(builder: str) -> Iterator[bytes]:
    message = {
        "call": corpus.tool_call(1),
        "result": corpus.tool_result(1),
        "error": corpus.tool_error(1),
    }[builder]
    for indent in (None, 2):
        yield json.dumps(message, indent=indent).encode()
    for line in corpus.STDERR_LINES:
        yield line.encode()


def _secret_pieces() -> list[bytes]:
    pieces = [f'"{name}": "v4lue-{i}x9"'.encode() for i, name in enumerate(NAMES)]
    pieces += [f"{name}=v4lue-{i}x9".encode() for i, name in enumerate(NAMES)]
    pieces += [value.encode() for value in SECRET_VALUES]
    return pieces


def window_frames(shift: int) -> Iterator[bytes]:
    """Each secret placed so that its hint straddles the scanner's 64 KiB window boundary."""
    for piece in _secret_pieces():
        pad = max(0, WINDOW + shift - 2)
        for filler in (b" ", b"a", b"k"):
            yield b'{"x": "' + filler * pad + b'", ' + piece + b"}"
            yield filler * (WINDOW + shift) + piece


def short_frames() -> Iterator[bytes]:
    """Secrets at every seventh position of a tools/call frame."""
    base = json.dumps(corpus.tool_call(7)).encode()
    for piece in (b"token=abc123xyz", b"sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4", b'"pw": "zz9"'):
        for at in range(0, len(base), 7):
            yield base[:at] + piece + base[at:]


def huge_frame() -> bytes:
    secret = corpus.VALUE_SECRETS["openai"].encode()
    frame = b'{"a": "' + b"x" * (3 * WINDOW + 17) + b'", "api_key": "s3cr3t", "b": "' + secret
    return frame + b" " + b"y" * (2 * WINDOW) + b' token=abc123"}'


def url_texts() -> Iterator[str]:
    """URLs, credentials and query strings for the URL, header, argv and JSON redactors."""
    rng = random.Random(4949)
    for _ in range(GENERATED_URLS):
        parts = [rng.choice(URL_PARTS) for _ in range(rng.randint(0, 12))]
        seed = rng.randint(0, 1000)
        yield mixed_case("".join(parts), seed) if seed % 2 else "".join(parts)


def every_frame() -> Iterator[bytes]:
    yield from generated_frames()
    for builder in CORPUS_BUILDERS:
        yield from corpus_frames(builder)
    for shift in WINDOW_SHIFTS:
        yield from window_frames(shift)
    yield from short_frames()
    yield huge_frame()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def frame_outcome(redact: ModuleType, frame: bytes) -> str:
    """What a redaction module makes of a frame: ``=`` when it is left as it is, else a
    digest of the redacted bytes and the count of values replaced."""
    redacted, count = redact.redact_frame(frame)
    if redacted == frame and count == 0:
        return "="
    return f"{digest(redacted)} {count}"


def text_outcome(redact: ModuleType, text: str) -> str:
    """What a redaction module makes of one text as a URL, a header, an argument and a member."""
    pairs = [("X-Thing", text), ("Authorization", text), ("Mcp-Session-Id", text)]
    argv = ["--token", text, f"--api-key={text}", text]
    outcome = [
        redact.redact_url(text),
        redact.redact_header_pairs(pairs),
        redact.redact_argv(argv),
        redact.redact_json_value({"a": text, "password": text}),
    ]
    return digest(json.dumps(outcome, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def load() -> dict[str, Any]:
    """The recorded outcomes: ``frames`` and ``texts``, each keyed by a digest of the input."""
    return json.loads(RECORDING.read_text())


def record(redact: ModuleType) -> dict[str, Any]:
    frames = {digest(frame): frame_outcome(redact, frame) for frame in every_frame()}
    texts = {
        digest(text.encode("utf-8", "surrogatepass")): text_outcome(redact, text)
        for text in url_texts()
    }
    return {
        "recorded_with": "mcpsniff/core/redact.py at commit 49ad5f7",
        "frames": frames,
        "texts": texts,
    }


def _module_from(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("redact_reference_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str], write: Callable[[str], object] = RECORDING.write_text) -> None:
    """``python -m tests.core.redact_reference OLD_REDACT.py``: record its outcomes."""
    recording = record(_module_from(argv[0]))
    # One input a line, so that a change to the inputs reads as a diff of lines.
    lines = [f'{{"recorded_with": {json.dumps(recording["recorded_with"])},']
    for part in ("frames", "texts"):
        entries = sorted(recording[part].items())
        lines.append(f'"{part}": {{')
        lines += [f'"{key}": {json.dumps(value)},' for key, value in entries[:-1]]
        lines += [f'"{key}": {json.dumps(value)}' for key, value in entries[-1:]]
        lines.append("}," if part == "frames" else "}")
    lines.append("}")
    write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
