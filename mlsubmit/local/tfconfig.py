"""TF_CONFIG for each local replica: pure functions, no I/O.

What the service sets (docs/local.md; https://cloud.google.com/ai-platform/training/docs/distributed-training-details) and what we keep from gcloud's ``local_train.MakeProcess``:

* ``cluster``: only roles with replicas (see :mod:`mlsubmit.local.cluster`); absent for a single process, where
  gcloud writes ``"cluster": {}`` and ``"task": {}``. A single process here gets the task
  ``{"type": "chief", "index": 0}`` so trainers that ask "am I the chief?" get the answer the service gives;
  TensorFlow treats a TF_CONFIG without ``cluster`` as a local, non-distributed run.
* ``task``: ``type`` and ``index``, plus ``trial`` as a string (``"1"``, ``"2"``...) when a hyperparameter trial is
  simulated, as the service does for tuning jobs.
* ``job``: gcloud's ``{"job_name": MODULE, "args": [...]}`` (the args the app really receives, ``--job-dir``
  included), merged over the job's ``trainingInput`` when a config file was given, since that is what the
  service puts there.
* ``environment``: ``"cloud"``, as both do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mlsubmit.local.cluster import Replica


def job_description(
    module_name: str, args: Sequence[str], training_input: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``job`` entry: the trainingInput (if any) with gcloud's ``job_name`` and the app's actual ``args``."""
    job: dict[str, Any] = dict(training_input or {})
    job["job_name"] = module_name
    job["args"] = list(args)
    return job


def tf_config(
    replica: Replica,
    cluster: Mapping[str, Sequence[str]] | None,
    job: Mapping[str, Any],
    trial: int | None = None,
) -> dict[str, Any]:
    """The TF_CONFIG mapping one replica sees."""
    task: dict[str, Any] = {"type": replica.role, "index": replica.index}
    if trial is not None:
        task["trial"] = str(trial)
    config: dict[str, Any] = {}
    if cluster is not None:
        config["cluster"] = {role: list(addresses) for role, addresses in cluster.items()}
    config["task"] = task
    config["job"] = dict(job)
    config["environment"] = "cloud"
    return config


def tf_config_json(config: Mapping[str, Any]) -> str:
    """A :func:`tf_config` serialised the way the variable is set (compact JSON, stable key order)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))
