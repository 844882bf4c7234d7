"""Check a JSON request body against a discovery document schema the way Google's JSON front end does.

The service parses the body into a proto message: unknown names, wrong JSON types, bad enum values, malformed
int64 strings and durations are 400 INVALID_ARGUMENT with messages such as::

    Invalid JSON payload received. Unknown name "x" at 'job.training_input': Cannot find field.

Like the real parser it accepts the proto (snake_case) spelling of a field as well as the JSON (camelCase) one,
numbers or strings for int64 fields, ``null`` for "not set"; output-only fields (``readOnly`` or described
"Output only.") are accepted and dropped. :func:`check_body` returns every problem plus the body normalised to
camelCase with output-only fields and nulls removed.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import os
import re
from typing import Any

_DURATION = re.compile(r"^-?\d+(\.\d{1,9})?s$")
_INT = re.compile(r"^-?\d+$")
_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


@functools.cache
def discovery_document(name: str) -> dict[str, Any]:
    """Load a discovery document shipped with google-api-python-client, e.g. ``"ml.v1"``."""
    import googleapiclient

    path = os.path.join(
        os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents", f"{name}.json"
    )
    with open(path, encoding="utf-8") as handle:
        document: dict[str, Any] = json.load(handle)
    return document


def discovery_json(name: str, root_url: str | None = None) -> str:
    """The discovery document as text, for ``googleapiclient.discovery.build_from_document``.

    ``root_url`` (e.g. ``server.url``) replaces the document's root. Needed for media uploads: with
    ``client_options={"api_endpoint": "http://..."}`` googleapiclient keeps the document's ``https`` scheme
    for ``/upload/`` URLs, so uploads to a plain-HTTP loopback server fail with an SSL error.
    """
    document = discovery_document(name)
    if root_url is not None:
        document = {**document, "rootUrl": root_url, "baseUrl": root_url + document["servicePath"]}
    return json.dumps(document)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _output_only(prop: dict[str, Any]) -> bool:
    return bool(prop.get("readOnly")) or str(prop.get("description", "")).startswith("Output only.")


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else json.dumps(value)[:80]


class _Checker:
    def __init__(self, schemas: dict[str, Any]):
        self.schemas = schemas
        self.errors: list[tuple[str, str]] = []

    def invalid(self, where: str, what: str, value: Any) -> None:
        self.errors.append((where, f"Invalid value at '{where}' ({what}), {_show(value)}"))

    def message(self, ref: str, value: Any, where: str) -> Any:
        schema = self.schemas[ref]
        if not isinstance(value, dict):
            self.invalid(where, f"type.googleapis.com/{ref}", value)
            return None
        props: dict[str, Any] = schema.get("properties", {})
        by_snake = {_snake(key): key for key in props}
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = key if key in props else by_snake.get(key)
            if name is None:
                text = f"Invalid JSON payload received. Unknown name {json.dumps(key)} at '{where}': Cannot find field."
                self.errors.append((where, text))
                continue
            prop = props[name]
            if item is None or _output_only(prop):
                continue
            checked = self.value(prop, item, f"{where}.{_snake(name)}")
            if checked is not None:
                out[name] = checked
        return out

    def value(self, prop: dict[str, Any], item: Any, where: str) -> Any:
        if "$ref" in prop:
            return self.message(prop["$ref"], item, where)
        kind = prop.get("type")
        if kind == "any":
            return item
        if kind == "array":
            if not isinstance(item, list):
                self.errors.append((where, f"Invalid value at '{where}': expected a list, got {_show(item)}"))
                return None
            return [self.value(prop["items"], elem, f"{where}[{i}]") for i, elem in enumerate(item)]
        if kind == "object":
            if not isinstance(item, dict):
                self.invalid(where, "TYPE_MESSAGE", item)
                return None
            extra = prop.get("additionalProperties")
            if extra is None:  # google.protobuf.Struct-like free-form object
                return item
            return {key: self.value(extra, val, f"{where}[{json.dumps(key)}]") for key, val in item.items()}
        return self.scalar(prop, kind, item, where)

    def scalar(self, prop: dict[str, Any], kind: Any, item: Any, where: str) -> Any:
        fmt = prop.get("format")
        if kind == "boolean":
            if not isinstance(item, bool):
                self.invalid(where, "TYPE_BOOL", item)
            return item
        if kind == "integer" or (kind == "string" and fmt in _INT_RANGES):
            return self.integer(fmt or "int32", item, where)
        if kind == "number":
            ok = (isinstance(item, (int, float)) and not isinstance(item, bool)) or (
                isinstance(item, str) and (item in ("NaN", "Infinity", "-Infinity") or _is_float(item))
            )
            if not ok:
                self.invalid(where, "TYPE_DOUBLE", item)
            return item
        if not isinstance(item, str):
            self.invalid(where, "TYPE_STRING", item)
            return item
        if "enum" in prop and item not in prop["enum"]:
            self.invalid(where, "TYPE_ENUM", item)
        elif fmt == "google-duration" and not _DURATION.match(item):
            self.errors.append(
                (
                    where,
                    f"Invalid value at '{where}' (type.googleapis.com/google.protobuf.Duration), "
                    f"Field '{where.rsplit('.', 1)[-1]}', Illegal duration format; duration must end "
                    f"with 's'",
                )
            )
        elif fmt == "byte" and not _is_base64(item):
            self.invalid(where, "TYPE_BYTES", item)
        return item

    def integer(self, fmt: str, item: Any, where: str) -> Any:
        number: int | None = None
        if isinstance(item, int) and not isinstance(item, bool):
            number = item
        elif (isinstance(item, float) and item.is_integer()) or (
            isinstance(item, str) and _INT.match(item.strip())
        ):
            number = int(item)
        low, high = _INT_RANGES.get(fmt, _INT_RANGES["int64"])
        if number is None or not low <= number <= high:
            self.invalid(where, f"TYPE_{fmt.upper()}", item)
            return item
        # The service answers int64 as JSON strings, int32 as numbers.
        return str(number) if fmt in ("int64", "uint64") else number


def _is_float(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _is_base64(text: str) -> bool:
    try:
        altchars = b"-_" if ("-" in text or "_" in text) else None
        base64.b64decode(text + "=" * (-len(text) % 4), altchars=altchars, validate=True)
    except ValueError:
        return False
    return True


def check_body(document: str, schema: str, body: Any, root: str) -> tuple[list[tuple[str, str]], Any]:
    """Check ``body`` against ``schema`` of discovery document ``document`` (e.g. ``"ml.v1"``).

    ``root`` is the request field holding the body (``job``, ``custom_job``); it prefixes every path.
    Returns ``(errors, normalised)`` where each error is ``(field path, message)``.
    """
    checker = _Checker(discovery_document(document)["schemas"])
    normalised = checker.message(schema, body, root)
    return checker.errors, normalised


def bad_request(errors: list[tuple[str, str]]) -> dict[str, Any]:
    """Google's 400 body for a list of field errors: one message per line plus BadRequest field violations."""
    violations = [{"field": where, "description": text} for where, text in errors]
    return {
        "error": {
            "code": 400,
            "message": "\n".join(text for _, text in errors),
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}
            ],
        }
    }
