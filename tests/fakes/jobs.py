"""Valid ml v1 Job bodies to translate, and the checks a translated body must pass: the aiplatform v1
discovery schema for a Vertex AI CustomJob, and for a TFJob the Kubeflow CRD, Kubernetes names and a YAML
round trip."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlsubmit.cli.export import render
from mlsubmit.targets.tfjob import MAX_NAME
from tests.fakes.schema_check import check_body


def job(job_id: str = "my_job", labels: dict[str, str] | None = None, **ti: Any) -> dict[str, Any]:
    """A valid single-machine package job, with ``ti`` replacing or adding trainingInput fields."""
    training_input: dict[str, Any] = {
        "region": "us-central1",
        "runtimeVersion": "2.11",
        "pythonModule": "trainer.task",
        "packageUris": ["gs://bkt/pkg/trainer-0.0.0.tar.gz"],
    }
    training_input.update(ti)
    body: dict[str, Any] = {"jobId": job_id, "trainingInput": training_input}
    if labels is not None:
        body["labels"] = labels
    return body


def distributed(**ti: Any) -> dict[str, Any]:
    return job(
        scaleTier="CUSTOM",
        masterType="n1-standard-8",
        masterConfig={
            "acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "2"},
            "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
        },
        workerType="n1-standard-4",
        workerCount="3",
        workerConfig={"diskConfig": {"bootDiskSizeGb": 150}},
        parameterServerType="n1-highmem-8",
        parameterServerCount="2",
        jobDir="gs://bkt/out",
        args=["--epochs", "3"],
        scheduling={"maxRunningTime": "3600s"},
        **ti,
    )


def assert_valid_for_vertex(body: dict[str, Any]) -> None:
    errors, _ = check_body("aiplatform.v1", "GoogleCloudAiplatformV1CustomJob", body, "custom_job")
    assert errors == []


# The Kubeflow TFJob CRD (kubeflow/training-operator, manifests/base/crds/kubeflow.org_tfjobs.yaml) sits beside
# the repository in ../shared/specs/; MLSUBMIT_TFJOB_CRD names another copy.
CRD = Path(
    os.environ.get("MLSUBMIT_TFJOB_CRD")
    or Path(__file__).resolve().parents[2].parent / "shared" / "specs" / "kubeflow.org_tfjobs.yaml"
)


DNS_1123_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def require_crd() -> None:
    """The CRD check cannot switch itself off unseen: without the file a test fails under CI (``CI=true``)
    and is skipped, with the reason in pytest's summary, elsewhere."""
    if CRD.is_file():
        return
    message = f"the TFJob CRD is not at {CRD} (set MLSUBMIT_TFJOB_CRD to its path)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@functools.cache
def crd_validator() -> Any:
    """The CRD's openAPIV3Schema (v1) as a validator; fails or skips the test without the file (require_crd)."""
    import jsonschema

    require_crd()
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


def assert_valid_tfjob(manifest: dict[str, Any]) -> None:
    """Kubernetes names, YAML round trip, then the CRD's openAPIV3Schema (:func:`require_crd`)."""
    name = manifest["metadata"]["name"]
    assert DNS_1123_LABEL.match(name) and len(name) <= MAX_NAME
    for replica_type, spec in manifest["spec"]["tfReplicaSpecs"].items():
        # the operator names pods and services NAME-TYPE-INDEX: a DNS-1035 label of at most 63 characters
        service = f"{name}-{replica_type.lower()}-{spec['replicas'] - 1}"
        assert DNS_1123_LABEL.match(service) and len(service) <= 63
    assert yaml.safe_load(render(manifest, "yaml")) == manifest
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in crd_validator().iter_errors(manifest)]
    assert errors == []
