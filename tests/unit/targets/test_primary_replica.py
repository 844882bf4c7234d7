"""One answer to "is the primary `chief` or `master`?" in local train, the TFJob export and Vertex AI.

Table-driven over runtime versions, custom containers and useChiefInTfConfig; the expected column is written out
(the service's rule), so a consumer that asks its own question instead of mlsubmit.job.vocab fails here.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import InvalidJobError
from mlsubmit.job.vocab import primary_task_name
from mlsubmit.local.cluster import plan_cluster
from mlsubmit.local.request import LocalTrainFlags, resolve_request
from mlsubmit.targets.tfjob import to_tfjob
from mlsubmit.targets.vertex import to_custom_job

RUNTIMES = [None, "1.14", "1.15", "2.0", "2.1", "2.2", "2.11", "2.17"]
USE_CHIEF = [None, True, False]
IMAGE = "gcr.io/p/trainer:1"


def expected(runtime: str | None, container: bool, use_chief: bool | None) -> str:
    """The service's rule, written out: containers say master unless useChiefInTfConfig; runtimes < 2.1 master."""
    if container:
        return "chief" if use_chief is True else "master"
    return "master" if runtime in ("1.14", "1.15", "2.0") else "chief"


CASES = [
    pytest.param(runtime, container, use_chief, id=f"{runtime or 'no-runtime'}-{container=}-{use_chief=}")
    for runtime, container, use_chief in itertools.product(RUNTIMES, [False, True], USE_CHIEF)
    if not (container and runtime)  # a container job has no runtime (the rules refuse both)
]


def job(runtime: str | None, container: bool, use_chief: bool | None) -> dict[str, Any]:
    ti: dict[str, Any] = {
        "region": "us-central1",
        "scaleTier": "CUSTOM",
        "masterType": "n1-standard-4",
        "workerType": "n1-standard-4",
        "workerCount": "2",
        "pythonModule": "trainer.task",
    }
    if container:
        ti["masterConfig"] = {"imageUri": IMAGE}
    else:
        ti["packageUris"] = ["gs://b-1/trainer-0.0.0.tar.gz"]
        if runtime:
            ti["runtimeVersion"] = runtime
    if use_chief is not None:
        ti["useChiefInTfConfig"] = use_chief
    return {"jobId": "my_job", "trainingInput": ti}


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("")
    return trainer


@pytest.mark.parametrize(("runtime", "container", "use_chief"), CASES)
def test_local_tfjob_and_vertex_name_the_primary_alike(
    pkg: Path, runtime: str | None, container: bool, use_chief: bool | None
) -> None:
    body = job(runtime, container, use_chief)
    # runtimes without a prebuilt image still translate, with a prebuilt executor image named explicitly
    override = None if container else "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
    want = expected(runtime, container, use_chief)
    assert primary_task_name(body["trainingInput"]) == want

    # local train: the request, and the TF_CONFIG cluster the replicas get
    request = resolve_request(
        LocalTrainFlags(package_path=str(pkg)), copy.deepcopy(body), cwd=pkg.parent, environ={}
    )
    assert request.primary_name == want
    plan = plan_cluster(request)
    assert plan.replicas[-1].role == want and plan.cluster is not None and want in plan.cluster

    # TFJob: the operator names TF_CONFIG's roles after the replica types
    manifest, _ = to_tfjob(copy.deepcopy(body), executor_image_uri=override)
    assert set(manifest["spec"]["tfReplicaSpecs"]) == {want.capitalize(), "Worker"}

    # Vertex AI always says chief: it warns exactly when the legacy service said master
    if use_chief is False:
        with pytest.raises(InvalidJobError, match="useChiefInTfConfig"):
            to_custom_job(copy.deepcopy(body), executor_image_uri=override)
        return
    _custom_job, warnings = to_custom_job(copy.deepcopy(body), executor_image_uri=override)
    warned = any("`chief` in TF_CONFIG" in w for w in warnings)
    assert warned == (want == "master"), warnings
