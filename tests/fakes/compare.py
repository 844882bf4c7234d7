"""Compare request bodies "in meaning": what the service would parse, not how the JSON was spelled.

Proto3 JSON has no presence for scalars, so ``false``, ``0``, ``""`` and an absent field mean the same; the
service also reads ``"2"`` and ``2`` alike for int64. :func:`normalize_job_body` maps a body to one canonical
spelling so that ``normalize_job_body(ours) == normalize_job_body(gclouds)`` is the parity check.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from tests.fakes.schema_check import discovery_document

HASH_PLACEHOLDER = "<sha256>"
_HASH_FOLDER = re.compile(r"/[0-9a-f]{64}/")
_INT64 = {"int64", "uint64"}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _is_default(value: Any) -> bool:
    return (
        value is None
        or value is False
        or value == ""
        or value == []
        or value == {}
        or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0)
    )


def _duration(text: str) -> str:
    try:
        seconds = Decimal(text[:-1])
    except InvalidOperation:
        return text
    normal = format(seconds.normalize(), "f")
    return f"{normal}s"


class _Normalizer:
    def __init__(self, document: str, hash_placeholder: bool):
        self.schemas: dict[str, Any] = discovery_document(document)["schemas"]
        self.hash_placeholder = hash_placeholder

    def message(self, ref: str | None, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        props: dict[str, Any] = self.schemas[ref].get("properties", {}) if ref else {}
        by_snake = {_snake(key): key for key in props}
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key) if key in props else by_snake.get(key, str(key))
            prop = props.get(name)
            normal = self.field(prop, item) if prop is not None else item
            if name == "packageUris" and self.hash_placeholder and isinstance(normal, list):
                normal = [
                    _HASH_FOLDER.sub(f"/{HASH_PLACEHOLDER}/", u) if isinstance(u, str) else u for u in normal
                ]
            if not _is_default(normal):
                out[name] = normal
        return out

    def field(self, prop: dict[str, Any], value: Any) -> Any:
        if "$ref" in prop:
            return self.message(prop["$ref"], value)
        kind, fmt = prop.get("type"), prop.get("format")
        if kind == "array" and isinstance(value, list):
            return [self.field(prop.get("items", {}), item) for item in value]
        if kind == "object" and isinstance(value, dict):
            extra = prop.get("additionalProperties")
            return {k: self.field(extra, v) for k, v in value.items()} if extra else value
        try:
            if fmt in _INT64 and isinstance(value, (int, str)) and not isinstance(value, bool):
                number = int(value)
                return str(number) if number else None
            if kind == "integer" and isinstance(value, (int, str)) and not isinstance(value, bool):
                return int(value)
            if kind == "number" and isinstance(value, (int, float, str)) and not isinstance(value, bool):
                return float(value)
        except ValueError:
            return value
        if fmt == "google-duration" and isinstance(value, str) and value.endswith("s"):
            return _duration(value)
        if "enum" in prop and isinstance(value, str) and value.endswith("_UNSPECIFIED"):
            return None  # the enum's zero value means "not set"
        return value


def normalize_body(body: Any, schema: str, document: str, *, hash_placeholder: bool = True) -> Any:
    """Canonical form of ``body`` as a ``schema`` message of discovery ``document`` (see module doc).

    Keys become camelCase; int64 become strings, int32 ints, doubles floats; durations lose trailing zeros;
    proto3 defaults (false, 0, "", [], {}, *_UNSPECIFIED) are dropped from messages (never from lists or map
    values); with ``hash_placeholder`` the sha256 folder in ``packageUris`` becomes ``<sha256>``.
    Unknown keys are kept as they are, so a stray field still makes bodies differ.
    """
    return _Normalizer(document, hash_placeholder).message(schema, body)


def normalize_job_body(body: dict[str, Any], *, hash_placeholder: bool = True) -> dict[str, Any]:
    """Canonical form of an ml v1 Job body (``{jobId, labels, trainingInput}``) for parity comparisons."""
    result: dict[str, Any] = normalize_body(
        body, "GoogleCloudMlV1__Job", "ml.v1", hash_placeholder=hash_placeholder
    )
    return result


def normalize_custom_job_body(body: dict[str, Any], *, hash_placeholder: bool = True) -> dict[str, Any]:
    """Canonical form of an aiplatform v1 CustomJob body for comparisons."""
    result: dict[str, Any] = normalize_body(
        body, "GoogleCloudAiplatformV1CustomJob", "aiplatform.v1", hash_placeholder=hash_placeholder
    )
    return result
