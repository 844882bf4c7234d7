"""TF_CONFIG for each local replica: pure functions, no I/O.

What the service sets (docs/local.md; https://cloud.google.com/ai-platform/training/docs/distributed-training-details) and what we keep from gcloud's ``local_train.MakeProcess``:

* ``cluster`` and ``task`` always come together: TensorFlow's Estimator refuses a task type other than ``worker``
  when ``cluster`` is empty ("If cluster is not set in TF_CONFIG, task type must be WORKER"), so a single process
  never gets a task without the cluster that holds it. What one replica sees depends on the target:

  - ``--target ml``: gcloud's ``local train`` without ``--distributed`` (``"cluster": {}``, ``"task": {}``, plus
    ``trial`` when a trial is simulated); TensorFlow then runs a local, non-distributed job;
  - ``--target vertex``: the primary is listed in its own cluster (``{"chief": ["localhost:PORT"]}``, task
    ``chief`` 0), as CLUSTER_SPEC lists the one replica in ``workerpool0`` (:mod:`mlsubmit.local.vertex_env`).

  A distributed run lists only roles with replicas (see :mod:`mlsubmit.local.cluster`).
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
    single_address: str | None = None,
    *,
    with_job: bool = True,
) -> dict[str, Any]:
    """The TF_CONFIG mapping one replica sees.

    ``cluster`` is None for a single process: it then gets gcloud's empty cluster and task, or, given
    ``single_address`` (Vertex AI lists its one replica), a cluster of that one primary. ``with_job=False``: as
    the Kubeflow training operator writes it for a TFJob's replica (cluster, task and environment only;
    docs/kubernetes.md).
    """
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


def operator_sets_tf_config(replicas: int) -> bool:
    """Whether the Kubeflow training operator sets TF_CONFIG in a TFJob of ``replicas`` pods in all (every replica
    type's count summed, evaluators included): not for one. Its ``isDistributed`` (release-1.9,
    pkg/controller.v1/tensorflow/util.go; ``SetClusterSpec`` in tfjob_controller.go returns before writing
    TF_CONFIG when it is false; read 2026-11-27) counts ``replicas != 1``. A lone pod then sees no TF_CONFIG at
    all, and TensorFlow runs it as a local job."""
    return replicas != 1


def tf_config_json(config: Mapping[str, Any]) -> str:
    """A :func:`tf_config` serialised the way the variable is set (compact JSON, stable key order)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))
