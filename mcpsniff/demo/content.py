"""What the demo server offers: its tools, resources and prompts.

Kept apart from the protocol code in ``server.py`` so that the wire handling
stays readable. Everything here is plain data plus small pure functions; the
argument checks implement just the JSON Schema subset the demo schemas use
(the demo runs on the standard library and orjson alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- tools


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool as tools/list describes it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None

    def describe(self, *, structured: bool) -> dict[str, Any]:
        """The tools/list entry; ``structured`` is False before 2025-06-18 (no outputSchema)."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if structured and self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        return entry


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


#: Upper bound for slow_count, so a typo cannot keep the demo busy for minutes.
MAX_COUNT = 50

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "add",
            "Add two integers.",
            _object({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
            _object({"sum": {"type": "integer"}}, ["sum"]),
        ),
        Tool(
            "echo",
            "Return the text it is given.",
            _object({"text": {"type": "string"}}, ["text"]),
        ),
        Tool(
            "slow_count",
            "Count from 1 to n, reporting progress for every step.",
            _object({"n": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT}}, ["n"]),
        ),
    )
}

_TYPES: dict[str, tuple[type, ...]] = {"integer": (int,), "string": (str,)}


def argument_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit ``schema`` (one of the demo's flat object schemas), or None."""
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            return f"missing required argument {name!r}"
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f"unexpected argument {name!r}"
            continue
        expected = spec.get("type")
        # bool is an int subclass in Python but not a JSON integer.
        if isinstance(value, bool) or not isinstance(value, _TYPES.get(expected, (object,))):
            return f"argument {name!r} must be of type {expected}"
        if "minimum" in spec and value < spec["minimum"]:
            return f"argument {name!r} must be at least {spec['minimum']}"
        if "maximum" in spec and value > spec["maximum"]:
            return f"argument {name!r} must be at most {spec['maximum']}"
    return None


# --------------------------------------------------------------------------- resources


@dataclass(frozen=True, slots=True)
class Resource:
    """A text resource with a fixed body."""

    uri: str
    name: str
    description: str
    mime_type: str
    text: str

    def describe(self) -> dict[str, Any]:
        """The resources/list entry."""
        return {
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
        }

    def contents(self) -> dict[str, Any]:
        """The resources/read contents entry."""
        return {"uri": self.uri, "mimeType": self.mime_type, "text": self.text}


RESOURCES: dict[str, Resource] = {
    r.uri: r
    for r in (
        Resource(
            "demo://readme",
            "readme",
            "What this demo server is.",
            "text/plain",
            "This is the mcpsniff demo server. mcpsniff sits between it and the demo client\n"
            "and records every byte they exchange.\n",
        ),
        Resource(
            "demo://config.json",
            "config",
            "The demo server's settings, as JSON.",
            "application/json",
            '{"greeting": "hello", "max_count": ' + str(MAX_COUNT) + "}\n",
        ),
    )
}


# --------------------------------------------------------------------------- prompts


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt template takes."""

    name: str
    description: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt template whose ``{name}`` placeholders are filled from string arguments."""

    name: str
    description: str
    template: str
    arguments: tuple[PromptArgument, ...] = field(default_factory=tuple)
    defaults: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """The prompts/list entry."""
        return {
            "name": self.name,
            "description": self.description,
            "arguments": [
                {"name": a.name, "description": a.description, "required": a.required}
                for a in self.arguments
            ],
        }

    def render(self, arguments: dict[str, str]) -> str:
        """The filled-in text. Raises ``ValueError`` naming a missing required argument."""
        for argument in self.arguments:
            if argument.required and argument.name not in arguments:
                raise ValueError(f"missing required argument {argument.name!r}")
        values = {
            a.name: arguments.get(a.name, self.defaults.get(a.name, "")) for a in self.arguments
        }
        return self.template.format(**values)


PROMPTS: dict[str, Prompt] = {
    p.name: p
    for p in (
        Prompt(
            "greet",
            "Ask the model to greet someone.",
            "Please write a friendly {style} greeting for {name}.",
            (
                PromptArgument("name", "Who to greet.", required=True),
                PromptArgument("style", "How to greet (default: short)."),
            ),
            {"style": "short"},
        ),
        Prompt(
            "explain_mcp",
            "Ask the model to explain the Model Context Protocol.",
            "Explain in three sentences what the Model Context Protocol is.",
        ),
    )
}
