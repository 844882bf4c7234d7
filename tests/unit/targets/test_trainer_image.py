"""Never drop the trainer: every runtime/framework/image flag combination, for a CustomJob, a tuning job's trials
and a TFJob (mlsubmit/targets/trainer_image.py has the table)."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from mlsubmit.errors import InvalidJobError
from mlsubmit.targets.tfjob import to_tfjob
from mlsubmit.targets.trainer_image import is_prebuilt
from mlsubmit.targets.translate import translate
from mlsubmit.targets.vertex import to_custom_job
from mlsubmit.targets.vertex_rules import check_vertex

PACKAGE = "gs://bkt/mlsubmit/packages/abc/trainer-0.1.tar.gz"
PREBUILT_TORCH = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
PREBUILT_TF = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
TF_2_11 = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11.py310:latest"
FRAMEWORK_IMAGE = "gcr.io/cloud-ml-public/training/pytorch-xla.1-11"  # the AI Platform PyTorch sample's image
OWN = "europe-docker.pkg.dev/p/r/trainer:1"
BUILT = "us-central1-docker.pkg.dev/p/mlsubmit/trainer@sha256:" + "a" * 64
TODAY = date(2026, 11, 25)  # every TensorFlow prebuilt image has ended; PyTorch 2.4 is not confirmed ended


def body(
    *, package: bool = True, runtime: str | None = None, image: str | None = None, **vertex: Any
) -> dict[str, Any]:
    ti: dict[str, Any] = {
        "region": "us-central1",
        "scaleTier": "CUSTOM",
        "masterType": "n1-standard-8",
        "workerType": "n1-standard-8",
        "workerCount": "1",
        "pythonModule": "trainer.task",
        "args": ["--epochs", "3"],
    }
    if package:
        ti["packageUris"] = [PACKAGE]
    if runtime:
        ti["runtimeVersion"] = runtime
    if image:
        ti["masterConfig"] = {"imageUri": image}
    job: dict[str, Any] = {"jobId": "sample", "trainingInput": ti}
    if vertex:
        job["vertex"] = vertex
    return job


# (case id, job, executor flag, built image given) -> expected: ("package", executor) | ("built", image) |
# ("container", image) | ("refused", JSON path). Vertex and TFJob agree except where the last column says.
CASES: list[tuple[str, dict[str, Any], str | None, bool, tuple[str, str], tuple[str, str] | None]] = [
    (
        "framework image + package",
        body(image=FRAMEWORK_IMAGE),
        None,
        False,
        ("refused", "$.trainingInput.masterConfig.imageUri"),
        None,
    ),
    (
        "framework image + package + build",
        body(image=FRAMEWORK_IMAGE, buildImage=True),
        None,
        True,
        ("built", BUILT),
        None,
    ),
    ("prebuilt image + package", body(image=PREBUILT_TORCH), None, False, ("package", PREBUILT_TORCH), None),
    ("image, no package", body(image=OWN, package=False), None, False, ("container", OWN), None),
    ("own executor flag", body(runtime="2.11"), OWN, False, ("refused", "$.vertex.executorImageUri"), None),
    (
        "own executor in the config",
        body(executorImageUri=OWN),
        None,
        False,
        ("refused", "$.vertex.executorImageUri"),
        None,
    ),
    ("own executor + build", body(executorImageUri=OWN, buildImage=True), None, True, ("built", BUILT), None),
    (
        "prebuilt executor flag",
        body(runtime="2.11"),
        PREBUILT_TORCH,
        False,
        ("package", PREBUILT_TORCH),
        None,
    ),
    (
        "framework",
        body(framework="pytorch", frameworkVersion="2.4"),
        None,
        False,
        ("package", PREBUILT_TORCH.replace("gpu", "cpu")),  # no accelerators: the CPU image
        None,
    ),
    # a legacy runtime: Vertex AI refuses the ended image, a cluster still runs it (with a warning)
    (
        "legacy runtime",
        body(runtime="2.11"),
        None,
        False,
        ("refused", "$.trainingInput.runtimeVersion"),
        ("package", TF_2_11),
    ),
    ("legacy runtime + build", body(runtime="2.11", buildImage=True), None, True, ("built", BUILT), None),
    (
        "build without a package",
        body(image=OWN, package=False, buildImage=True),
        None,
        True,
        ("refused", "$.vertex.buildImage"),
        None,
    ),
]


def _pools_vertex(spec: dict[str, Any]) -> set[tuple[str, str]]:
    out = set()
    for pool in spec["workerPoolSpecs"]:
        if "pythonPackageSpec" in pool:
            package = pool["pythonPackageSpec"]
            assert package["packageUris"] == [PACKAGE] and package["pythonModule"] == "trainer.task"
            assert package["args"][:2] == ["--epochs", "3"]
            out.add(("package", package["executorImageUri"]))
        else:
            container = pool["containerSpec"]
            if container["imageUri"] == BUILT:
                assert "command" not in container  # the built image's entrypoint runs the module
                assert container["args"][:2] == ["--epochs", "3"]
                out.add(("built", BUILT))
            else:
                out.add(("container", container["imageUri"]))
    return out


def vertex_outcome(
    job: dict[str, Any], executor: str | None, built: str | None, tuning: bool
) -> tuple[str, str]:
    try:
        if tuning:
            job = copy.deepcopy(job)
            job["trainingInput"]["hyperparameters"] = {
                "goal": "MINIMIZE",
                "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 0.1}],
            }
            tuned = translate(job, "hptuningjob", executor_image_uri=executor, built_image=built)
            spec = tuned.body["trialJobSpec"]
        else:
            custom, _ = to_custom_job(job, executor_image_uri=executor, on=TODAY, built_image=built)
            spec = custom["jobSpec"]
    except InvalidJobError as err:
        return ("refused", err.problems[0].path or "")
    (outcome,) = _pools_vertex(spec)  # every pool runs the same thing
    return outcome


def tfjob_outcome(job: dict[str, Any], executor: str | None, built: str | None) -> tuple[str, str]:
    for path, _message in check_vertex(
        {**job, "vertex": {**job.get("vertex", {}), **({"executorImageUri": executor} if executor else {})}},
        on=TODAY,
        machines=False,
    ):
        return ("refused", "$." + ".".join(path))
    try:
        manifest, _ = to_tfjob(job, executor_image_uri=executor, built_image=built)
    except InvalidJobError as err:
        return ("refused", err.problems[0].path or "")
    outcomes = set()
    specs = (
        manifest["spec"].get("tfReplicaSpecs") or manifest["spec"]["pytorchReplicaSpecs"]
    )  # PyTorch: PyTorchJob
    for replica in specs.values():
        (container,) = replica["template"]["spec"]["containers"]
        if container["image"] == BUILT:
            assert "command" not in container and container["args"][:2] == ["--epochs", "3"]
            outcomes.add(("built", BUILT))
        elif "command" in container and PACKAGE in container["command"][2]:
            assert "python -m trainer.task" in container["command"][2]
            outcomes.add(("package", container["image"]))
        else:
            outcomes.add(("container", container["image"]))
    (outcome,) = outcomes
    return outcome


@pytest.mark.parametrize(
    ("job", "executor", "built", "expected", "cluster"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_an_image_and_a_package_run_the_package(
    job: dict[str, Any],
    executor: str | None,
    built: bool,
    expected: tuple[str, str],
    cluster: tuple[str, str] | None,
) -> None:
    image = BUILT if built else None
    assert vertex_outcome(copy.deepcopy(job), executor, image, tuning=False) == expected
    if expected[0] != "refused" or expected[1] != "$.trainingInput.runtimeVersion":
        # a tuning job's trials follow the same table (its own day: the fixture's, when every image was served)
        assert vertex_outcome(copy.deepcopy(job), executor, image, tuning=True) == expected
    assert tfjob_outcome(copy.deepcopy(job), executor, image) == (cluster or expected)


def test_a_non_prebuilt_image_is_never_sent_as_an_executor_image() -> None:
    for case in CASES:
        job, executor, built = case[1], case[2], case[3]
        try:
            custom, _ = to_custom_job(
                copy.deepcopy(job),
                executor_image_uri=executor,
                on=TODAY,
                built_image=BUILT if built else None,
            )
        except InvalidJobError:
            continue
        for pool in custom["jobSpec"]["workerPoolSpecs"]:
            if "pythonPackageSpec" in pool:
                assert is_prebuilt(pool["pythonPackageSpec"]["executorImageUri"]), case[0]


def test_the_refusal_names_the_way_out() -> None:
    with pytest.raises(InvalidJobError) as caught:
        to_custom_job(body(image=FRAMEWORK_IMAGE), on=TODAY)
    assert "--build-image" in str(caught.value) and FRAMEWORK_IMAGE in str(caught.value)


@pytest.mark.parametrize(
    ("image", "prebuilt"),
    [
        (PREBUILT_TF, True),
        ("europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-17.py310@sha256:" + "b" * 64, True),
        ("us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-17:latest", False),
        ("us-docker.pkg.dev/vertex-ai-evil/training/tf-cpu.2-17.py310:latest", False),
        (FRAMEWORK_IMAGE, False),
    ],
)
def test_prebuilt_images_are_recognised(image: str, prebuilt: bool) -> None:
    assert is_prebuilt(image) is prebuilt
