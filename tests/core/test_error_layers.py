import pytest

from mcpsniff.core.error_layers import APPLICATION, PROTOCOL, SERVER, error_layer


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
