"""Pure translation of a validated ml v1 Job body into a Kubeflow ``TFJob`` (kubeflow.org/v1), or a ``PyTorchJob``
for ``vertex.framework: pytorch``. The primary is ``Master`` exactly when the legacy service said ``master`` in
TF_CONFIG. What Kubernetes cannot express is refused or warned about, never dropped.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from mlsubmit.job.values import api_duration_seconds
from mlsubmit.job.vocab import MASTER, ROLE_BY_KEY, primary_task_name
from mlsubmit.targets import pools
from mlsubmit.targets.trainer_image import image_problem

TARGET = "a Kubernetes TFJob"
DEFAULT_DEADLINE_S = 604800  # the service's default maxRunningTime
MAX_NAME = 45  # + "-evaluator-" + 4 digits stays within the 63 characters of a Kubernetes service name
REPLICA_TYPES = {"master": "Chief", "worker": "Worker", "parameter_server": "PS", "evaluator": "Evaluator"}
PACKAGE_DIR = "/tmp/mlsubmit/packages"
# A PyTorch trainer (vertex.framework: pytorch) runs as the operator's PyTorchJob: a master and workers, each in a
# container named "pytorch" (the operator finds its port by that name), with MASTER_ADDR, WORLD_SIZE and RANK set.
PYTORCH = {"kind": "PyTorchJob", "specs": "pytorchReplicaSpecs", "container": "pytorch"}
TENSORFLOW = {"kind": "TFJob", "specs": "tfReplicaSpecs", "container": "tensorflow"}
NOT_IN_A_TFJOB = {
    "serviceAccount": "run the pods as a Kubernetes service account bound to it (Workload Identity) by adding "
    "serviceAccountName",
    "network": "the pods use the cluster's network",
    "enableWebAccess": "use kubectl exec instead",
    "encryptionConfig": "the KMS key applies to Google-managed job resources only",
}
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$")


def k8s_name(job_id: str) -> str:
    """A DNS-1123 label from a job id (which starts with a letter, as DNS-1035 wants): lowercase, ``_`` -> ``-``,
    at most MAX_NAME characters; long or colliding ids keep a hash of the exact id (``My_Job`` vs ``my_job``)."""
    name = re.sub(r"-+", "-", job_id.lower().replace("_", "-")).strip("-") or "job"
    if len(name) <= MAX_NAME and name.replace("-", "_") == job_id:
        return name
    digest = hashlib.sha256(job_id.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"


def deadline_seconds(duration: str | None) -> int:
    """``"3600.5s"`` -> 3601 (rounded up: a deadline must not cut the job short); unset -> 7 days."""
    seconds = api_duration_seconds(duration)
    if seconds is None:
        return DEFAULT_DEADLINE_S  # unset (malformed values never get here: the schema checks durations)
    return max(1, math.ceil(seconds))


def install_and_run_script(package_uris: list[str], module: str) -> str:
    """The shell script a package job's container runs: fetch the packages (each in its own folder), pip install
    them, exec the module with the container's ``args`` as ``"$@"`` (so they need no shell quoting)."""
    lines = ["set -e"]
    local: list[str] = []
    for i, uri in enumerate(package_uris):
        if uri.startswith("gs://"):
            folder = f"{PACKAGE_DIR}/{i}"
            name = uri.rstrip("/").rsplit("/", 1)[-1]
            lines.append(f"mkdir -p {folder} && gsutil -q cp {shlex.quote(uri)} {folder}/")
            local.append(shlex.quote(f"{folder}/{name}"))
        else:
            local.append(shlex.quote(uri))  # an https:// URL or a path pip can read itself
    if local:
        lines.append("python -m pip install --no-cache-dir --disable-pip-version-check " + " ".join(local))
    lines.append(f'exec python -m {shlex.quote(module)} "$@"')
    return "\n".join(lines) + "\n"


def _container(
    pool: pools.Pool,
    ti: Mapping[str, Any],
    vertex: Mapping[str, Any],
    found: pools.Findings,
    image_override: str | None,
    built_image: str | None,
    container_name: str = "tensorflow",
) -> dict[str, Any]:
    package, image, command, args = pools.program(pool, ti, vertex, built_image)
    container: dict[str, Any] = {"name": container_name, "image": image}
    if package:
        container["image"] = pools.executor_image(
            ti, pool.gpus > 0, found, image or image_override, vertex=vertex, dated=False
        )
        script = install_and_run_script(list(ti.get("packageUris") or []), str(ti.get("pythonModule") or ""))
        command = ["/bin/sh", "-c", script, "trainer"]  # "trainer" is $0; args are "$@"
    if command is not None:
        container["command"] = list(command)
    if args:
        container["args"] = args
    if env := pools.env_list(vertex):
        container["env"] = env
    if pool.gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": pool.gpus}}
    return container


def _metadata(job_body: Mapping[str, Any], namespace: str | None, found: pools.Findings) -> dict[str, Any]:
    job_id = str(job_body["jobId"])
    labels: dict[str, str] = {}
    for key, value in pools.as_dict(job_body.get("labels")).items():
        if _LABEL_NAME.match(str(key)) and _LABEL_VALUE.match(str(value)):
            labels[str(key)] = str(value)
        else:
            found.warn(
                f"label {key}={value} is not a valid Kubernetes label (names and values start and end with "
                "a letter or digit); left out of the manifest"
            )
    meta: dict[str, Any] = {"name": k8s_name(job_id), "annotations": {"mlsubmit/job-id": job_id}}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def _warn_inexpressible(
    ti: Mapping[str, Any], vertex: Mapping[str, Any], expanded: list[pools.Pool], found: pools.Findings
) -> None:
    if machines := sorted({p.machine_type for p in expanded}):
        found.warn(
            f"machine types ({', '.join(machines)}) are not part of the manifest; pin nodes with a "
            "nodeSelector such as node.kubernetes.io/instance-type if it matters"
        )
    if gpu_types := sorted({p.accelerator[0] for p in expanded if p.accelerator and p.gpus}):
        found.warn(
            f"only GPU counts are expressed (nvidia.com/gpu), not their type ({', '.join(gpu_types)}); on GKE "
            "add a nodeSelector cloud.google.com/gke-accelerator"
        )
    if any(p.disk for p in expanded):
        found.warn("diskConfig (boot disks) has no TFJob equivalent; the nodes' disks are used")
    for key, what in NOT_IN_A_TFJOB.items():
        if ti.get(key):
            found.warn(f"{key}: {what} (not part of the TFJob)")
    sched = pools.as_dict(ti.get("scheduling"))
    for key in ("strategy", "restartJobOnWorkerRestart", "disableRetries"):
        if key in sched:
            found.warn(f"scheduling.{key} is a Vertex AI setting (not part of the TFJob)")
    handled = {"env", "executorImageUri", "framework", "frameworkVersion", "buildImage"}
    for key in sorted(set(vertex) - handled):
        found.warn(f"vertex.{key} is a Vertex AI setting (not part of the TFJob)")


def to_tfjob(
    job_body: dict[str, Any],
    *,
    namespace: str | None = None,
    executor_image_uri: str | None = None,
    warn: Callable[[str], None] = lambda message: None,
    built_image: str | None = None,
) -> dict[str, Any]:
    """A kubeflow.org/v1 TFJob manifest for a validated ml v1 Job body; InvalidJobError lists everything a TFJob
    cannot express, each warning goes to ``warn``. ``executor_image_uri`` replaces the runtime's prebuilt image of
    a package job; ``built_image`` (what ``--build-image`` made) runs in its every container."""
    ti: dict[str, Any] = pools.as_dict(job_body.get("trainingInput"))
    found = pools.Findings()
    pools.refuse_unknown_fields(ti, found, TARGET)
    pools.refuse_unsupported(ti, found, TARGET)
    meta = _metadata(job_body, namespace, found)
    expanded = pools.expand_pools(ti, found, TARGET)
    vertex = pools.as_dict(job_body.get("vertex"))
    pools.refuse_image_flags(ti, vertex, expanded, executor_image_uri, built_image, found)
    if problem := image_problem(ti, vertex, expanded[0].image if expanded else None, executor_image_uri):
        found.refuse(*problem)
    _warn_inexpressible(ti, vertex, expanded, found)
    pytorch = str(vertex.get("framework") or "").lower() == "pytorch"
    shape = PYTORCH if pytorch else TENSORFLOW
    # the operator names TF_CONFIG's roles after the replica types: the primary is Chief or Master
    primary = "Master" if pytorch else primary_task_name(ti).capitalize()
    types = {**({"worker": "Worker"} if pytorch else REPLICA_TYPES), MASTER.key: primary}
    specs: dict[str, Any] = {}
    for pool in expanded:
        if pool.role not in types:
            role = ROLE_BY_KEY[pool.role]
            found.refuse(
                f"$.trainingInput.{role.count_field}",
                f"a PyTorchJob (vertex.framework: pytorch) has a master and workers only, no {role.plural}",
            )
            continue
        container = _container(pool, ti, vertex, found, executor_image_uri, built_image, shape["container"])
        template = {"spec": {"containers": [container]}}
        specs[types[pool.role]] = {"replicas": pool.count, "restartPolicy": "Never", "template": template}
    sched = pools.as_dict(ti.get("scheduling"))
    run_policy: dict[str, Any] = {"activeDeadlineSeconds": deadline_seconds(sched.get("maxRunningTime"))}
    if sched.get("maxWaitTime"):
        run_policy["schedulingPolicy"] = {"scheduleTimeoutSeconds": deadline_seconds(sched["maxWaitTime"])}
        found.warn(
            "maxWaitTime became runPolicy.schedulingPolicy.scheduleTimeoutSeconds, which the training operator "
            "honours only with a gang scheduler (Volcano or scheduler-plugins) installed"
        )
    found.raise_if_any()
    for message in found.warnings:
        warn(message)
    spec = {"runPolicy": run_policy, shape["specs"]: specs}
    return {"apiVersion": "kubeflow.org/v1", "kind": shape["kind"], "metadata": meta, "spec": spec}


MANAGED_BY = "app.kubernetes.io/managed-by"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SUBMISSION_ANNOTATION = "mlsubmit/submission"


def submission_digest(manifest: Mapping[str, Any]) -> str:
    """A digest of the whole manifest but its own annotation: the same JOB submitted with the same definition has
    the same digest (a retry adopts it), any other definition another (refused as taken)."""
    import json

    meta = dict(manifest.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != SUBMISSION_ANNOTATION}
    canonical = {**manifest, "metadata": {**meta, "annotations": annotations}}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return "sha256-" + hashlib.sha256(text.encode()).hexdigest()[:40]


def for_cluster(manifest: Mapping[str, Any], *, namespace: str, queue: str | None = None) -> dict[str, Any]:
    """The manifest ``--target kubernetes`` creates: in ``namespace``, labelled as mlsubmit's, in Kueue's LocalQueue
    ``queue`` when given (suspended until admitted), with the digest that makes a retried create adopt it."""
    meta = dict(manifest.get("metadata") or {})
    labels = {**(meta.get("labels") or {}), MANAGED_BY: "mlsubmit"}
    spec = dict(manifest.get("spec") or {})
    if queue:
        labels[QUEUE_LABEL] = queue
        spec["runPolicy"] = {**(spec.get("runPolicy") or {}), "suspend": True}
    meta.update(namespace=namespace, labels=labels)
    out = {**manifest, "metadata": meta, "spec": spec}
    meta["annotations"] = {**(meta.get("annotations") or {}), SUBMISSION_ANNOTATION: submission_digest(out)}
    return out


def label_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be a Kubernetes label value (a LocalQueue name in Kueue's label), or None."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return f"{value[:80]!r} is not a Kubernetes label value (63 characters at most: letters, digits, '-', '_', '.')"
    return None
