"""``redact_header_meta`` and ``redact_event_data``: each value redacted as its key says."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.trace.redact_trace import redact_event_data, redact_header_meta, redact_trace
from tests.lane_layout import two_lane

KEY = "sk-abcdefghijklmnopqrstuvwx"


def test_a_header_s_command_line_and_url_lose_their_secrets() -> None:
    meta = {
        "command": ["srv", "--api-key", KEY],
        "url": "http://h/mcp?token=abc123secret",
        "pid": 3,
    }
    out, count = redact_header_meta(meta)
    assert out == {
        "command": ["srv", "--api-key", "[REDACTED]"],
        "url": "http://h/mcp?token=[REDACTED]",
        "pid": 3,
    }
    assert count == 2
    # A header has no header pairs: a "headers" key there is a plain value.
    assert redact_header_meta({"headers": [["Authorization", "x"]]}) == (
        {"headers": [["Authorization", "x"]]},
        0,
    )


def test_an_event_s_headers_path_and_command_lose_their_secrets() -> None:
    data = {
        "headers": [["Authorization", "Bearer abcdefghijklmnop"]],
        "path": "/mcp?api_key=zzzzzzzzzzzz",
        "command": ["a", "--token", "t0ken123456"],
        "exchange": 1,
    }
    out, count = redact_event_data("http-request", data)
    assert out == {
        "headers": [["Authorization", "[REDACTED]"]],
        "path": "/mcp?api_key=[REDACTED]",
        "command": ["a", "--token", "[REDACTED]"],
        "exchange": 1,
    }
    assert count == 3


def test_clean_values_pass_unchanged() -> None:
    data = {"exchange": 2, "path": "/mcp", "headers": [["Accept", "text/event-stream"]]}
    assert redact_event_data("http-request", data) == (data, 0)


def test_a_two_lane_trace_is_redacted_into_its_one_lane_order(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"
    laid = tmp_path / "laid.jsonl"
    laid.write_bytes(two_lane(source.read_bytes(), 5, 7))
    redact_trace(source, tmp_path / "one.jsonl")
    redact_trace(laid, tmp_path / "two.jsonl")
    one = (tmp_path / "one.jsonl").read_bytes().splitlines()
    two = (tmp_path / "two.jsonl").read_bytes().splitlines()
    # The same records in the same order: the lane records steered the reader.
    assert one[1:] == two[1:] and b'"lane"' not in b"".join(two)
