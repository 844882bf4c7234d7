"""mlsubmit.job.schema_check must agree with jsonschema (the reference implementation) on the job schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from mlsubmit.job.jobfile import job_schema
from mlsubmit.job.schema_check import ANNOTATIONS, Validator

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples" / "configs").glob("*.yaml"))

FULL: dict[str, Any] = {
    "jobId": "job_1",
    "labels": {"team": "ml", "env": "prod"},
    "trainingInput": {
        "scaleTier": "CUSTOM",
        "masterType": "n1-standard-8",
        "masterConfig": {
            "acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "2"},
            "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
            "imageUri": "gcr.io/p/i",
            "containerCommand": ["python"],
            "containerArgs": ["-m", "x"],
            "tpuTfVersion": "2.11",
        },
        "workerType": "n1-standard-8",
        "workerCount": 3,
        "parameterServerType": "n1-standard-4",
        "parameterServerCount": "1",
        "evaluatorType": "n1-standard-4",
        "evaluatorCount": 1,
        "packageUris": ["gs://bkt/a.tar.gz"],
        "pythonModule": "trainer.task",
        "args": ["--epochs", "3"],
        "hyperparameters": {
            "goal": "MAXIMIZE",
            "params": [
                {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 0.1},
                {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["a", "b"]},
                {"parameterName": "b", "type": "DISCRETE", "discreteValues": [1, 2.5]},
            ],
            "maxTrials": 4,
            "maxParallelTrials": 2,
            "maxFailedTrials": 0,
            "hyperparameterMetricTag": "acc",
            "algorithm": "RANDOM_SEARCH",
            "enableTrialEarlyStopping": True,
            "resumePreviousJobId": "old_job",
        },
        "region": "us-central1",
        "jobDir": "gs://bkt/out",
        "runtimeVersion": "2.11",
        "pythonVersion": "3.7",
        "network": "projects/1/global/networks/n",
        "serviceAccount": "a@b.iam.gserviceaccount.com",
        "scheduling": {"maxRunningTime": "3600s", "maxWaitTime": "1800.5s", "priority": 10},
        "encryptionConfig": {"kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/k"},
        "useChiefInTfConfig": True,
        "enableWebAccess": False,
    },
}

# Values that break some keyword somewhere: wrong types, bounds, formats, JSON's bool/int distinction.
BAD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2.0,
    10**20,
    "",
    "x",
    "UPPER",
    "3600",
    "gs:/x",
    [],
    ["x"],
    [1, "a"],
    {},
    {"unknown": 1},
    float("inf"),
]


def leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, (*path, i))


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    if not path:
        return value
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def errors_ours(doc: Any) -> set[tuple[tuple[Any, ...], str]]:
    return {(tuple(e.absolute_path), e.validator) for e in Validator(job_schema()).iter_errors(doc)}


def errors_reference(doc: Any) -> set[tuple[tuple[Any, ...], str]]:
    return {
        (tuple(e.absolute_path), str(e.validator))
        for e in Draft202012Validator(job_schema()).iter_errors(doc)
    }


def corpus() -> Iterator[Any]:
    yield FULL
    for example in EXAMPLES:
        yield yaml.safe_load(example.read_text(encoding="utf-8"))
    for path in leaves(FULL):
        for bad in BAD_VALUES:
            yield replaced(FULL, path, bad)
    for path in leaves(FULL):
        if path and isinstance(path[-1], str):  # an unknown sibling key next to every field
            parent = copy.deepcopy(FULL)
            node = parent
            for part in path[:-1]:
                node = node[part]
            node[path[-1] + "X"] = 1
            yield parent

    yield replaced(FULL, ("trainingInput", "packageUris"), [f"gs://bkt/p{i}.tar.gz" for i in range(101)])
    yield replaced(
        FULL, ("trainingInput", "hyperparameters", "params", 2, "discreteValues"), list(range(1001))
    )
    yield replaced(FULL, ("labels",), {f"k{i}": "v" * 64 for i in range(3)})


# The keywords mlsubmit.job.schema_check implements.
IMPLEMENTED = frozenset(
    {
        "$ref", "type", "enum", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems",
        "maxItems", "items", "required", "properties", "additionalProperties", "propertyNames",
    }
)  # fmt: skip


def unsupported_keywords(schema: Any) -> set[str]:
    """Keywords used anywhere in ``schema`` that mlsubmit.job.schema_check does not implement."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key not in ANNOTATIONS and key not in IMPLEMENTED:
                found.add(key)
            if key in ("properties", "$defs"):
                for sub in value.values():
                    found |= unsupported_keywords(sub)
            elif isinstance(value, dict):
                found |= unsupported_keywords(value)
    return found


def test_the_schema_uses_only_keywords_we_implement() -> None:
    assert unsupported_keywords(job_schema()) == set()


def test_an_unknown_keyword_is_detected() -> None:
    assert unsupported_keywords({"properties": {"a": {"format": "date"}}}) == {"format"}


def test_the_corpus_exercises_many_kinds_of_error() -> None:
    kinds = {kind for doc in corpus() for _path, kind in errors_reference(doc)}
    assert {
        "type",
        "enum",
        "pattern",
        "minimum",
        "maximum",
        "additionalProperties",
        "maxItems",
        "minLength",
    } <= kinds


def test_same_errors_as_jsonschema_over_the_corpus() -> None:
    mismatches = []
    count = 0
    for doc in corpus():
        count += 1
        ours, reference = errors_ours(doc), errors_reference(doc)
        if ours != reference:
            mismatches.append((json.dumps(doc, default=str)[:200], sorted(ours ^ reference, key=str)))
    assert count > 500
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("bad", [{"trainingInput": []}, [], "x", {"labels": {"a": 1, "": "b"}}])
def test_malformed_documents_agree(bad: Any) -> None:
    assert errors_ours(bad) == errors_reference(bad)
