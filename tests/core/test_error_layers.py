import pytest

from mcpsniff.core.error_layers import APPLICATION, PROTOCOL, SERVER, TOOL_ERROR, error_layer


@pytest.mark.parametrize(
    ("code", "layer", "name"),
    [
        (-32700, PROTOCOL, "Parse error"),
        (-32601, PROTOCOL, "Method not found"),
        (-32768, PROTOCOL, None),
        (-32600, PROTOCOL, "Invalid Request"),
        (-32100, PROTOCOL, None),
        (-32099, SERVER, None),
        (-32000, SERVER, None),
        (-32002, SERVER, "Resource not found"),
        (-31999, APPLICATION, None),
        (-32769, APPLICATION, None),
        (42, APPLICATION, None),
        ("-32700", APPLICATION, None),
        (True, APPLICATION, None),
    ],
)
def test_error_layer(code: object, layer: str, name: str | None) -> None:
    result = error_layer(code)
    assert (result.layer, result.name) == (layer, name)


@pytest.mark.parametrize(
    ("code", "label"),
    [
        (-32700, "Parse error [JSON-RPC protocol]"),
        (-32600, "Invalid Request [JSON-RPC protocol]"),
        (-32601, "Method not found [JSON-RPC protocol]"),
        (-32602, "Invalid params [JSON-RPC protocol]"),
        (-32603, "Internal error [JSON-RPC protocol]"),
        (-32650, "reserved for future use, undefined by JSON-RPC 2.0 [JSON-RPC protocol]"),
        (-32768, "reserved for future use, undefined by JSON-RPC 2.0 [JSON-RPC protocol]"),
        (-32050, "[server-error range]"),
        (-32002, "Resource not found (MCP 2024-11-05..2025-11-25) [server-error range]"),
        (-32042, "URL elicitation required (MCP 2025-11-25) [server-error range]"),
        (-32021, "MissingRequiredClientCapability (MCP 2026-07-28) [server-error range]"),
        (-1, "user rejected sampling (an example) (MCP 2024-11-05..2025-11-25) [application]"),
        (42, "[application]"),
        (-32769, "[application]"),
        (1.5, "not an integer, which JSON-RPC 2.0 §5.1 requires [application]"),
        (None, "not an integer, which JSON-RPC 2.0 §5.1 requires [application]"),
    ],
)
def test_label_names_the_layer_and_the_meaning(code: object, label: str) -> None:
    assert error_layer(code).label == label


def test_json_form_carries_layer_title_and_definer() -> None:
    assert error_layer(-32601).as_json() == {
        "layer": "protocol",
        "title": "JSON-RPC protocol error (-32768..-32600)",
        "name": "Method not found",
        "defined_by": "JSON-RPC 2.0",
    }
    assert error_layer(-32100).as_json() == {
        "layer": "protocol",
        "title": "JSON-RPC protocol error (-32768..-32600)",
        "note": "reserved for future use, undefined by JSON-RPC 2.0",
    }
    assert error_layer(7).as_json() == {"layer": "application", "title": "application error"}
    assert TOOL_ERROR.label == "[tool error, isError: true]"
    assert TOOL_ERROR.as_json()["layer"] == "tool"
