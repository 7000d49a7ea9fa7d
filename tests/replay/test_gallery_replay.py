"""Replays of the small gallery recordings (``recordings/``), driven by hand-written lines.

They pin what the SDK sessions cannot show on their own: progress tokens
rewritten to the client's, batches rebuilt element by element, and a drive
against ``replay serve`` itself matching a batch answered out of order.
"""

from __future__ import annotations

import json
import subprocess

from tests.replay.support import MCPSNIFF, REPO, TIMEOUT, all_match, run

CLEAN = REPO / "recordings" / "clean-2025-11-25.jsonl"
BATCH = REPO / "recordings" / "out-of-order-batch.jsonl"


def serve(trace: str, messages: list[object]) -> list[object]:
    """Every line ``replay serve`` writes for these client lines."""
    text = "".join(json.dumps(m) + "\n" for m in messages)
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", trace],
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_progress_comes_before_the_response_with_the_clients_token() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 99,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 5, "b": 5}, "_meta": {"progressToken": "t"}},
    }
    out = serve(str(CLEAN), [call])
    assert out == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "adding 5 and 5"},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 2},
        },
        {"jsonrpc": "2.0", "id": 99, "result": {"content": [{"type": "text", "text": "10"}]}},
    ]


def test_a_batch_is_answered_element_by_element_with_the_clients_ids() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "x", "method": "ping"},
        {
            "jsonrpc": "2.0",
            "id": "y",
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}},
    ]
    (answer,) = serve(str(BATCH), [batch])
    assert answer == [
        {"jsonrpc": "2.0", "id": "x", "result": {}},
        {"jsonrpc": "2.0", "id": "y", "result": {"content": [{"type": "text", "text": "2"}]}},
    ]


def test_drive_against_replay_serve_matches_a_batch_answered_out_of_order() -> None:
    served = [*MCPSNIFF, "replay", "serve", str(BATCH)]
    result = run([*MCPSNIFF, "replay", "drive", str(BATCH), "--", *served])
    assert result.code == 0, result.out + result.err
    assert result.out.strip() == all_match(4)
