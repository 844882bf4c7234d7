"""Each local replica's launch (mlsubmit.local.runner): its TF_CONFIG, against docs/local.md, and with
`--target vertex` the variables Vertex AI documents for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.local.cluster import Replica, plan_cluster, plan_distributed
from mlsubmit.local.request import LocalTrainFlags, LocalTrainRequest, resolve_request
from mlsubmit.local.runner import build_launches, tf_config, tf_config_json
from tests.fakes.trainers import write_package


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return write_package(tmp_path, "")


def launches(package: Path, job: dict[str, Any] | None = None, **flags: Any) -> dict[str, dict[str, str]]:
    request = resolve_request(
        LocalTrainFlags(package_path=str(package), module_name="trainer.task", **flags),
        job,
        cwd=package.parent,
        environ={},
    )
    ports = list(range(5000, 5001 + request.workers + request.ps))
    plan = plan_distributed(request.workers, request.ps, 0, False, ports, request.primary_name)
    return {
        launch.name: launch.env for launch in build_launches(request, plan, "python", "/", {"HOME": "/h"})
    }


def test_every_replica_gets_vertexs_documented_variables(package: Path) -> None:
    job = {
        "trainingInput": {"scaleTier": "CUSTOM", "workerCount": 2, "parameterServerCount": 1},
        "vertex": {"env": {"TEAM": "a"}},
    }
    envs = launches(package, job, job_dir="gs://bkt/out", trial=3)
    # plan_distributed's port order is gcloud's: primary, parameter servers, workers.
    cluster = {"workerpool0": ["localhost:5000"], "workerpool1": ["localhost:5002", "localhost:5003"]}
    cluster["workerpool2"] = ["localhost:5001"]
    expected_task = {
        "chief": ("workerpool0", 0, "chief", 0),
        "worker-0": ("workerpool1", 0, "worker", 0),
        "worker-1": ("workerpool1", 1, "worker", 1),
        "ps-0": ("workerpool2", 0, "ps", 0),
    }
    assert set(envs) == set(expected_task)
    for name, (pool, index, role, tf_index) in expected_task.items():
        env = envs[name]
        spec = json.loads(env["CLUSTER_SPEC"])
        assert spec["cluster"] == cluster and spec["environment"] == "cloud"
        assert spec["task"] == {"type": pool, "index": index, "trial": "3"}
        tf = json.loads(env["TF_CONFIG"])
        assert tf["cluster"] == {
            "chief": ["localhost:5000"],
            "worker": cluster["workerpool1"],
            "ps": ["localhost:5001"],
        }
        assert tf["task"] == {"type": role, "index": tf_index, "trial": "3"}
        assert env["AIP_MODEL_DIR"] == "gs://bkt/out/3/model/"
        assert env["AIP_CHECKPOINT_DIR"] == "gs://bkt/out/3/checkpoints/"
        assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://bkt/out/3/logs/"
        assert env["TEAM"] == "a" and env["HOME"] == "/h"
    ranks = {name: envs[name].get("RANK") for name in expected_task}
    assert ranks == {"chief": "0", "worker-0": "1", "worker-1": "2", "ps-0": None}
    for name in ("chief", "worker-0", "worker-1"):
        assert (envs[name]["MASTER_ADDR"], envs[name]["MASTER_PORT"], envs[name]["WORLD_SIZE"]) == (
            "localhost",
            "5000",
            "3",
        )


def test_vertex_always_names_the_primary_chief(package: Path) -> None:
    job = {
        "trainingInput": {
            "scaleTier": "CUSTOM",
            "masterConfig": {"imageUri": "gcr.io/p/i"},
            "workerCount": 1,
        },
        "vertex": {},
    }
    assert "chief" in launches(package, job)
    assert "master" in launches(package, {"trainingInput": job["trainingInput"]})


def test_without_vertex_nothing_but_tf_config_is_added(package: Path) -> None:
    envs = launches(
        package, {"trainingInput": {"scaleTier": "CUSTOM", "workerCount": 1}}, job_dir="gs://bkt/out"
    )
    assert all("CLUSTER_SPEC" not in env and "AIP_MODEL_DIR" not in env for env in envs.values())


def test_env_flags_override_the_config_and_need_vertex(package: Path) -> None:
    envs = launches(package, {"vertex": {"env": {"A": "1", "B": "2"}}}, env=(("B", "3"),))
    assert (envs["chief"]["A"], envs["chief"]["B"]) == ("1", "3")
    with pytest.raises(UsageError, match="--target vertex"):
        launches(package, None, env=(("A", "1"),), target="ml")


def test_single_process_gets_gclouds_empty_cluster_and_task() -> None:
    config = tf_config(
        Replica("chief", 0, None), None, {"job_name": "trainer.task", "args": ["--epochs", "3"]}
    )
    assert config == {
        "cluster": {},
        "task": {},
        "job": {"job_name": "trainer.task", "args": ["--epochs", "3"]},
        "environment": "cloud",
    }


def test_single_vertex_replica_is_listed_in_its_own_cluster() -> None:
    config = tf_config(Replica("chief", 0, None), None, {}, trial=2, single_address="localhost:7")
    assert config["cluster"] == {"chief": ["localhost:7"]}
    assert config["task"] == {"type": "chief", "index": 0, "trial": "2"}


def test_every_replica_shares_the_cluster_and_has_its_own_task() -> None:
    plan = plan_distributed(2, 1, 1, False, [10, 11, 12, 13])
    job = {"job_name": "trainer.task", "args": []}
    configs = {r.name: tf_config(r, plan.cluster, job) for r in plan.replicas}
    assert {name: c["task"] for name, c in configs.items()} == {
        "ps-0": {"type": "ps", "index": 0},
        "worker-0": {"type": "worker", "index": 0},
        "worker-1": {"type": "worker", "index": 1},
        "evaluator-0": {"type": "evaluator", "index": 0},
        "chief": {"type": "chief", "index": 0},
    }
    for config in configs.values():
        assert config["cluster"] == {
            "chief": ["localhost:10"],
            "ps": ["localhost:11"],
            "worker": ["localhost:12", "localhost:13"],
        }
        assert config["environment"] == "cloud"


def test_trial_is_a_string_like_the_service_sets_it() -> None:
    config = tf_config(Replica("chief", 0, None), {"chief": ["localhost:5"]}, {}, trial=3)
    assert config["task"] == {"type": "chief", "index": 0, "trial": "3"}
    assert tf_config(Replica("chief", 0, None), None, {}, trial=3)["task"] == {"trial": "3"}


def test_job_merges_training_input_with_gcloud_fields(package: Path) -> None:
    training_input = {
        "scaleTier": "CUSTOM",
        "workerCount": "2",
        "args": ["--old"],
        "pythonModule": "trainer.task",
    }
    args = ("--new", "--job-dir", "/out")
    request = LocalTrainRequest(package, "trainer.task", args, training_input=training_input)
    (launch,) = build_launches(request, plan_cluster(request), "python", "/", {})
    assert json.loads(launch.env["TF_CONFIG"])["job"] == {
        "scaleTier": "CUSTOM",
        "workerCount": "2",
        "pythonModule": "trainer.task",
        "job_name": "trainer.task",
        "args": ["--new", "--job-dir", "/out"],  # what the app really receives
    }
    assert training_input["args"] == ["--old"]  # not mutated


def test_json_form_round_trips() -> None:
    plan = plan_distributed(1, 0, 0, False, [5, 6])
    replica = plan.replicas[0]
    config = tf_config(replica, plan.cluster, {"job_name": "m", "args": []}, trial=1)
    text = tf_config_json(config)
    assert json.loads(text) == config
