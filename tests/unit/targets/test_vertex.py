"""to_custom_job: ml v1 Job bodies become Vertex AI CustomJob bodies, or are refused with every reason at once."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from mlsubmit.errors import InvalidJobError
from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label
from mlsubmit.targets.pools import HANDLED_FIELDS, HANDLED_REPLICA_FIELDS, HANDLED_SCHEDULING_FIELDS
from mlsubmit.targets.tfjob import to_tfjob
from mlsubmit.targets.vertex import to_custom_job
from mlsubmit.targets.vertex_images import PREBUILT_IMAGES
from mlsubmit.targets.vertex_tables import VERTEX_LEGACY_MACHINES as LEGACY_MACHINES
from tests.fakes.jobs import assert_valid_for_vertex, assert_valid_tfjob, distributed, job
from tests.fakes.schema_check import discovery_document

US = "us-docker.pkg.dev/vertex-ai/training"


def refusals(body: dict[str, Any], **kwargs: Any) -> dict[str, str]:
    """path -> message of every problem to_custom_job reports."""
    with pytest.raises(InvalidJobError) as exc:
        to_custom_job(body, **kwargs)
    return {p.path: p.message for p in exc.value.problems}


def test_custom_job_maps_roles_to_pools_with_machines_counts_accelerators_and_disks() -> None:
    body, warnings = to_custom_job(distributed())
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"] for p in pools] == [
        {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 2},
        {"machineType": "n1-standard-4"},
        {"machineType": "n1-highmem-8"},
    ]
    assert [p["replicaCount"] for p in pools] == ["1", "3", "2"]
    assert [p.get("diskSpec") for p in pools] == [
        {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
        {"bootDiskSizeGb": 150},
        None,
    ]
    assert warnings == []
    assert_valid_for_vertex(body)


def test_every_pool_runs_the_package_with_the_args_and_job_dir() -> None:
    body, _ = to_custom_job(distributed())
    specs = [p["pythonPackageSpec"] for p in body["jobSpec"]["workerPoolSpecs"]]
    for spec in specs:
        assert spec["packageUris"] == ["gs://bkt/pkg/trainer-0.0.0.tar.gz"]
        assert spec["pythonModule"] == "trainer.task"
        assert spec["args"] == ["--epochs", "3", "--job-dir", "gs://bkt/out"]
    # the GPU image only where the machine has GPUs
    assert [s["executorImageUri"] for s in specs] == [
        f"{US}/tf-gpu.2-11.py310:latest",
        f"{US}/tf-cpu.2-11.py310:latest",
        f"{US}/tf-cpu.2-11.py310:latest",
    ]


def test_job_spec_output_directory_timeout_identity_and_encryption() -> None:
    body, _ = to_custom_job(
        distributed(
            serviceAccount="trainer@p.iam.gserviceaccount.com",
            network="projects/123/global/networks/vpc",
            enableWebAccess=True,
            encryptionConfig={"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
        )
    )
    spec = body["jobSpec"]
    assert spec["baseOutputDirectory"] == {"outputUriPrefix": "gs://bkt/out"}
    assert spec["scheduling"] == {"timeout": "3600s"}
    assert spec["serviceAccount"] == "trainer@p.iam.gserviceaccount.com"
    assert spec["network"] == "projects/123/global/networks/vpc"
    assert spec["enableWebAccess"] is True
    assert body["encryptionSpec"] == {
        "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
    }
    assert_valid_for_vertex(body)


def test_job_id_becomes_display_name_and_label_next_to_the_users_labels() -> None:
    body, _ = to_custom_job(job("My_Job", labels={"team": "vision"}))
    assert body["displayName"] == "My_Job"
    assert body["labels"] == {"team": "vision", JOB_ID_LABEL: "my_job"}


def test_long_job_ids_give_distinct_labels_within_63_characters() -> None:
    a, b = "j" * 100 + "a", "j" * 100 + "b"
    assert len(job_id_label(a)) == 63
    assert job_id_label(a) != job_id_label(b)
    assert job_id_label("Short_ID") == "short_id"


def test_empty_pools_keep_positions_and_trailing_ones_are_dropped() -> None:
    evaluators = job(
        scaleTier="CUSTOM", masterType="n1-standard-4", evaluatorType="n1-standard-8", evaluatorCount="1"
    )
    pools = to_custom_job(evaluators)[0]["jobSpec"]["workerPoolSpecs"]
    assert [bool(p) for p in pools] == [True, False, False, True]
    assert pools[3]["machineSpec"] == {"machineType": "n1-standard-8"}
    assert_valid_for_vertex(to_custom_job(evaluators)[0])
    workers = job(scaleTier="CUSTOM", masterType="n1-standard-4", workerType="n1-standard-4", workerCount="2")
    assert len(to_custom_job(workers)[0]["jobSpec"]["workerPoolSpecs"]) == 2


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        (None, [("n1-standard-4", None, "1")]),
        ("BASIC", [("n1-standard-4", None, "1")]),
        ("BASIC_GPU", [("n1-standard-8", ("NVIDIA_TESLA_T4", 1), "1")]),
        (
            "STANDARD_1",
            [("n1-standard-8", None, "1"), ("n1-standard-8", None, "4"), ("n1-standard-4", None, "3")],
        ),
        (
            "PREMIUM_1",
            [("n1-highcpu-16", None, "1"), ("n1-highcpu-16", None, "19"), ("n1-highmem-8", None, "11")],
        ),
    ],
)
def test_scale_tiers_expand_to_explicit_pools_with_a_warning(tier: str | None, expected: list[Any]) -> None:
    body, warnings = to_custom_job(job(**({"scaleTier": tier} if tier else {})))
    pools = body["jobSpec"]["workerPoolSpecs"]
    got = [
        (
            p["machineSpec"]["machineType"],
            (p["machineSpec"]["acceleratorType"], p["machineSpec"]["acceleratorCount"])
            if "acceleratorType" in p["machineSpec"]
            else None,
            p["replicaCount"],
        )
        for p in pools
    ]
    assert got == expected
    assert any(f"scaleTier {tier or 'BASIC'} expanded" in w for w in warnings)
    assert_valid_for_vertex(body)


@pytest.mark.parametrize(
    ("legacy", "machine", "gpu"),
    [
        ("complex_model_m", "n1-highcpu-16", None),
        ("standard_gpu", "n1-standard-8", ("NVIDIA_TESLA_T4", 1)),
        ("complex_model_l_v100", "n1-standard-32", ("NVIDIA_TESLA_V100", 8)),
    ],
)
def test_legacy_machine_names_become_compute_engine_types_with_their_gpus(
    legacy: str, machine: str, gpu: tuple[str, int] | None
) -> None:
    body, warnings = to_custom_job(job(scaleTier="CUSTOM", masterType=legacy))
    spec = body["jobSpec"]["workerPoolSpecs"][0]
    assert spec["machineSpec"]["machineType"] == machine
    assert spec["machineSpec"].get("acceleratorType") == (gpu[0] if gpu else None)
    assert spec["machineSpec"].get("acceleratorCount") == (gpu[1] if gpu else None)
    assert ("tf-gpu" in spec["pythonPackageSpec"]["executorImageUri"]) == bool(gpu)
    assert any(legacy in w and machine in w for w in warnings)


def test_every_legacy_machine_except_tpus_has_an_equivalent() -> None:
    from mlsubmit.job.vocab import LEGACY_MACHINES as KNOWN

    assert set(KNOWN) - set(LEGACY_MACHINES) == {"cloud_tpu"}


@pytest.mark.parametrize(
    ("runtime", "python", "region", "gpu", "image"),
    [
        ("2.11", None, "us-central1", False, f"{US}/tf-cpu.2-11.py310:latest"),
        ("2.11", "3.7", "us-central1", False, f"{US}/tf-cpu.2-11:latest"),
        ("2.11", None, "us-central1", True, f"{US}/tf-gpu.2-11.py310:latest"),
        (
            "2.15",
            None,
            "europe-west4",
            False,
            "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
        ),
        ("2.1", "3.7", "asia-east1", True, "asia-docker.pkg.dev/vertex-ai/training/tf-gpu.2-1:latest"),
        (
            "1.15",
            None,
            "australia-southeast1",
            False,
            "asia-docker.pkg.dev/vertex-ai/training/tf-cpu.1-15:latest",
        ),
        ("2.8", None, "us-east1", False, f"{US}/tf-cpu.2-8.py310:latest"),
    ],
)
def test_runtime_and_python_pick_the_prebuilt_executor_image(
    runtime: str, python: str | None, region: str, gpu: bool, image: str
) -> None:
    ti: dict[str, Any] = {"runtimeVersion": runtime, "region": region}
    if python:
        ti["pythonVersion"] = python
    if gpu:
        ti.update(
            scaleTier="CUSTOM",
            masterType="n1-standard-8",
            masterConfig={"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}},
        )
    body, _ = to_custom_job(job(**ti))
    assert body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["executorImageUri"] == image


def test_every_table_entry_names_an_image_for_each_python_it_lists() -> None:
    tensorflow = {(i.version, i.python) for i in PREBUILT_IMAGES if i.framework == "tensorflow"}
    for runtime, python in sorted(tensorflow):
        body, _ = to_custom_job(job(runtimeVersion=runtime, pythonVersion=python), on=date(2023, 1, 1))
        uri = body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["executorImageUri"]
        assert uri.startswith(f"{US}/tf-cpu.{runtime.replace('.', '-')}") and uri.endswith(":latest")


def test_executor_image_uri_overrides_the_table_even_for_unknown_runtimes() -> None:
    prebuilt = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    body, _ = to_custom_job(job(runtimeVersion="2.10"), executor_image_uri=prebuilt)
    assert body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["executorImageUri"] == prebuilt


def test_a_non_prebuilt_executor_image_is_never_sent_as_one() -> None:
    found = refusals(job(runtimeVersion="2.10"), executor_image_uri="gcr.io/p/trainer:1")
    assert "--build-image" in found["$.vertex.executorImageUri"]


def test_unknown_runtime_is_refused_with_a_hint_to_pass_an_image() -> None:
    found = refusals(job(runtimeVersion="2.10"))
    assert "--executor-image-uri" in found["$.trainingInput.runtimeVersion"]


def test_python_without_an_image_is_refused() -> None:
    found = refusals(job(runtimeVersion="2.15", pythonVersion="3.7"))
    assert "Python 3.7" in found["$.trainingInput.pythonVersion"]


def test_custom_container_maps_to_container_spec_on_every_pool() -> None:
    body, _ = to_custom_job(
        {
            "jobId": "c1",
            "trainingInput": {
                "region": "us-central1",
                "scaleTier": "CUSTOM",
                "masterType": "n1-standard-4",
                "masterConfig": {
                    "imageUri": "gcr.io/p/img:1",
                    "containerCommand": ["python", "-m", "t"],
                    "containerArgs": ["--lr", "0.1"],
                },
                "workerType": "n1-standard-4",
                "workerCount": "2",
                "parameterServerType": "n1-standard-4",
                "parameterServerCount": "1",
                "parameterServerConfig": {"imageUri": "gcr.io/p/ps:1"},
                "jobDir": "gs://bkt/out",
                "useChiefInTfConfig": True,
            },
        }
    )
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert all("pythonPackageSpec" not in p for p in pools)
    master = {
        "imageUri": "gcr.io/p/img:1",
        "command": ["python", "-m", "t"],
        "args": ["--lr", "0.1", "--job-dir", "gs://bkt/out"],
    }
    assert pools[0]["containerSpec"] == master
    assert pools[1]["containerSpec"] == master  # workers run the master's image, command and args
    assert pools[2]["containerSpec"] == {"imageUri": "gcr.io/p/ps:1", "args": ["--job-dir", "gs://bkt/out"]}
    assert_valid_for_vertex(body)


def test_container_job_uses_training_args_when_it_has_no_container_args() -> None:
    body, warnings = to_custom_job(
        {
            "jobId": "c2",
            "trainingInput": {
                "region": "us-central1",
                "masterConfig": {"imageUri": "gcr.io/p/i:1"},
                "args": ["--x", "1"],
            },
        }
    )
    assert body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"] == {
        "imageUri": "gcr.io/p/i:1",
        "args": ["--x", "1"],
    }
    assert not any("chief" in w for w in warnings)  # one replica: TF_CONFIG naming does not matter


def test_distributed_container_warns_that_the_primary_is_now_called_chief() -> None:
    body = {
        "jobId": "c3",
        "trainingInput": {
            "region": "us-central1",
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-4",
            "masterConfig": {"imageUri": "gcr.io/p/i:1"},
            "workerType": "n1-standard-4",
            "workerCount": "1",
        },
    }
    assert any("`chief`" in w for w in to_custom_job(body)[1])


def test_job_dir_the_user_already_passes_is_not_added_twice() -> None:
    body, _ = to_custom_job(job(jobDir="gs://bkt/out", args=["--job-dir=gs://bkt/out"]))
    assert body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["args"] == ["--job-dir=gs://bkt/out"]


def test_everything_vertex_cannot_express_is_refused_at_once() -> None:
    body = distributed(useChiefInTfConfig=False, hyperparameters={"goal": "MAXIMIZE", "maxTrials": 2})
    body["trainingInput"]["scheduling"].update(priority=5, maxWaitTime="3600s")
    found = refusals(body)
    assert set(found) == {
        "$.trainingInput.scheduling.priority",
        "$.trainingInput.scheduling.maxWaitTime",
        "$.trainingInput.hyperparameters",
        "$.trainingInput.useChiefInTfConfig",
    }
    assert "remove scheduling.priority" in found["$.trainingInput.scheduling.priority"]


@pytest.mark.parametrize(
    ("ti", "path"),
    [
        ({"scaleTier": "BASIC_TPU"}, "$.trainingInput.scaleTier"),
        (
            {"scaleTier": "CUSTOM", "masterType": "standard", "workerType": "cloud_tpu", "workerCount": "1"},
            "$.trainingInput.workerType",
        ),
        (
            {
                "scaleTier": "CUSTOM",
                "masterType": "n1-standard-8",
                "masterConfig": {"acceleratorConfig": {"type": "TPU_V3", "count": "8"}},
            },
            "$.trainingInput.masterConfig.acceleratorConfig.type",
        ),
        ({"masterConfig": {"tpuTfVersion": "2.11"}}, "$.trainingInput.masterConfig.tpuTfVersion"),
    ],
)
def test_tpu_jobs_are_refused(ti: dict[str, Any], path: str) -> None:
    assert path in refusals(job(**ti))


def test_k80_accelerators_run_as_t4_with_a_warning() -> None:
    body, warnings = to_custom_job(
        job(
            scaleTier="CUSTOM",
            masterType="n1-standard-8",
            masterConfig={"acceleratorConfig": {"type": "NVIDIA_TESLA_K80", "count": 1}},
        )
    )
    assert body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_T4"
    assert any("K80" in w and "NVIDIA_TESLA_T4" in w for w in warnings)


def test_the_job_id_label_is_reserved_and_labels_stay_within_the_limit() -> None:
    assert "$.labels.mlsubmit_job_id" in refusals(job(labels={JOB_ID_LABEL: "other"}))
    assert "$.labels" in refusals(job(labels={f"k{i}": "v" for i in range(64)}))
    to_custom_job(job(labels={f"k{i}": "v" for i in range(63)}))  # 63 + ours is fine


def test_executor_image_uri_is_refused_for_custom_containers() -> None:
    body = {
        "jobId": "c4",
        "trainingInput": {"region": "us-central1", "masterConfig": {"imageUri": "gcr.io/p/i"}},
    }
    assert "$.trainingInput.masterConfig.imageUri" in refusals(body, executor_image_uri="gcr.io/p/exec")


def test_unknown_fields_are_refused_not_dropped() -> None:
    body = job(futureField=1, masterConfig={"futureKnob": True}, scheduling={"futureWait": "1s"})
    assert set(refusals(body)) == {
        "$.trainingInput.futureField",
        "$.trainingInput.masterConfig.futureKnob",
        "$.trainingInput.scheduling.futureWait",
    }


def test_every_training_input_field_of_the_ml_api_is_translated_or_refused() -> None:
    schemas = discovery_document("ml.v1")["schemas"]
    assert set(schemas["GoogleCloudMlV1__TrainingInput"]["properties"]) == HANDLED_FIELDS
    assert set(schemas["GoogleCloudMlV1__ReplicaConfig"]["properties"]) == HANDLED_REPLICA_FIELDS
    vertex_only = {"strategy", "restartJobOnWorkerRestart", "disableRetries"}
    assert (
        set(schemas["GoogleCloudMlV1__Scheduling"]["properties"]) == HANDLED_SCHEDULING_FIELDS - vertex_only
    )


def test_translation_does_not_modify_the_job_body() -> None:
    body = distributed()
    before = copy.deepcopy(body)
    to_custom_job(body)
    assert body == before


# -- Vertex-only settings ----------------------------------------
# Vertex-only settings (scheduling, reservations, env, persistent resource, TensorBoard, experiments) in the
# CustomJob body and, where Kubernetes has them, in the TFJob.

L4_POOLS: dict[str, Any] = {
    "scaleTier": "CUSTOM",
    "masterType": "g2-standard-8",
    "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_L4", "count": "1"}},
    "workerType": "g2-standard-8",
    "workerCount": "2",
    "workerConfig": {"acceleratorConfig": {"type": "NVIDIA_L4", "count": "1"}},
}
RESERVATION = {
    "reservationAffinityType": "SPECIFIC_RESERVATION",
    "key": "compute.googleapis.com/reservation-name",
    "values": ["projects/p/zones/us-central1-a/reservations/r1"],
}


def test_flex_start_keeps_max_wait_time_as_max_wait_duration() -> None:
    body, _ = to_custom_job(
        job(
            **L4_POOLS,
            scheduling={"strategy": "FLEX_START", "maxWaitTime": "7200s", "maxRunningTime": "3600s"},
        )
    )
    assert body["jobSpec"]["scheduling"] == {
        "timeout": "3600s",
        "strategy": "FLEX_START",
        "maxWaitDuration": "7200s",
    }
    assert_valid_for_vertex(body)


def test_spot_restart_and_retries_reach_scheduling_and_both_together_warn() -> None:
    body, warnings = to_custom_job(
        job(scheduling={"strategy": "SPOT", "restartJobOnWorkerRestart": True, "disableRetries": True})
    )
    assert body["jobSpec"]["scheduling"] == {
        "strategy": "SPOT",
        "restartJobOnWorkerRestart": True,
        "disableRetries": True,
    }
    assert any("disableRetries turns restartJobOnWorkerRestart off" in w for w in warnings)
    assert_valid_for_vertex(body)


def test_reservations_env_and_job_level_settings() -> None:
    worker_reservation = {"reservationAffinityType": "NO_RESERVATION"}
    body = job(
        **L4_POOLS,
        jobDir="gs://bkt/out",
        serviceAccount="sa@p.iam.gserviceaccount.com",
        network="projects/1/global/networks/v",
    )
    body["vertex"] = {
        "reservationAffinity": RESERVATION,
        "poolReservationAffinity": {"worker": worker_reservation},
        "env": {"WANDB_MODE": "offline", "LR": "0.1"},
        "persistentResourceId": "shared-l4",
        "tensorboard": "projects/p/locations/us-central1/tensorboards/7",
        "experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/exp",
        "experimentRun": "projects/p/locations/us-central1/metadataStores/default/contexts/exp-run1",
        "enableDashboardAccess": True,
    }
    out, _ = to_custom_job(body)
    spec = out["jobSpec"]
    pools = spec["workerPoolSpecs"]
    assert pools[0]["machineSpec"]["reservationAffinity"] == RESERVATION
    assert pools[1]["machineSpec"]["reservationAffinity"] == worker_reservation
    for pool in pools:
        assert pool["pythonPackageSpec"]["env"] == [
            {"name": "WANDB_MODE", "value": "offline"},
            {"name": "LR", "value": "0.1"},
        ]
    assert spec["persistentResourceId"] == "shared-l4"
    assert spec["tensorboard"].endswith("/tensorboards/7")
    assert spec["experiment"].endswith("/contexts/exp") and spec["experimentRun"].endswith(
        "/contexts/exp-run1"
    )
    assert spec["enableDashboardAccess"] is True and spec["network"] == "projects/1/global/networks/v"
    assert_valid_for_vertex(out)


def test_env_reaches_custom_containers_too() -> None:
    body: dict[str, Any] = {
        "jobId": "c",
        "trainingInput": {"region": "us-central1", "masterConfig": {"imageUri": "gcr.io/p/i:1"}},
        "vertex": {"env": {"A": "1"}},
    }
    out, _ = to_custom_job(body)
    assert out["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"] == [{"name": "A", "value": "1"}]


def test_tfjob_maps_max_wait_time_to_schedule_timeout_with_a_gang_scheduler_note_and_passes_env() -> None:
    body = job(scheduling={"maxWaitTime": "1800.5s"})
    body["vertex"] = {"env": {"A": "1"}, "tensorboard": "projects/p/locations/us-central1/tensorboards/7"}
    manifest, warnings = to_tfjob(body)
    assert_valid_tfjob(manifest)  # the Kubeflow CRD's schema, where the spec file is present
    assert manifest["spec"]["runPolicy"]["schedulingPolicy"] == {"scheduleTimeoutSeconds": 1801}
    assert any("gang scheduler" in w for w in warnings)
    assert any("vertex.tensorboard" in w for w in warnings)
    (replica,) = manifest["spec"]["tfReplicaSpecs"].values()
    assert replica["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_a_tuning_translation_leaves_the_hyperparameters_to_the_study() -> None:
    body = job(hyperparameters={"goal": "MAXIMIZE", "maxTrials": 2})
    assert list(refusals(body)) == ["$.trainingInput.hyperparameters"]
    spec = to_custom_job(body, tuning=True)[0]["jobSpec"]
    assert spec["workerPoolSpecs"][0]["replicaCount"] == "1"
