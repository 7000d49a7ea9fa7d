"""Instructions per exchange of the HTTP relay's connection code, with and without ``--fault``.

``bench_fault_cpu.py --callgrind`` counts a whole relay process under valgrind,
where the relay is so slow that a response's head and body are almost always
read together; in real time an SSE response's head often comes alone (the
upstream flushes it before its first event), which takes another path. This
script drives one client connection (``ClientSide``, or ``FaultedClientSide``
with the faults of ``--fault``) with transports that keep what is written to
them (``tests/relay/playbook.py``): no socket, no event loop turn, the same
exchanges every run. Each exchange is one 1 KiB ``tools/call`` POST and its
answer, JSON or one SSE event, read by the relay in one piece, as its head
alone and then the rest, or as all but its end and then its end (an SSE
stream's last chunk, a JSON body's last byte): the reads ``bench_http_relay.py``'s
16 concurrent clients (``--clients 16`` of ``bench_fault_cpu.py``) bring, each
on a keep-alive connection of its own, one request at a time.

Usage::

    python benchmarks/bench_fault_paths.py --fault 'delay 1s when tool == "nothing-has-this-name"'
    python benchmarks/bench_fault_paths.py --fault ... --exchanges 500 --formats sse

Each configuration runs twice under ``valgrind --tool=callgrind`` (a warm-up of
100 exchanges, then none or ``--exchanges`` more); the difference of the two
totals over ``--exchanges`` is what one exchange costs, start-up and warm-up
left out. It prints, per format and reading, thousands of instructions an
exchange plain and faulted, their ratio, and how many responses the faulted
connection took over; then, per format, the ratio of the mix of readings the
concurrent clients bring (``CONCURRENT_MIX``, counted in a relay under that load).
Exit status 0 (information, no target).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARM = 100
READINGS = {
    "one": "one read",
    "head": "head alone, then the rest",
    "end": "all but the end, then the end",
}
#: How the responses of ``bench_http_relay.py``'s 16 concurrent clients came to the
#: relay (reads of each response counted in ``mcpsniff http --fault``, 2.5 s a format,
#: 11,171 JSON and 15,680 SSE responses): SSE streams are written by the upstream in
#: three steps (head, event, last chunk), which a loaded relay reads in one, two or three.
CONCURRENT_MIX = {
    "json": {"one": 1.0},
    "sse": {"one": 0.935, "head": 0.041, "end": 0.024},
}
TOOL = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
    b'"params":{"name":"echo","arguments":{"text":"%s"}}}'
)


def _request(ident: int) -> bytes:
    body = TOOL % (ident, b"x" * 900)
    return (
        b"POST /mcp HTTP/1.1\r\nHost: up\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
        % (len(body), body)
    )


def _response(ident: int, sse: bool) -> tuple[bytes, bytes]:
    """A response's head and the rest (body and end)."""
    result = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}' % (
        ident,
        b"y" * 900,
    )
    if sse:
        event = b"event: message\ndata: " + result + b"\n\n"
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        return head, b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
        result
    )
    return head, result


def _reads(head: bytes, rest: bytes, reading: str) -> list[bytes]:
    """One response as the relay reads it."""
    if reading == "head":
        return [head, rest]
    if reading == "end":
        cut = len(rest) - 5 if rest.endswith(b"0\r\n\r\n") else len(rest) - 1
        return [head + rest[:cut], rest[cut:]]
    return [head + rest]


def run(count: int, sse: bool, reading: str, faults: list[str]) -> int:
    """Drive ``count`` exchanges through one connection; responses taken over."""
    sys.path.append(str(ROOT))  # after PYTHONPATH: the mcpsniff measured comes first
    from mcpsniff.faults.spec import parse_faults
    from mcpsniff.intercept.http_upstream import UpstreamSide
    from mcpsniff.intercept.http_wire import ClientSide
    from tests.relay.playbook import PlaybookRelay, Wire

    # No cyclic collection: when one falls in the counted exchanges rather than in the
    # warm-up depends on everything allocated before (paths, imports), and a full one
    # costs more than the code measured (runs of the same code 5 thousand apart).
    gc.disable()
    relay = PlaybookRelay()
    if faults:
        from mcpsniff.intercept.http_faults import faulted_factory

        connection = faulted_factory(relay, parse_faults(faults), verbatim=False)()
    else:
        connection = ClientSide(relay)
    client, upstream_wire = Wire(), Wire()
    connection.connection_made(client)  # type: ignore[arg-type]
    upstream = UpstreamSide(connection)
    upstream.connection_made(upstream_wire)  # type: ignore[arg-type]
    connection.upstream = upstream
    traffic = [(_request(n), _reads(*_response(n, sse), reading)) for n in range(count)]
    for request, reads in traffic:
        connection.data_received(request)
        upstream_wire.written.clear()
        for read in reads:
            upstream.data_received(read)
        client.written.clear()
        relay.observations.clear()
    assert not connection.exchanges
    faulted = getattr(connection, "faults", None)
    return faulted.taken_over if faulted is not None and hasattr(faulted, "taken_over") else -1


def counted(
    folder: Path, count: int, sse: bool, reading: str, faults: list[str]
) -> tuple[int, str]:
    """Total instructions of a run of ``count`` exchanges under callgrind, and its output."""
    out = folder / f"cg.{count}.{sse}.{reading}.{len(faults)}"
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    argv += [__file__, "--run", str(count), "--formats", "sse" if sse else "json"]
    argv += ["--reading", reading]
    for spec in faults:
        argv += ["--fault", spec]
    env = dict(os.environ, PYTHONHASHSEED="1")
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    assert found, out
    return int(found.group(1)), done.stdout.strip()


def main() -> int:
    """Count each configuration, or (``--run``) drive one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--fault", action="append", default=[], help="a fault (repeatable)")
    parser.add_argument("--exchanges", type=int, default=300, help="exchanges counted")
    parser.add_argument("--formats", default="json,sse", help="of json,sse")
    parser.add_argument("--reading", default="one", choices=READINGS, help=argparse.SUPPRESS)
    parser.add_argument("--readings", default=",".join(READINGS), help="of " + ",".join(READINGS))
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.run is not None:
        print(run(WARM + ns.run, ns.formats == "sse", ns.reading, ns.fault))
        return 0
    if not ns.fault:
        parser.error("--fault is required")
    with tempfile.TemporaryDirectory(prefix="bench-fault-paths-") as name:
        folder = Path(name)
        for mode in ns.formats.split(","):
            sse = mode == "sse"
            cost: dict[str, dict[str, float]] = {}
            for reading in ns.readings.split(","):
                per = {}
                taken = ""
                for label, faults in (("plain", []), ("faulted", ns.fault)):
                    base, _ = counted(folder, 0, sse, reading, faults)
                    total, out = counted(folder, ns.exchanges, sse, reading, faults)
                    per[label] = (total - base) / ns.exchanges / 1e3
                    if faults:
                        taken = out
                cost[reading] = per
                print(
                    f"{mode}, {READINGS[reading]}: {per['plain']:.1f} plain, {per['faulted']:.1f}"
                    f" faulted (thousand instructions an exchange): ratio"
                    f" {per['faulted'] / per['plain']:.3f}; taken over {taken}"
                    f" of {WARM + ns.exchanges}",
                    flush=True,
                )
            mix = CONCURRENT_MIX[mode]
            if set(mix) <= set(cost):
                plain = sum(share * cost[r]["plain"] for r, share in mix.items())
                faulted = sum(share * cost[r]["faulted"] for r, share in mix.items())
                print(
                    f"{mode}, the concurrent clients' mix {mix}: {plain:.1f} plain,"
                    f" {faulted:.1f} faulted: ratio {faulted / plain:.3f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
