"""Vertex-only settings (scheduling, reservations, env, persistent resource, TensorBoard, experiments) in the
CustomJob body and, where Kubernetes has them, in the TFJob."""

from __future__ import annotations

from typing import Any

from mlsubmit.targets.pools import Findings
from mlsubmit.targets.tfjob import to_tfjob
from mlsubmit.targets.vertex import custom_job_spec, to_custom_job
from tests.fakes.jobs import assert_valid_for_vertex, assert_valid_tfjob, job

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


def test_custom_job_spec_is_reusable_on_its_own() -> None:
    found = Findings()
    spec = custom_job_spec(job(scheduling={"strategy": "SPOT"}), found)
    assert spec["scheduling"] == {"strategy": "SPOT"} and found.problems == []
    assert set(spec) == {"workerPoolSpecs", "scheduling"}


def test_tfjob_maps_max_wait_time_to_schedule_timeout_with_a_gang_scheduler_note_and_passes_env() -> None:
    warnings: list[str] = []
    body = job(scheduling={"maxWaitTime": "1800.5s"})
    body["vertex"] = {"env": {"A": "1"}, "tensorboard": "projects/p/locations/us-central1/tensorboards/7"}
    manifest = to_tfjob(body, warn=warnings.append)
    assert_valid_tfjob(manifest)  # the Kubeflow CRD's schema, where the spec file is present
    assert manifest["spec"]["runPolicy"]["schedulingPolicy"] == {"scheduleTimeoutSeconds": 1801}
    assert any("gang scheduler" in w for w in warnings)
    assert any("vertex.tensorboard" in w for w in warnings)
    (replica,) = manifest["spec"]["tfReplicaSpecs"].values()
    assert replica["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_a_tuning_translation_can_reuse_the_spec_without_the_hyperparameters_refusal() -> None:
    body = job(hyperparameters={"goal": "MAXIMIZE", "maxTrials": 2})
    refused = Findings()
    custom_job_spec(body, refused)
    assert [p.path for p in refused.problems] == ["$.trainingInput.hyperparameters"]
    reused = Findings()
    spec = custom_job_spec(body, reused, tuning=True)
    assert reused.problems == [] and spec["workerPoolSpecs"][0]["replicaCount"] == "1"
