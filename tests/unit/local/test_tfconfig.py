"""TF_CONFIG as each local replica sees it (mlsubmit.local.tfconfig), against docs/local.md."""

from __future__ import annotations

import json

from mlsubmit.local.cluster import Replica, plan_distributed
from mlsubmit.local.tfconfig import job_description, tf_config, tf_config_json


def test_single_process_gets_gclouds_empty_cluster_and_task() -> None:
    config = tf_config(Replica("chief", 0, None), None, job_description("trainer.task", ["--epochs", "3"]))
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
    job = job_description("trainer.task", [])
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


def test_job_merges_training_input_with_gcloud_fields() -> None:
    training_input = {
        "scaleTier": "CUSTOM",
        "workerCount": "2",
        "args": ["--old"],
        "pythonModule": "trainer.task",
    }
    job = job_description("trainer.task", ["--new", "--job-dir", "/out"], training_input)
    assert job == {
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
