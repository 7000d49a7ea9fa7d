"""Validating tool arguments and results against the schemas a server advertises.

jsonschema is the reference: it checks that a schema is valid for its dialect
(TOOL-INPUTSCHEMA-VALID) and explains why an instance fails. It is also slow,
about 50 µs for a small object, which matters when every ``tools/call`` of a
million-message trace is validated. So each distinct schema is compiled once
more with fastjsonschema (about 1.5 µs per call) and used as a fast *valid*
oracle: an instance it accepts is accepted; one it rejects is re-checked by
jsonschema, which has the final word and writes the message.

Safety: servers are untrusted. Schemas with non-local ``$ref`` never reach
fastjsonschema (it would fetch them over the network, which the 2026-07-28
spec forbids a validator to do: SCHEMA-REF-NETWORK), nor do schemas using
2020-12 keywords it does not implement, nor very large ones; jsonschema
alone handles those, and it never fetches remote references either.

Start-up: a plain schema that ``schema_valid.certainly_valid`` vouches for is
not given to jsonschema's ``check_schema``; fastjsonschema's function is built
when the simple oracle first cannot accept an instance alone, and jsonschema's
validator when that function rejects one. A session whose calls are all
valid never imports jsonschema (about 50 ms a process).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from mcpsniff.core.schema_explain import (
    ANNOTATIONS,
    OBJECT_KEYWORDS,
    UNSURE,
    VALUE_KEYWORDS,
    verdict,
)
from mcpsniff.core.schema_valid import DIALECTS, certainly_valid

#: Keywords fastjsonschema (draft 4/6/7) does not implement; jsonschema handles them.
_MODERN_KEYWORDS = frozenset(
    {
        "prefixItems",
        "unevaluatedProperties",
        "unevaluatedItems",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "dependentSchemas",
        "dependentRequired",
        "$anchor",
        "contentSchema",
    }
)
#: Schemas larger than this (serialized) are validated by jsonschema only.
FAST_SCHEMA_LIMIT = 64 * 1024
#: Distinct schemas remembered (tools/list is usually re-sent with the same schemas).
CACHE_SIZE = 1024


@dataclass(slots=True)
class CompiledSchema:
    """A schema ready to validate instances, or the reason it is not a valid schema."""

    #: jsonschema's validator (``_PENDING`` while ``pending`` waits), None: no verdict.
    reference: Any = None
    #: fastjsonschema's function (``_PENDING`` likewise), None: none for this schema.
    fast: Any = None
    error: str | None = None
    #: ``simple_oracle``'s check for the commonest tool schema, or None.
    simple: Callable[[Any], bool] | None = None
    #: A valid schema whose validators are not built yet, and its serialized size.
    pending: dict[str, Any] | None = None
    size: int = 0

    def first_error(self, instance: Any) -> str | None:
        """None when ``instance`` is valid, else a one-line explanation."""
        if self.reference is None:
            return None
        if self.simple is not None and self.simple(instance):
            return None
        return self.error_beyond_simple(instance)

    def error_beyond_simple(self, instance: Any) -> str | None:
        """``first_error`` for a caller that asked ``simple`` already (and got False).

        The tools/call rule asks the oracle itself, so that the usual call costs
        one function call; the rest comes here without asking it a second time.
        """
        if self.reference is None:
            return None
        if self.reference is _PENDING:
            # A plain schema, not built yet: most invalid calls break it in one
            # place, which ``schema_explain`` words as jsonschema would, without
            # importing jsonschema (nor fastjsonschema) in this process.
            certain = verdict(self.pending, instance)
            if certain is not UNSURE:
                return None if certain is None else _line(*certain)
        fast = self.fast
        if fast is _PENDING:
            fast = self.fast = _fast(self.pending, self.size)  # type: ignore[arg-type]
        if fast is not None:
            try:
                fast(instance)
                return None
            except Exception:
                pass
        if self.reference is _PENDING:
            # Only now, to explain an instance fastjsonschema rejected (or judge one
            # it could not): the import of jsonschema is the costly part.
            self._build_reference()
            if self.reference is None:
                return None
        try:
            if self.reference.is_valid(instance):
                return None
            from jsonschema.exceptions import best_match

            error = best_match(self.reference.iter_errors(instance))
        except Exception:  # an unresolvable $ref, a hostile pattern: no verdict
            return None
        if error is None:
            return None
        return _line(tuple(error.absolute_path), error.message)

    def _build_reference(self) -> None:
        """jsonschema's validator of a ``pending`` schema (``certainly_valid`` vouched for it)."""
        schema, self.pending = self.pending, None
        try:
            self.reference = _reference_class(schema)(schema)  # type: ignore[arg-type]
        except Exception:  # as ``_compile``: a schema must not stop analysis
            self.reference = None


def _line(path: tuple[str | int, ...], message: str) -> str:
    """An error as ``first_error`` words it: where in the instance, then jsonschema's message."""
    where = "/".join(str(p) for p in path)
    return f"{'at /' + where + ': ' if where else ''}{message}"


#: A validator not built yet. As a ``reference`` it is not None, since the
#: schema is valid (a rule asks ``reference is not None`` for that).
_PENDING = object()


_cache: OrderedDict[bytes, CompiledSchema] = OrderedDict()


def compile_schema(schema: Any) -> CompiledSchema:
    """Compile ``schema`` (cached by content); never raises."""
    if not isinstance(schema, dict):
        return CompiledSchema(error="not an object")
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        key = repr(schema).encode()
    cached = _cache.get(key)
    if cached is not None:
        _cache.move_to_end(key)
        return cached
    compiled = _compile(schema, len(key))
    _cache[key] = compiled
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return compiled


def _compile(schema: dict[str, Any], size: int) -> CompiledSchema:
    simple = simple_oracle(schema)
    if simple is not None and certainly_valid(schema):
        return CompiledSchema(
            reference=_PENDING, fast=_PENDING, simple=simple, pending=schema, size=size
        )
    # Imported on first use: jsonschema takes a third of mcpsniff's start-up
    # time, and most sessions (and every `mcpsniff stdio` start) need it late.
    import jsonschema

    cls = _reference_class(schema)
    try:
        cls.check_schema(schema)
        reference = cls(schema)
    except jsonschema.SchemaError as exc:
        return CompiledSchema(error=exc.message)
    except Exception as exc:  # a hostile schema must not stop analysis
        return CompiledSchema(error=repr(exc))
    return CompiledSchema(reference=reference, fast=_fast(schema, size), simple=simple)


def _reference_class(schema: dict[str, Any]) -> Any:
    """jsonschema's validator class for ``schema``'s dialect."""
    import jsonschema
    from jsonschema import validators

    # 2025-11-25 made JSON Schema 2020-12 the default dialect when $schema is
    # absent (basic/index.mdx § JSON Schema Usage); earlier versions named
    # none, and 2020-12 accepts the draft-07 schemas SDKs emit.
    return validators.validator_for(schema, default=jsonschema.Draft202012Validator)


#: Keywords that only annotate: no validator looks at them. ``format`` is one
#: here: jsonschema asserts formats only with a format checker and
#: fastjsonschema only with ``use_formats``, and ``_compile`` gives neither.
_ANNOTATIONS = ANNOTATIONS
_OBJECT_KEYS = OBJECT_KEYWORDS
_SIMPLE_OBJECT_KEYS = _ANNOTATIONS | _OBJECT_KEYS | {"type", "$schema"}
#: The Python types of a JSON value of each JSON Schema type, exactly (``type(v) in``):
#: a bool is no integer and no number, and 1.0 counts as an integer only in some
#: drafts, so it is left to the validators.
_SIMPLE_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
#: Dialects in which the keywords above mean the same (draft 4 to 2020-12).
_SIMPLE_DIALECTS = DIALECTS
#: How deep the oracle follows nested objects and array items.
_MAX_DEPTH = 2


def simple_oracle(schema: Any) -> Callable[[Any], bool] | None:
    """A check that accepts only instances every validator accepts, for the commonest schema.

    Most tool input schemas are an object of typed properties, some required,
    maybe closed by ``additionalProperties: false``, with a few plain limits
    (string lengths, number bounds, array sizes and item types), string
    ``enum``s and nested objects of the same kind (``additionalProperties`` a
    bool or such a subschema). For such a schema (annotations, ``format``
    included, and a draft 4 to 2020-12 ``$schema`` allowed) the returned
    function says True when the instance is certainly valid. A property
    whose subschema uses anything else (``anyOf``, ``pattern``, ...) makes it
    defer whenever that property is present. False means "ask the
    validators" (fastjsonschema, then jsonschema, which write the message),
    never "invalid". It costs a fraction of fastjsonschema's generated code,
    which every tools/call runs. None for any other schema.
    """
    if type(schema) is not dict or schema.get("type") != "object":
        return None
    if not schema.keys() <= _SIMPLE_OBJECT_KEYS:
        return None
    if "$schema" in schema and schema["$schema"] not in _SIMPLE_DIALECTS:
        return None
    return _object_check(schema, 0)


def _object_check(schema: dict[str, Any], depth: int) -> Callable[[Any], bool] | None:
    """The check of an object schema's properties, required and additionalProperties."""
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if type(properties) is not dict or type(required) is not list:
        return None
    if any(type(name) is not str for name in required):
        return None
    #: Per property: the exact Python types allowed, a check, or None (defer).
    checks: dict[str, tuple[type, ...] | Callable[[Any], bool] | None] = {
        name: _value_check(sub, depth) for name, sub in properties.items()
    }
    # A property not listed: always allowed (True), never (False), or judged
    # by the additionalProperties subschema's check (None: defer).
    unlisted: bool | tuple[type, ...] | Callable[[Any], bool] | None
    if type(extra) is bool:
        unlisted = extra
    elif type(extra) is dict:
        unlisted = _value_check(extra, depth)
    else:
        return None
    needed = tuple(required)
    if not checks and not needed and type(unlisted) is tuple:
        # A map of typed values (``{"type": "object", "additionalProperties":
        # {"type": "string"}}``): one pass in C over the values' types.
        value_types = frozenset(unlisted)
        if value_types == _STRING:

            def string_map(instance: Any) -> bool:
                return type(instance) is dict and _all_strings(instance.values())

            return string_map

        def typed_map(instance: Any) -> bool:
            return type(instance) is dict and set(map(type, instance.values())) <= value_types

        return typed_map

    if type(unlisted) is bool:
        generated = _generated_check(checks, needed, unlisted)  # type: ignore[arg-type]
        if generated is not None:
            return generated

    def accepts(instance: Any) -> bool:
        if type(instance) is not dict:
            return False
        for name in needed:
            if name not in instance:
                return False
        for name, value in instance.items():
            check = checks.get(name, _UNLISTED)
            if check is _UNLISTED:
                check = unlisted
                if check is True:
                    continue
                if check is False:
                    return False
            if type(check) is tuple:
                if type(value) not in check:
                    return False
            elif check is None or not check(value):  # type: ignore[operator]
                return False
        return True

    return accepts


def _generated_check(
    checks: dict[str, tuple[type, ...] | Callable[[Any], bool] | None],
    needed: tuple[str, ...],
    unlisted: bool,
) -> Callable[[Any], bool] | None:
    """``accepts`` written out for one object schema: a line per property, no loop.

    Every tools/call runs the oracle, and the general loop pays, per property,
    a lookup, a type dispatch and a call. Here each property's test is inlined
    (``_single_type_check``'s expression, a type test, or a call of its check),
    and ``additionalProperties: false`` is one comparison of the names. The
    source holds only the templates: names, bounds and sets from the schema are
    values in the function's namespace (``key0``, ``low1``...), never text.
    None when no property is listed, or more than ``_MAX_GENERATED`` (the
    compile's cost grows with them; the loop handles any number).
    """
    if not checks or len(checks) > _MAX_GENERATED:
        return None
    namespace: dict[str, Any] = {"__builtins__": _GENERATED_BUILTINS, "absent": _UNLISTED}
    lines = ["def accepts(i):", "    if type(i) is not dict:", "        return False"]
    if not unlisted:
        namespace["names"] = frozenset(name for name, check in checks.items() if check is not None)
        lines += ["    if not i.keys() <= names:", "        return False"]
    for index, name in enumerate(dict.fromkeys(needed)):
        if checks.get(name) is None:  # not listed, or deferred: no test below asks for it
            namespace[f"need{index}"] = name
            lines += [f"    if need{index} not in i:", "        return False"]
    for index, (name, check) in enumerate(checks.items()):
        if check is None:
            if unlisted:  # a property it defers: present, the validators judge
                namespace[f"key{index}"] = name
                lines += [f"    if key{index} in i:", "        return False"]
            continue
        suffix = str(index)
        if type(check) is tuple:
            if len(check) == 1:
                test, names = "type(v) is kind{n}", {"kind": check[0]}
            else:
                test, names = "type(v) in kinds{n}", {"kinds": frozenset(check)}
        else:
            test, names = getattr(check, _TEST, None) or ("check{n}(v)", {"check": check})
        namespace.update({f"{key}{suffix}": value for key, value in names.items()})
        namespace[f"key{suffix}"] = name
        missing = "v is absent or " if name in needed else "v is not absent and "
        lines += [
            f"    v = i.get(key{suffix}, absent)",
            f"    if {missing}not ({test.format(n=suffix)}):",
            "        return False",
        ]
    lines.append("    return True")
    exec(compile("\n".join(lines), "<simple_oracle>", "exec"), namespace)
    return namespace["accepts"]  # type: ignore[no-any-return]


_MAX_GENERATED = 64
#: All the generated checks use: nothing else is reachable from their code.
_GENERATED_BUILTINS = {
    "all": all,
    "dict": dict,
    "int": int,
    "len": len,
    "list": list,
    "map": map,
    "set": set,
    "str": str,
    "type": type,
}
#: The attribute of a ``_single_type_check`` function holding its expression.
_TEST = "oracle_test"


_UNLISTED = object()
_SIMPLE_VALUE_KEYS = VALUE_KEYWORDS
_ANY_TYPE = tuple({t for types in _SIMPLE_TYPES.values() for t in types})


def _limit(sub: dict[str, Any], key: str, kinds: tuple[type, ...]) -> Any:
    """``sub[key]`` when absent (None) or of one of ``kinds`` exactly, else ``_UNLISTED``."""
    value = sub.get(key)
    return value if value is None or type(value) in kinds else _UNLISTED


def _value_check(sub: Any, depth: int) -> tuple[type, ...] | Callable[[Any], bool] | None:
    """A property's check: its allowed Python types alone, a function, or None (defer)."""
    if type(sub) is not dict or depth > _MAX_DEPTH:
        return None
    kinds = sub.get("type")
    if not sub.keys() <= _SIMPLE_VALUE_KEYS:
        # A nested object of the oracle's kind ("type": "object" exactly, so the
        # object keywords cannot be skipped by a value of another type).
        if kinds == "object" and sub.keys() <= _ANNOTATIONS | _OBJECT_KEYS | {"type"}:
            return _object_check(sub, depth + 1)
        return None
    if kinds is None:
        allowed = _ANY_TYPE
    elif type(kinds) is str and kinds in _SIMPLE_TYPES:
        allowed = _SIMPLE_TYPES[kinds]
    elif (
        type(kinds) is list and kinds and all(type(k) is str and k in _SIMPLE_TYPES for k in kinds)
    ):
        allowed = tuple({t for k in kinds for t in _SIMPLE_TYPES[k]})
    else:
        return None
    min_len = _limit(sub, "minLength", (int,))
    max_len = _limit(sub, "maxLength", (int,))
    low = _limit(sub, "minimum", (int, float))
    high = _limit(sub, "maximum", (int, float))
    min_items = _limit(sub, "minItems", (int,))
    max_items = _limit(sub, "maxItems", (int,))
    bounds = (min_len, max_len, low, high, min_items, max_items)
    if any(b is _UNLISTED for b in bounds):
        return None
    choices: frozenset[str] | None = None
    if "enum" in sub:
        members = sub["enum"]
        if type(members) is not list:
            return None
        # A string equals only a string, code point for code point (JSON
        # Schema's equality, and Python's): the enum's strings decide a string
        # value; any other value is left to the validators.
        choices = frozenset(m for m in members if type(m) is str)
    items = sub.get("items")
    item_check = None if items is None else _value_check(items, depth + 1)
    if items is not None and item_check is None:
        return None
    if item_check is None and choices is None and all(b is None for b in bounds):
        return allowed
    item_types = frozenset(item_check) if type(item_check) is tuple else None
    single = _single_type_check(allowed, choices, bounds, item_check, item_types)
    if single is not None:
        return single

    def check(value: Any) -> bool:
        kind = type(value)
        if kind not in allowed:
            return False
        if choices is not None and (kind is not str or value not in choices):
            return False
        if kind is str:
            size = len(value)  # code points, as JSON Schema counts
            return (min_len is None or size >= min_len) and (max_len is None or size <= max_len)
        if kind is int or kind is float:
            return (low is None or value >= low) and (high is None or value <= high)
        if kind is list:
            size = len(value)
            if (min_items is not None and size < min_items) or (
                max_items is not None and size > max_items
            ):
                return False
            # The items' types in one pass in C; other item checks in a plain loop
            # (not all() over a generator): arrays are checked on every call.
            if item_types is not None:
                if not set(map(type, value)) <= item_types:
                    return False
            elif item_check is not None:
                for item in value:
                    if not item_check(item):  # type: ignore[operator]
                        return False
        return True

    return check


def _single_type_check(
    allowed: tuple[type, ...],
    choices: frozenset[str] | None,
    bounds: tuple[Any, ...],
    item_check: Any,
    item_types: frozenset[type] | None,
) -> Callable[[Any], bool] | None:
    """``_value_check``'s general check written for one kind of value, or None.

    The expression tests the type, then the limits of that type only (the
    others concern values the type test refuses); Python compares an int with
    a float exactly. A string ``enum`` admits strings only. The function carries
    its expression (``_TEST``) for ``_generated_check`` to inline.
    """
    min_len, max_len, low, high, min_items, max_items = bounds
    names: dict[str, Any] = {}
    if choices is not None or allowed == (str,):
        if str not in allowed:
            return None
        test = "type(v) is str"
        if choices is not None:
            test += " and v in choices{n}"
            names["choices"] = choices
        test += _range("len(v)", min_len, max_len, names)
    elif allowed == (int,) or set(allowed) == {int, float}:
        test = "type(v) is int" if allowed == (int,) else "type(v) in kinds{n}"
        names["kinds"] = frozenset(allowed)
        test += _range("v", low, high, names)
    elif allowed == (list,):
        test = "type(v) is list" + _range("len(v)", min_items, max_items, names)
        if item_types == _STRING:
            test += " and strings{n}(v)"
            names["strings"] = _all_strings
        elif item_types is not None:
            test += " and set(map(type, v)) <= items{n}"
            names["items"] = item_types
        elif item_check is not None:
            test += " and all(map(each{n}, v))"
            names["each"] = item_check
    else:
        return None
    namespace = {"__builtins__": _GENERATED_BUILTINS, **names}
    check = eval(compile("lambda v: " + test.format(n=""), "<simple_oracle>", "eval"), namespace)
    setattr(check, _TEST, (test, names))
    return check  # type: ignore[no-any-return]


def _all_strings(values: Iterable[Any]) -> bool:
    """Whether every item is a string, tested by ``str.join`` in C.

    A third of ``set(map(type, values)) <= {str}``'s instructions (25 paths:
    3.0K against 9.2K). ``join`` also takes a str subclass, which is a string
    to every validator (jsonschema and fastjsonschema test ``isinstance``).
    """
    try:
        "".join(values)
    except TypeError:
        return False
    return True


_STRING = frozenset({str})


def _range(expr: str, low: Any, high: Any, names: dict[str, Any]) -> str:
    """The comparisons of ``expr`` with the bounds present (the names in ``names``)."""
    test = ""
    if low is not None:
        test += f" and low{{n}} <= {expr}"
        names["low"] = low
    if high is not None:
        test += f" and {expr} <= high{{n}}"
        names["high"] = high
    return test


def _fast(schema: dict[str, Any], size: int) -> Callable[[Any], Any] | None:
    if size > FAST_SCHEMA_LIMIT or not _fast_safe(schema):
        return None
    try:
        import fastjsonschema

        return fastjsonschema.compile(  # type: ignore[no-any-return]
            schema, handlers=_NO_REMOTE, use_default=False, use_formats=False
        )
    except Exception:  # unsupported or odd schema: jsonschema alone will do
        return None


def _refuse(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri} is not fetched")


_NO_REMOTE = {scheme: _refuse for scheme in ("http", "https", "file", "ftp", "data", "urn")}


def _fast_safe(node: Any, depth: int = 0) -> bool:
    """Whether fastjsonschema may see this schema: local refs, draft-07 keywords, sane depth."""
    if depth > 64:
        return False
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _MODERN_KEYWORDS:
                return False
            if key == "$ref" and not (isinstance(value, str) and value.startswith("#")):
                return False
            if key in ("$id", "id") and isinstance(value, str) and "://" in value:
                return False
            if not _fast_safe(value, depth + 1):
                return False
        return True
    if isinstance(node, list):
        return all(_fast_safe(item, depth + 1) for item in node)
    return True
