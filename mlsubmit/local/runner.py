"""``local train`` end to end: a checked request in, the primary's exit status out. As gcloud, replicas run
``python -m MODULE ARGS`` from the package's parent with the caller's environment plus TF_CONFIG; added:
PYTHONUNBUFFERED=1 unless set, and with ``--from-package`` an empty temporary folder as working directory."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mlsubmit.console import current
from mlsubmit.errors import ReplicaFailedError
from mlsubmit.job.vocab import MASTER, ROLES
from mlsubmit.local.cluster import ClusterPlan, Replica, free_ports, plan_cluster
from mlsubmit.local.interpreter import HOW_TO_CHOOSE, run_warning
from mlsubmit.local.request import LocalTrainRequest, resolve_python
from mlsubmit.local.supervisor import Launch, PrefixedOutput, supervise
from mlsubmit.proc.processes import temporary_directory

if TYPE_CHECKING:
    from mlsubmit.local.containers import ContainerRun

# TF_CONFIG task name -> Vertex AI worker pool (the primary is `chief` or `master`).
POOLS = {role.task: f"workerpool{role.pool}" for role in ROLES} | {"master": f"workerpool{MASTER.pool}"}
# Vertex AI's output folders under the job's base output directory (also set for each `local tune` trial)
AIP_DIRS = {"AIP_MODEL_DIR": "model", "AIP_CHECKPOINT_DIR": "checkpoints", "AIP_TENSORBOARD_LOG_DIR": "logs"}


def build_launches(
    request: LocalTrainRequest, plan: ClusterPlan, python: str, cwd: str, environ: Mapping[str, str]
) -> list[Launch]:
    """One :class:`Launch` per replica, in start order, each with its own TF_CONFIG."""
    # TF_CONFIG's "job": the trainingInput (if any) with gcloud's job_name and the app's actual args
    job = {**(request.training_input or {}), "job_name": request.module_name, "args": list(request.app_args)}
    argv = [python, "-m", request.module_name, *request.app_args]
    launches = []
    single = None  # Vertex AI lists a single process in workerpool0, at an address of its own
    if request.vertex_env is not None and plan.cluster is None:
        single = f"localhost:{free_ports(1)[0]}"
    for replica in plan.replicas:
        env = dict(environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        # --target kubernetes: as the Kubeflow training operator writes it (no "job"), and none in a TFJob of one
        # pod in all, evaluators included: its isDistributed (release-1.9, pkg/controller.v1/tensorflow/util.go;
        # SetClusterSpec in tfjob_controller.go returns before writing TF_CONFIG when it is false; read
        # 2026-11-27) counts replicas != 1, and TensorFlow runs the lone pod as a local job.
        if request.operator_env and len(plan.replicas) == 1:
            env.pop("TF_CONFIG", None)  # the pod has none, whatever this shell holds
        else:
            config = tf_config(
                replica, plan.cluster, job, request.trial, single, with_job=not request.operator_env
            )
            env["TF_CONFIG"] = tf_config_json(config)
        if request.vertex_env is not None:  # docs/vertex.md
            env.update(vertex_replica_env(request, plan, replica, job, single))
        launches.append(Launch(name=replica.name, primary=replica.is_primary, argv=argv, env=env, cwd=cwd))
    return launches


def dry_run(
    request: LocalTrainRequest,
    environ: Mapping[str, str],
    image: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """What ``--dry-run`` shows of each replica :func:`run_local_training` would start (in ``image`` if given)."""
    from mlsubmit.images.context import WORKDIR

    if image is not None and "dockerfile" in image:  # the one --build-image writes (images.context)
        argv, cwd = ["python3", "-m", request.module_name, *request.app_args], WORKDIR
    elif image is not None:  # an --image's own entrypoint and folder are not known offline
        name = image["image"]
        argv, cwd = [f"<entrypoint of {name}>", *request.app_args], f"<working directory of {name}>"
    else:
        python = resolve_python(request.python, environ, request.python_option)
        cwd = "<temporary directory>" if request.from_package else str(request.package_dir.parent)
        if request.from_package:
            python = "<virtual environment of the built package>/bin/python"
        argv = [python, "-m", request.module_name, *request.app_args]
    return [
        {
            "name": launch.name,
            "argv": argv,
            "cwd": cwd,
            "tf_config": json.loads(launch.env.get("TF_CONFIG", "null")),
        }
        for launch in build_launches(request, plan_cluster(request), "", cwd, {})
    ]


def run_local_training(
    request: LocalTrainRequest,
    *,
    environ: Mapping[str, str],
    container: ContainerRun | None = None,
) -> int:
    """Run the replicas (in ``container``'s image if given) with prefixed output; the primary's exit status."""
    console = current()
    environ = dict(environ)
    output = PrefixedOutput(console.stdout, console.stderr)
    in_container = container is not None
    with trainer_python(request, environ, console.notify, in_container=in_container) as (python, cwd):
        launches = build_launches(request, plan_cluster(request), python, cwd, environ)
        with contextlib.ExitStack() as stack:
            if container is not None:  # docs/containers.md: each replica in its own container of the image
                from mlsubmit.images.containers import ReplicaContainers
                from mlsubmit.local.containers import container_env, mounts_for

                containers = stack.enter_context(ReplicaContainers(container.engine, container.image))
                mounts, given = mounts_for(request.job_dir), request.vertex_env or {}
                for i, launch in enumerate(launches):
                    env = container_env(launch.env, environ, given=given)
                    argv = containers.argv(launch.name, env, mounts, request.module_name, request.app_args)
                    launches[i] = dataclasses.replace(launch, argv=argv, env=environ)
            try:
                status = supervise(
                    launches,
                    output,
                    grace_period=request.grace_period,
                    max_running_time=request.max_running_time,
                )
            except ReplicaFailedError as err:
                if output.import_failures and not in_container:
                    raise ReplicaFailedError(f"{err}; {import_note(request, python, output)}") from None
                raise
            if status != 0 and output.import_failures and not in_container:
                console.notify(f"ERROR: {import_note(request, python, output)}")
            return status


def import_note(request: LocalTrainRequest, python: str, output: PrefixedOutput) -> str:
    """What to say when the trainer could not import a module (its own: a Python 2 implicit relative import)."""
    package = request.package_dir
    own = sorted(
        name
        for name in output.missing_modules
        if "." not in name
        and ((package / f"{name}.py").is_file() or (package / name / "__init__.py").is_file())
    )
    if own:
        return (
            f"`import {own[0]}` names the trainer's own module {package.name}/{own[0]}: Python 3 has no implicit "
            f"relative imports, so write `from {package.name} import {own[0]}` (or `from . import {own[0]}`)"
        )
    return (
        f"the trainer could not import a module with {python} (from {request.python_option}): install the module "
        f"there, or choose the interpreter with {HOW_TO_CHOOSE}"
    )


@contextlib.contextmanager
def trainer_python(
    request: LocalTrainRequest,
    environ: Mapping[str, str],
    log: Callable[[str], None],
    *,
    in_container: bool = False,
) -> Iterator[tuple[str, str]]:
    """(the trainer's interpreter, the replicas' folder): beside the package, or a cached venv in an empty one."""
    if in_container:  # the image's own python3 runs the trainer: this machine needs none
        yield "python3", str(request.package_dir.parent)
        return
    python = resolve_python(request.python, environ, request.python_option)
    with contextlib.ExitStack() as stack:
        cwd = str(request.package_dir.parent)
        if request.from_package:
            from mlsubmit.local.venv import cache_root, prepare_package_env

            cwd = stack.enter_context(temporary_directory("mlsubmit-run-"))
            python = str(
                prepare_package_env(request.package_dir, python, cache_dir=cache_root(environ), log=log)
            )
        if mismatch := run_warning(python, request.python_option, request.training_input, environ):
            log(f"WARNING: {mismatch}")
        yield python, cwd


# As the service sets TF_CONFIG and gcloud's MakeProcess keeps it (docs/local.md;
# https://cloud.google.com/ai-platform/training/docs/distributed-training-details): `cluster` with `task` (the
# Estimator refuses a lone non-`worker` task), `task.trial` a string, `job`, `"environment": "cloud"`.
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


# `--target vertex` (docs/vertex.md), as documented in https://cloud.google.com/vertex-ai/docs/training/distributed-training
# and .../code-requirements, "Environment variables", and aiplatform v1 CustomJobSpec.baseOutputDirectory; checked
# 2026-11-24.
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
    spec = tf_config(Replica(POOLS[replica.role], replica.index, None), cluster, job, request.trial)
    out = dict(request.vertex_env or {})
    out["CLUSTER_SPEC"] = tf_config_json(spec)
    if request.job_dir:  # as on Vertex with baseOutputDirectory
        base = request.job_dir.rstrip("/") + (f"/{request.trial}" if request.trial is not None else "")
        out |= {variable: f"{base}/{folder}/" for variable, folder in AIP_DIRS.items()}
    if replica.is_primary or replica.role == "worker":
        host, _, port = cluster["workerpool0"][0].rpartition(":")
        out["MASTER_ADDR"] = host
        out["MASTER_PORT"] = port
        out["WORLD_SIZE"] = str(1 + len(cluster.get("workerpool1", [])))
        out["RANK"] = "0" if replica.is_primary else str(1 + replica.index)
    return out
