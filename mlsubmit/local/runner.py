"""``local train`` end to end: a checked request in, the primary's exit status out. As gcloud, replicas run
``python -m MODULE ARGS`` from the package's parent with the caller's environment plus TF_CONFIG; added:
PYTHONUNBUFFERED=1 unless set, and with ``--from-package`` an empty temporary folder as working directory."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from mlsubmit.console import current
from mlsubmit.errors import ReplicaFailedError
from mlsubmit.local.cluster import ClusterPlan, free_ports, plan_cluster
from mlsubmit.local.interpreter import import_failure_note, run_warning
from mlsubmit.local.request import LocalTrainRequest, resolve_python
from mlsubmit.local.supervisor import Launch, PrefixedOutput, supervise
from mlsubmit.local.tfconfig import job_description, tf_config, tf_config_json
from mlsubmit.local.vertex_env import vertex_replica_env
from mlsubmit.proc.processes import temporary_directory

if TYPE_CHECKING:
    from mlsubmit.local.containers import ContainerRun


def build_launches(
    request: LocalTrainRequest, plan: ClusterPlan, python: str, cwd: str, environ: Mapping[str, str]
) -> list[Launch]:
    """One :class:`Launch` per replica, in start order, each with its own TF_CONFIG."""
    job = job_description(request.module_name, request.app_args, request.training_input)
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
    environ: Mapping[str, str] | None = None,
    image: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """What ``--dry-run`` shows of each replica :func:`run_local_training` would start (in ``image`` if given)."""
    from mlsubmit.images.context import WORKDIR

    environ = os.environ if environ is None else environ
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
    environ: Mapping[str, str] | None = None,
    container: ContainerRun | None = None,
) -> int:
    """Run the replicas (in ``container``'s image if given) with prefixed output; the primary's exit status."""
    console = current()
    environ = dict(os.environ if environ is None else environ)
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
    """What to say when the trainer could not import a module (:func:`~.interpreter.import_failure_note`)."""
    return import_failure_note(python, request.python_option, output.missing_modules, request.package_dir)


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
        mismatch = run_warning(python, request.python_option, request.training_input, environ)
        if mismatch:
            log(f"WARNING: {mismatch}")
        yield python, cwd
