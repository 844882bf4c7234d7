""" "Is this the job we sent?" (exactly-once creates on ml v1 and Vertex AI): every field we sent is there with
the same value, and every other field is output-only (https://google.aip.dev/203) or in :data:`SERVICE_FILLED`."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

ML_JOB = "GoogleCloudMlV1__Job"
CUSTOM_JOB = "GoogleCloudAiplatformV1CustomJob"
TUNING_JOB = "GoogleCloudAiplatformV1HyperparameterTuningJob"
#: The discovery document each resource schema is in.
SCHEMA_API = {ML_JOB: "ml", CUSTOM_JOB: "aiplatform", TUNING_JOB: "aiplatform"}

#: Paths (``.``-joined, ``[]`` for list items) the service fills in without the discovery document calling them
#: output-only. ml v1: https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs;
#: Vertex AI: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs
#: (both read 2026-11-24).
SERVICE_FILLED: dict[str, frozenset[str]] = {
    ML_JOB: frozenset(
        {
            "etag",
            "state",
            "trainingOutput",
            "predictionOutput",
            "trainingInput.scheduling.maxRunningTime",
            "trainingInput.scheduling.maxWaitTime",
            "trainingInput.scheduling.priority",
        }
    ),
    CUSTOM_JOB: frozenset(
        {
            "jobSpec.workerPoolSpecs[].diskSpec.bootDiskType",
            "jobSpec.workerPoolSpecs[].diskSpec.bootDiskSizeGb",
        }
    ),
}

_MAX_DEPTH = 12  # discovery schemas are recursive; job resources are far shallower


@functools.lru_cache(maxsize=8)
def output_only_paths(api: str, schema: str) -> frozenset[str]:
    """Paths of resource ``schema`` that ``api``'s static discovery document describes as "Output only."."""
    from mlsubmit.services.rest import document

    schemas: Mapping[str, Any] = document(api)["schemas"]
    found: set[str] = set()

    def walk(name: str, prefix: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        for key, prop in schemas.get(name, {}).get("properties", {}).items():
            path = prefix + key
            if str(prop.get("description", "")).lstrip().startswith("Output only") or prop.get("readOnly"):
                found.add(path)
                continue
            if "$ref" in prop:
                walk(prop["$ref"], path + ".", depth + 1)
            elif "$ref" in prop.get("items", {}):
                walk(prop["items"]["$ref"], path + "[].", depth + 1)

    walk(schema, "", 0)
    return frozenset(found)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _empty(value: Any) -> bool:
    """A value proto3 JSON leaves out (int64 zero may come back as the string "0")."""
    if isinstance(value, int | float):  # False too
        return value == 0
    return value is None or value in ("", "0", [], {})


def same_job(sent: Any, found: Any, ignored: frozenset[str], path: str = "") -> bool:
    """True when ``found`` is exactly ``sent`` plus fields at ``ignored`` paths (module docstring)."""
    if isinstance(sent, Mapping) or isinstance(found, Mapping):
        mine = {k: v for k, v in (sent or {}).items() if not _empty(v)} if isinstance(sent, Mapping) else None
        if mine is None or not isinstance(found, Mapping | type(None)):
            return False
        theirs = {k: v for k, v in (found or {}).items() if not _empty(v)}
        for key, value in mine.items():
            if key not in theirs or not same_job(value, theirs[key], ignored, _join(path, key)):
                return False
        return all(_filled(theirs[key], ignored, _join(path, key)) for key in theirs.keys() - mine.keys())
    if isinstance(sent, list) or isinstance(found, list):
        if not isinstance(sent, list) or not isinstance(found, list) or len(sent) != len(found):
            return False
        return all(same_job(a, b, ignored, f"{path}[]") for a, b in zip(sent, found, strict=True))
    if (_empty(sent) and _empty(found)) or sent == found:
        return True
    if isinstance(sent, bool) or isinstance(found, bool):
        return False
    return found is not None and sent is not None and str(sent) == str(found)  # int64 as a number or a string


def _filled(value: Any, ignored: frozenset[str], path: str) -> bool:
    """Whether a field we did not send is one the service fills in (all of it, for an object)."""
    if path in ignored:
        return True
    if isinstance(value, Mapping):
        return all(_filled(v, ignored, _join(path, k)) for k, v in value.items() if not _empty(v))
    return _empty(value)


def is_same_job(schema: str, sent: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """Whether ``found`` (a ``schema`` resource as the service returned it) is the one we sent (module docstring)."""
    ignored = output_only_paths(SCHEMA_API[schema], schema) | SERVICE_FILLED.get(schema, frozenset())
    return same_job(json.loads(json.dumps(sent)), found, ignored)
