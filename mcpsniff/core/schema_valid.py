"""Whether a plain tool schema is certainly a valid JSON Schema, without jsonschema.

TOOL-INPUTSCHEMA-VALID asks jsonschema's ``check_schema``: it validates the
schema against its dialect's metaschema. Importing jsonschema and running that
costs about 50 ms the first time, paid by every process that analyzes a
session (each ``check --jobs`` worker, each ``mcpsniff stdio``), most often
for schemas an SDK generated from a function's signature: an object of typed
properties. ``certainly_valid`` recognizes those and answers True only when
every metaschema from draft 4 to 2020-12 accepts the schema; anything else
(another keyword, a value of an unusual type) is False, which means "ask
jsonschema", never "invalid".

The metaschemas' rules used here (json-schema.org, draft-04 to 2020-12
"validation" and "meta-data" vocabularies): ``type`` is one of the seven
simple types or a non-empty array of unique ones; ``minLength``,
``maxLength``, ``minItems``, ``maxItems`` are non-negative integers;
``minimum`` and ``maximum`` numbers; ``required`` an array of unique strings
(draft 4: "minItems": 1); ``enum`` an array (draft 4: non-empty, unique);
``title``, ``description``, ``$comment``, ``format`` strings; ``examples`` an
array; ``deprecated``, ``readOnly``, ``writeOnly`` booleans; ``properties``
an object of schemas; ``additionalProperties`` and ``items`` a schema
(``items`` may also be an array before 2020-12; a schema is taken here).
"""

from __future__ import annotations

from typing import Any

#: The seven simple types every dialect names.
_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
#: Dialects (``$schema``) whose metaschemas agree on the keywords below (and
#: in which they validate alike: ``schemas.simple_oracle``); the forms
#: without "#" name the same metaschema for jsonschema.
DIALECTS = frozenset(
    {
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-04/schema",
        "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    }
)
_STRINGS = frozenset({"title", "description", "$comment", "format"})
_BOOLEANS = frozenset({"deprecated", "readOnly", "writeOnly"})
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})
_NUMBERS = frozenset({"minimum", "maximum"})
#: Nested schemas deeper than this are left to jsonschema.
_MAX_DEPTH = 16


def certainly_valid(schema: Any) -> bool:
    """True when ``schema`` is valid in its dialect (draft 4 to 2020-12) by the rules above.

    False: not known here (jsonschema decides). Bounded by ``_MAX_DEPTH``.
    """
    if type(schema) is not dict:
        return False
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in DIALECTS:
        return False
    # jsonschema reads a "$schema" it does not know as 2020-12; draft 4 alone
    # wants "required" and "enum" non-empty.
    draft4 = type(dialect) is str and "/draft-04/" in dialect
    return _node(schema, 0, draft4, top=True)


def _node(node: Any, depth: int, draft4: bool, top: bool = False) -> bool:
    if type(node) is not dict or depth > _MAX_DEPTH:
        return False
    for key, value in node.items():
        if key in _STRINGS:
            if type(value) is not str:
                return False
        elif key in _COUNTS:
            if type(value) is not int or value < 0:
                return False
        elif key in _NUMBERS:
            if type(value) is not int and type(value) is not float:
                return False
        elif key in _BOOLEANS:
            if type(value) is not bool:
                return False
        elif key == "type":
            if not _type(value):
                return False
        elif key == "properties":
            if type(value) is not dict:
                return False
            for sub in value.values():
                if not _node(sub, depth + 1, draft4):
                    return False
        elif key == "required":
            if not _unique_strings(value, draft4):
                return False
        elif key == "enum":
            if not _unique_strings(value, True):
                return False
        elif key == "additionalProperties":
            if type(value) is not bool and not _node(value, depth + 1, draft4):
                return False
        elif key == "items":
            if not _node(value, depth + 1, draft4):
                return False
        elif key == "examples":
            if type(value) is not list:
                return False
        elif key == "$schema":
            if not top:  # only the root names its dialect here
                return False
        elif key != "default":
            return False
    return True


def _type(value: Any) -> bool:
    if type(value) is str:
        return value in _TYPES
    return (
        type(value) is list
        and bool(value)
        and all(type(t) is str and t in _TYPES for t in value)
        and len(set(value)) == len(value)
    )


def _unique_strings(value: Any, non_empty: bool) -> bool:
    """An array of unique strings (non-empty when asked): unique by code points, as JSON is."""
    if type(value) is not list or (non_empty and not value):
        return False
    return all(type(v) is str for v in value) and len(set(value)) == len(value)
