"""The environment Vertex AI gives each replica, for ``local train --target vertex`` (docs/vertex.md; as documented
in https://cloud.google.com/vertex-ai/docs/training/distributed-training and .../code-requirements, "Environment
variables", and aiplatform v1 CustomJobSpec.baseOutputDirectory; checked 2026-11-24)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mlsubmit.job.vocab import MASTER, ROLES
from mlsubmit.local.cluster import ClusterPlan, Replica
from mlsubmit.local.request import LocalTrainRequest

# TF_CONFIG task name -> Vertex AI worker pool (the primary is `chief` or `master`).
POOLS = {role.task: f"workerpool{role.pool}" for role in ROLES} | {"master": f"workerpool{MASTER.pool}"}


def vertex_replica_env(
    request: LocalTrainRequest,
    plan: ClusterPlan,
    replica: Replica,
    job: Mapping[str, Any],
    single_address: str | None,
) -> dict[str, str]:
    """Every variable Vertex AI sets for ``replica`` (besides TF_CONFIG), plus the job's own ``env``."""
    cluster: dict[str, list[str]] = {"workerpool0": [single_address or "localhost:0"]}
    if plan.cluster is not None:  # the plan's addresses by worker pool, in pool order
        pools: dict[str, list[str]] = {}
        for role, addresses in plan.cluster.items():
            pools.setdefault(POOLS[role], []).extend(addresses)
        cluster = dict(sorted(pools.items()))
    task: dict[str, Any] = {"type": POOLS[replica.role], "index": replica.index}
    if request.trial is not None:
        task["trial"] = str(request.trial)
    spec = {"cluster": cluster, "environment": "cloud", "task": task, "job": dict(job)}
    out = {str(k): str(v) for k, v in (request.vertex_env or {}).items()}
    out["CLUSTER_SPEC"] = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    if request.job_dir:  # as on Vertex with baseOutputDirectory
        base = request.job_dir.rstrip("/") + (f"/{request.trial}" if request.trial is not None else "")
        out["AIP_MODEL_DIR"] = f"{base}/model/"
        out["AIP_CHECKPOINT_DIR"] = f"{base}/checkpoints/"
        out["AIP_TENSORBOARD_LOG_DIR"] = f"{base}/logs/"
    if replica.is_primary or replica.role == "worker":
        host, _, port = cluster["workerpool0"][0].rpartition(":")
        out["MASTER_ADDR"] = host
        out["MASTER_PORT"] = port
        out["WORLD_SIZE"] = str(1 + len(cluster.get("workerpool1", [])))
        out["RANK"] = "0" if replica.is_primary else str(1 + replica.index)
    return out
