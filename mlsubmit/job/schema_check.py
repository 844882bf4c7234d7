"""A small JSON Schema (Draft 2020-12) validator for the keywords schemas/job.schema.json uses, with jsonschema's
semantics (importing jsonschema costs ~60 ms, more than the rest of a dry run). tests/unit/job/test_schema_check.py
demands the same errors from both and fails on a keyword this module does not know."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# Keywords that only annotate; everything else in a schema must be implemented below (the tests hold it so).
ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})

Path = tuple[str | int, ...]


@dataclass
class SchemaError:
    """One violation, shaped like a jsonschema ValidationError (the attributes jobfile.py reads)."""

    validator: str
    message: str
    instance: Any
    schema: Mapping[str, Any]
    absolute_path: Path = ()
    schema_path: tuple[str, ...] = field(default_factory=tuple)


@lru_cache(maxsize=64)
def _regex(pattern: str) -> re.Pattern[str]:
    # JSON Schema patterns are ECMA-262 regexes, where a final `$` is the end of the value. Python's `$` also
    # matches before a trailing newline, which would let "us-central1\n" through; `\Z` is the end only.
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


_TYPES: dict[str, type] = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is_type(value: Any, kind: str) -> bool:
    if kind in _TYPES:
        return isinstance(value, _TYPES[kind])
    if kind == "number":
        return _is_number(value)
    if kind == "integer":
        return _is_number(value) and (isinstance(value, int) or value.is_integer())
    raise ValueError(f"unknown JSON Schema type {kind!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``1`` and ``True`` differ (Python's ``==`` says they are equal)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


# keyword -> whether ``value`` fails it with argument ``arg`` (each applies only to its JSON type)
_FAILS: dict[str, Callable[[Any, Any], bool]] = {
    "type": lambda v, a: not any(_is_type(v, k) for k in (a if isinstance(a, list) else [a])),
    "enum": lambda v, a: not any(_same(v, choice) for choice in a),
    "pattern": lambda v, a: isinstance(v, str) and not _regex(a).search(v),
    "minimum": lambda v, a: _is_number(v) and v < a,
    "maximum": lambda v, a: _is_number(v) and v > a,
    "minLength": lambda v, a: isinstance(v, str) and len(v) < a,
    "maxLength": lambda v, a: isinstance(v, str) and len(v) > a,
    "minItems": lambda v, a: isinstance(v, list) and len(v) < a,
    "maxItems": lambda v, a: isinstance(v, list) and len(v) > a,
}


class Validator:
    """Validates instances against one root schema (with ``$ref`` to ``#/$defs/NAME``)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def iter_errors(self, instance: Any) -> Iterator[SchemaError]:
        """Every violation in ``instance``, in schema keyword order, like jsonschema's iter_errors."""
        yield from self._check(instance, self.root, (), ())

    def _check(
        self, value: Any, schema: Mapping[str, Any], path: Path, spath: tuple[str, ...]
    ) -> Iterator[SchemaError]:
        def error(keyword: str, message: str) -> SchemaError:
            return SchemaError(keyword, message, value, schema, path, (*spath, keyword))

        obj: dict[str, Any] = value if isinstance(value, dict) else {}
        for keyword, arg in schema.items():
            if keyword in ANNOTATIONS:
                continue
            if keyword == "$ref":
                if not arg.startswith("#/$defs/"):
                    raise ValueError(f"only $ref to #/$defs/NAME are supported, not {arg!r}")
                yield from self._check(value, self.root["$defs"][arg[8:]], path, (*spath, "$ref"))
            elif keyword in _FAILS:
                if _FAILS[keyword](value, arg):
                    yield error(keyword, f"{value!r} fails {keyword} {arg!r}")
            elif keyword == "items":
                for i, item in enumerate(value if isinstance(value, list) else []):
                    yield from self._check(item, arg, (*path, i), (*spath, "items"))
            elif keyword == "required":
                for name in arg if isinstance(value, dict) else []:
                    if name not in obj:
                        yield error("required", f"{name!r} is a required property")
            elif keyword == "properties":
                for name in (n for n in arg if n in obj):
                    yield from self._check(obj[name], arg[name], (*path, name), (*spath, "properties", name))
            elif keyword == "additionalProperties":
                extra = [k for k in obj if k not in schema.get("properties", {})]
                if arg is False and extra:
                    yield error("additionalProperties", f"Additional properties are not allowed ({extra!r})")
                elif isinstance(arg, dict):
                    for name in extra:
                        yield from self._check(
                            obj[name], arg, (*path, name), (*spath, "additionalProperties")
                        )
            elif keyword == "propertyNames":
                for name in obj:
                    yield from self._check(name, arg, path, (*spath, "propertyNames"))
            else:
                raise ValueError(f"schema keyword {keyword!r} is not supported by mlsubmit.job.schema_check")
