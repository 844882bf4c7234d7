"""TF_CONFIG for each local replica, as the service sets it and gcloud's ``MakeProcess`` keeps it (docs/local.md;
https://cloud.google.com/ai-platform/training/docs/distributed-training-details): ``cluster`` with ``task`` (the
Estimator refuses a lone non-``worker`` task), ``task.trial`` a string, ``job``, ``"environment": "cloud"``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mlsubmit.local.cluster import Replica


def job_description(
    module_name: str, args: Sequence[str], training_input: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``job`` entry: the trainingInput (if any) with gcloud's ``job_name`` and the app's actual ``args``."""
    return {**(training_input or {}), "job_name": module_name, "args": list(args)}


def tf_config(
    replica: Replica,
    cluster: Mapping[str, Sequence[str]] | None,
    job: Mapping[str, Any],
    trial: int | None = None,
    single_address: str | None = None,
    *,
    with_job: bool = True,
) -> dict[str, Any]:
    """The TF_CONFIG one replica sees; ``with_job=False``: as the training operator writes it (docs/kubernetes.md)."""
    task: dict[str, Any] = {"type": replica.role, "index": replica.index}
    if cluster is not None:
        listed = {role: list(addresses) for role, addresses in cluster.items()}
    elif single_address is not None:
        listed = {replica.role: [single_address]}
    else:
        listed, task = {}, {}
    if trial is not None:
        task["trial"] = str(trial)
    config: dict[str, Any] = {"cluster": listed, "task": task}
    if with_job:
        config["job"] = dict(job)
    config["environment"] = "cloud"
    return config


def tf_config_json(config: Mapping[str, Any]) -> str:
    """A :func:`tf_config` serialised the way the variable is set (compact JSON, stable key order)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))
