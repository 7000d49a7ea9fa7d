"""Time two versions of mcpsniff's hot functions in one process, alternately.

On a shared, loaded machine two benchmark processes, even run back to back or
interleaved, differ by +-30% for reasons that have nothing to do with the code
(the third pass of issue 12 was misled twice that way). One process holding
both versions shares every disturbance between them: the working tree's
``mcpsniff`` and a git revision's copy, imported under another package name,
timed in alternation, median of ``--repeat`` runs each.

Usage::

    python benchmarks/ab_same_process.py --base main
    python benchmarks/ab_same_process.py --base 1c5b6d6 --only redact --repeat 15

Cases: ``redact`` (``redact_frame`` on bench_redact's frames and the stdio
bench's echo frames), ``encode`` (a frame line, a message line), ``decode``
(``decode_prefix`` over the stdio bench's observations), ``feed`` (a
``Recorder`` fed like ``prof_feed``: 16 requests, then 16 responses per call),
``http`` (the HTTP adapter and a ``TraceRecorder`` fed one Streamable HTTP
exchange: a POST answered by an event stream of 32 events, so the typed events
of ``core/http/events.py`` are made for every one), ``inputs``
(``TraceReader.inputs()`` over bench_check's 10,000-message trace:
check's reading loop), ``check`` (the same trace read and analyzed as ``check``
does it: ``replay_notable`` over ``inputs()``).
Prints each case's median time per operation for both versions and their
ratio (branch / base: below 1 is faster). Exit status 0.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_redact import _frames  # noqa: E402
from bench_stdio_relay import ECHO_RESULT, request_line, response_line  # noqa: E402
from gen_trace import cached_trace  # noqa: E402

_IMPORT = re.compile(r"\b(from|import) mcpsniff\b")


def _copy_of(revision: str, folder: Path) -> str:
    """``mcpsniff`` at ``revision`` as the package ``mcpsniff_base`` in ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", revision, "mcpsniff"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    package = folder / "mcpsniff"
    for source in package.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        source.write_text(_IMPORT.sub(r"\1 mcpsniff_base", text), encoding="utf-8")
    package.rename(folder / "mcpsniff_base")
    sys.path.insert(0, str(folder))
    return "mcpsniff_base"


def _module(package: str, name: str, *older: str) -> ModuleType:
    """``package.name``; a base revision from before a move has it as one of ``older``."""
    for candidate in (name, *older):
        try:
            return importlib.import_module(f"{package}.{candidate}")
        except ModuleNotFoundError:
            if candidate == (older[-1] if older else name):
                raise
    raise AssertionError("not reached")


def _cases(package: str, only: str | None) -> dict[str, tuple[Callable[[], object], int]]:
    """Each case's function (one operation per call) and how many calls make one run."""
    cases: dict[str, tuple[Callable[[], object], int]] = {}
    if only in (None, "redact"):
        redact = _module(package, "core.redact").redact_frame
        frames = dict(_frames())
        frames["echo request"] = request_line(12345)
        frames["echo response"] = response_line(12345, ECHO_RESULT)
        for name, frame in frames.items():
            cases[f"redact {name}"] = (lambda frame=frame: redact(frame), 2000)
    if only in (None, "encode"):
        model, fmt = _module(package, "core.model"), _module(package, "trace.codec", "trace.format")
        raw = response_line(12345, ECHO_RESULT)
        frame = model.FrameRecord(
            7, 1764638000.5, "s", "s2c", "stdio", raw, None, orjson.loads(raw)
        )
        message = model.MessageRecord(
            7, "s", "s2c", "response", None, 12345, True, None, 5, None, 0.25
        )
        cases["encode frame line"] = (lambda: fmt.encode_line(frame), 20000)
        cases["encode message line"] = (lambda: fmt.encode_line(message), 20000)
    if only in (None, "decode"):
        codec = _module(package, "core.observation_codec")
        data = b"".join(
            codec.encode_bytes(_module(package, "core.observations").StreamData("s2c", 1.5, body))
            for body in [response_line(i, ECHO_RESULT) for i in range(1000)]
        )
        cases["decode 1000 StreamData"] = (lambda: codec.decode_prefix(data), 20)
    if only in (None, "feed"):
        cases["feed 32 calls"] = (_feeder(package), 20)
    if only in (None, "http"):
        cases["http exchange, 32 SSE events"] = (_http_feeder(package), 200)
    if only in (None, "inputs"):
        reader = _module(package, "trace.reader", "trace.format").TraceReader
        path = cached_trace(10_000, quiet=True)

        def read_inputs() -> None:
            with reader(path) as trace:
                for _ in trace.inputs():
                    pass

        cases["inputs 10k-message trace"] = (read_inputs, 3)
    if only in (None, "check"):
        reader = _module(package, "trace.reader", "trace.format").TraceReader
        replay_notable = _module(package, "core.analyzer").replay_notable
        path = cached_trace(10_000, quiet=True)

        def check() -> None:
            with reader(path) as trace:
                for _ in replay_notable(trace.inputs()):
                    pass

        cases["check 10k-message trace"] = (check, 1)
    return cases


def _feeder(package: str) -> Callable[[], None]:
    try:
        recorder_class = _module(package, "capture.recorder").TraceRecorder
    except ImportError:  # a base revision from before the capture package (issue 24)
        recorder_class = _module(package, "relay.recorder").Recorder
    writer = _module(package, "trace.writer", "trace.format").TraceWriter(io.BytesIO())
    target = recorder_class(writer, "stdio", redact=True, autoflush=False)
    ids = iter(range(10, 1 << 62))

    def feed() -> None:
        for _ in range(2):
            first = [next(ids) for _ in range(16)]
            target.feed("stdio", "c2s", b"".join(map(request_line, first)), 1.0)
            target.feed("stdio", "s2c", b"".join(response_line(i, ECHO_RESULT) for i in first), 1.0)
        writer.flush()
        writer._stream.seek(0)
        writer._stream.truncate()

    return feed


def _http_feeder(package: str) -> Callable[[], None]:
    """One SSE exchange through ``ObservationAdapter`` into a ``TraceRecorder`` per call."""
    o = _module(package, "core.observations")
    adapter_class = _module(package, "core.http.adapter").ObservationAdapter
    writer = _module(package, "trace.writer").TraceWriter(io.BytesIO())
    recorder = _module(package, "capture.recorder").TraceRecorder(writer, "http", autoflush=False)
    adapter = adapter_class(recorder, mcp_path="/mcp")
    post = (("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"))
    stream = (("Content-Type", "text/event-stream"), ("Mcp-Session-Id", "s1"))
    numbers = iter(range(1, 1 << 62))

    def feed() -> None:
        n = next(numbers)
        body = request_line(n).rstrip(b"\n")
        events = b"".join(
            b"event: message\ndata: " + response_line(n, ECHO_RESULT).rstrip(b"\n") + b"\n\n"
            if i == 31
            else b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress",'
            b'"params":{"progressToken":1,"progress":%d}}\n\n' % i
            for i in range(32)
        )
        for observation in (
            o.RequestBegin(n, 1.0, "POST", "/mcp", post, None, "c:1", len(body), body),
            o.ResponseBegin(n, 1.1, 200, stream),
            o.ResponseBody(n, 1.2, False, events),
            o.ExchangeEnd(n, 1.3, "complete", True),
        ):
            adapter.apply(observation)
        writer.flush()
        writer._stream.seek(0)
        writer._stream.truncate()

    return feed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main", help="git revision to compare against")
    parser.add_argument(
        "--only", choices=["redact", "encode", "decode", "feed", "http", "inputs", "check"]
    )
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = _copy_of(args.base, Path(folder))
        versions = {"base": _cases(base, args.only), "branch": _cases("mcpsniff", args.only)}
        print(f"base {args.base} vs the working tree, median of {args.repeat} alternated runs")
        for name in versions["base"]:
            times: dict[str, list[float]] = {"base": [], "branch": []}
            for _ in range(args.repeat):
                for version, cases in versions.items():
                    fn, count = cases[name]
                    start = time.process_time()
                    for _ in range(count):
                        fn()
                    times[version].append((time.process_time() - start) / count * 1e6)
            old, new = statistics.median(times["base"]), statistics.median(times["branch"])
            print(f"{name:38} base {old:9.2f} us  branch {new:9.2f} us  ratio {new / old:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
