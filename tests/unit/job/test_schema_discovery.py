"""schemas/job.schema.json matches the ml v1 discovery document field for field.

The service answers 400 "Unknown name" for any field it does not know, so the config schema must describe
exactly the ``GoogleCloudMlV1__TrainingInput`` tree of ml.v1.json (shipped inside google-api-python-client):
the same property names at every level, compatible types, and the same enums (ignoring ``*_UNSPECIFIED``).
``schema_diff`` lists every difference; the real pair must give none, and doctored copies must give some.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from googleapiclient.discovery_cache import get_static_doc
from jsonschema import Draft202012Validator

from mlsubmit.job.jobfile import job_schema
from mlsubmit.job.values import INT64_MAX
from mlsubmit.job.vocab import VERTEX_ONLY_ACCELERATORS

INT32_MAX = 2**31 - 1

SCHEMA_FILE = Path(__file__).resolve().parents[3] / "schemas" / "job.schema.json"
ROOT = "GoogleCloudMlV1__TrainingInput"

# JSON types our schema may accept for a discovery type (int64 travels as a string; we also take a YAML int).
COMPATIBLE: dict[tuple[str, str | None], set[str]] = {
    ("string", None): {"string"},
    ("string", "int64"): {"string", "integer"},
    ("string", "google-duration"): {"string"},
    ("integer", "int32"): {"integer"},
    ("number", "double"): {"number", "integer"},
    ("boolean", None): {"boolean"},
}
# Free-text discovery fields our schema deliberately narrows to an enum (documented values only).
NARROWED_TO_ENUM = {"GoogleCloudMlV1__DiskConfig.bootDiskType"}
# Vertex AI settings the schema adds for --target vertex (ml v1 refuses them in its own rules); they are checked
# against the aiplatform v1 document in tests/unit/targets/test_vertex_rules.py.
VERTEX_FIELDS = {
    "$.trainingInput.scheduling.strategy",
    "$.trainingInput.scheduling.restartJobOnWorkerRestart",
    "$.trainingInput.scheduling.disableRetries",
}
# The accelerators only Vertex AI has: our schema accepts them, ml v1's discovery document does not list them.
VERTEX_ACCELERATORS = set(VERTEX_ONLY_ACCELERATORS)


def discovery() -> dict[str, Any]:
    text = get_static_doc("ml", "v1")
    assert text, "google-api-python-client should ship the ml v1 discovery document"
    doc: dict[str, Any] = json.loads(text)
    return doc


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/$defs/"), ref
        node = root["$defs"][ref.removeprefix("#/$defs/")]
    return node


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type", [])
    return {kind} if isinstance(kind, str) else set(kind)


def _enum(values: list[Any] | None) -> set[Any]:
    return {v for v in values or () if not str(v).endswith("_UNSPECIFIED")}


def schema_diff(
    ours_root: dict[str, Any],
    schemas: dict[str, Any],
    ours: dict[str, Any] | None = None,
    theirs: dict[str, Any] | None = None,
    path: str = "$.trainingInput",
    where: str = ROOT,
) -> list[str]:
    """Every difference between our schema node and the discovery schema node, one line each."""
    ours = _resolve(ours_root, ours if ours is not None else ours_root["$defs"]["TrainingInput"])
    if theirs is None:
        theirs = {"$ref": ROOT}
    if "$ref" in theirs:
        where = theirs["$ref"]
        theirs = schemas[where]
    out: list[str] = []
    kind = theirs.get("type")
    if kind == "object":
        if _types(ours) != {"object"}:
            return [f"{path}: discovery has an object, schema has {sorted(_types(ours))}"]
        if ours.get("additionalProperties") is not False:
            out.append(f"{path}: schema must refuse unknown keys (additionalProperties: false)")
        mine, known = ours.get("properties", {}), theirs.get("properties", {})
        out += [
            f"{path}.{name}: in discovery, missing from the schema" for name in sorted(known.keys() - mine)
        ]
        out += [
            f"{path}.{name}: in the schema, not in discovery"
            for name in sorted(mine.keys() - known)
            if f"{path}.{name}" not in VERTEX_FIELDS
        ]
        for name in sorted(mine.keys() & known):
            out += schema_diff(
                ours_root, schemas, mine[name], known[name], f"{path}.{name}", f"{where}.{name}"
            )
        return out
    if kind == "array":
        if _types(ours) != {"array"}:
            return [f"{path}: discovery has an array, schema has {sorted(_types(ours))}"]
        return schema_diff(ours_root, schemas, ours.get("items", {}), theirs["items"], f"{path}[]", where)
    allowed = COMPATIBLE.get((str(kind), theirs.get("format")))
    if allowed is None:
        return [f"{path}: discovery type {kind}/{theirs.get('format')} is not handled by this test"]
    if not _types(ours) or not _types(ours) <= allowed:
        out.append(
            f"{path}: schema type {sorted(_types(ours))} does not fit discovery {kind}/{theirs.get('format')}"
        )
    # Numbers must fit their API type: an int64 count of 2**70 would pass the type check alone.
    limit = {"int32": INT32_MAX, "int64": INT64_MAX}.get(str(theirs.get("format")))
    if limit is not None and not (isinstance(ours.get("maximum"), int) and ours["maximum"] <= limit):
        out.append(f"{path}: {theirs.get('format')} needs a schema maximum of at most {limit}")
    if "enum" in theirs:
        if _enum(ours.get("enum")) - VERTEX_ACCELERATORS != _enum(theirs["enum"]):
            out.append(
                f"{path}: enum {sorted(_enum(ours.get('enum')))} != discovery {sorted(_enum(theirs['enum']))}"
            )
    elif "enum" in ours and where not in NARROWED_TO_ENUM:
        out.append(f"{path}: schema has an enum, discovery has free text")
    return out


def test_schema_matches_discovery_field_for_field() -> None:
    diff = schema_diff(job_schema(), discovery()["schemas"])
    assert diff == []


def test_every_nested_type_is_compared() -> None:
    """The walk reaches every schema the issue names (so an empty diff means something)."""
    schemas = discovery()["schemas"]
    seen: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        ref = node.get("$ref") or node.get("items", {}).get("$ref")
        if ref:
            seen.add(ref)
            for child in schemas[ref].get("properties", {}).values():
                walk(child)

    walk({"$ref": ROOT})
    names = {
        "TrainingInput",
        "ReplicaConfig",
        "AcceleratorConfig",
        "DiskConfig",
        "Scheduling",
        "HyperparameterSpec",
        "ParameterSpec",
        "EncryptionConfig",
    }
    assert seen == {f"GoogleCloudMlV1__{name}" for name in names}
    assert names <= set(job_schema()["$defs"])


def test_job_level_has_exactly_the_fields_a_config_may_set() -> None:
    schema = job_schema()
    job = discovery()["schemas"]["GoogleCloudMlV1__Job"]
    assert set(schema["properties"]) == {
        "jobId",
        "labels",
        "trainingInput",
        "vertex",
        "maxCost",
        "kubernetes",
    }
    assert set(schema["properties"]) - {"vertex", "maxCost", "kubernetes"} <= set(job["properties"])
    assert schema["additionalProperties"] is False
    assert schema["properties"]["trainingInput"] == {"$ref": "#/$defs/TrainingInput"}
    assert job["properties"]["trainingInput"]["$ref"] == ROOT
    assert _types(schema["properties"]["jobId"]) == {job["properties"]["jobId"]["type"]} == {"string"}
    labels = _resolve(schema, schema["properties"]["labels"])
    assert labels["type"] == job["properties"]["labels"]["type"] == "object"
    assert _types(labels["additionalProperties"]) == {
        job["properties"]["labels"]["additionalProperties"]["type"]
    }


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = job_schema()  # the one the package ships
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    # every $ref points at a definition that exists
    refs = set(_all_refs(schema))
    assert refs and all(ref.removeprefix("#/$defs/") in schema["$defs"] for ref in refs)


def test_packaged_schema_is_the_repository_file() -> None:
    """schemas/job.schema.json (what editors' yaml-language-server comments point at) is the shipped schema."""
    if not SCHEMA_FILE.exists():
        pytest.skip("no source tree beside the tests (testing an installed wheel)")
    assert job_schema() == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def _all_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _all_refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _all_refs(value)]
    return []


# The helper detects differences on either side -------------------------------------------------------------------


def _drop(d: dict[str, Any], *keys: str) -> None:
    for key in keys[:-1]:
        d = d[key]
    del d[keys[-1]]


# fmt: off
DOCTORED = [
    pytest.param("theirs", lambda s: _drop(s, ROOT, "properties", "network"),
                 "$.trainingInput.network: in the schema, not in discovery", id="field-removed-from-discovery"),
    pytest.param("theirs", lambda s: s["GoogleCloudMlV1__AcceleratorConfig"]["properties"].update(
                     memoryGb={"type": "integer", "format": "int32"}),
                 "$.trainingInput.masterConfig.acceleratorConfig.memoryGb: in discovery, missing from the schema",
                 id="nested-field-added-to-discovery"),
    pytest.param("ours", lambda s: s["$defs"]["Scheduling"]["properties"].update(timeout={"type": "string"}),
                 "$.trainingInput.scheduling.timeout: in the schema, not in discovery", id="field-added-to-schema"),
    pytest.param("ours", lambda s: _drop(s, "$defs", "ParameterSpec", "properties", "scaleType"),
                 "$.trainingInput.hyperparameters.params[].scaleType: in discovery, missing from the schema",
                 id="field-removed-from-schema"),
    pytest.param("theirs", lambda s: s["GoogleCloudMlV1__AcceleratorConfig"]["properties"]["type"]["enum"].append(
                     "NVIDIA_H100_80GB"),
                 "$.trainingInput.evaluatorConfig.acceleratorConfig.type: enum", id="enum-value-added-to-discovery"),
    pytest.param("ours", lambda s: s["$defs"]["TrainingInput"]["properties"]["scaleTier"]["enum"].remove("BASIC_TPU"),
                 "$.trainingInput.scaleTier: enum", id="enum-value-removed-from-schema"),
    pytest.param("ours", lambda s: s["$defs"]["Scheduling"]["properties"]["priority"].update(type="string"),
                 "$.trainingInput.scheduling.priority: schema type ['string'] does not fit", id="type-changed"),
    pytest.param("ours", lambda s: s["$defs"]["TrainingInput"]["properties"]["args"]["items"].update(type="number"),
                 "$.trainingInput.args[]: schema type ['number']", id="array-item-type-changed"),
    pytest.param("ours", lambda s: s["$defs"]["ReplicaConfig"].pop("additionalProperties"),
                 "$.trainingInput.workerConfig: schema must refuse unknown keys", id="unknown-keys-allowed"),
    pytest.param("ours", lambda s: s["$defs"]["TrainingInput"]["properties"]["region"].update(enum=["us-central1"]),
                 "$.trainingInput.region: schema has an enum, discovery has free text", id="enum-on-free-text"),
    pytest.param("theirs", lambda s: s[ROOT]["properties"].update(hyperparameters={"type": "string"}),
                 "$.trainingInput.hyperparameters: schema type ['object'] does not fit", id="object-became-string"),
    pytest.param("ours", lambda s: s["$defs"]["int64"].pop("maximum"),
                 "$.trainingInput.evaluatorCount: int64 needs a schema maximum", id="int64-unbounded"),
    pytest.param("ours", lambda s: s["$defs"]["DiskConfig"]["properties"]["bootDiskSizeGb"].update(maximum=2**40),
                 "$.trainingInput.masterConfig.diskConfig.bootDiskSizeGb: int32 needs", id="int32-too-wide"),
]
# fmt: on


@pytest.mark.parametrize(("side", "doctor", "expected"), DOCTORED)
def test_schema_diff_detects_a_doctored_copy(side: str, doctor: Any, expected: str) -> None:
    ours = copy.deepcopy(job_schema())
    schemas = copy.deepcopy(discovery()["schemas"])
    doctor(ours if side == "ours" else schemas)
    diff = schema_diff(ours, schemas)
    assert any(line.startswith(expected) for line in diff), diff
