"""The local run group of `local train` and `local tune` (a study runs each trial as `local train` would), the
image options of `local train`, and the checked request of their values (:func:`local_train_request`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.options import (
    F,
    base_image_option,
    builder_option,
    compose,
    config_option,
    env_option,
    module_name_option,
    output_image_uri_option,
    package_path_option,
    parameter_server_count_option,
    target_option,
    worker_count_option,
)

if TYPE_CHECKING:
    from mlsubmit.job.jobfile import JobFile
    from mlsubmit.local.request import LocalTrainRequest

# The local run group in --help order: the code, the cluster, the run's limits and environment; click's defaults
# (None, False for a flag) mean "not given", which the merge needs.
opt = click.option
TRIAL_OPTION = opt(  # `local train` only: a study numbers its trials itself
    "--trial",
    type=click.IntRange(min=1),
    help="Simulate hyperparameter trial N: sets task.trial in TF_CONFIG.",
)
LOCAL_RUN_OPTIONS = (
    package_path_option(help="Trainer package folder (holds __init__.py). Default: the current directory."),
    module_name_option(help="Module to run, e.g. trainer.task (default: pythonModule of --config)."),
    config_option(
        help="The Job file `training` takes: counts, args, jobDir, scheduling come from it; flags override."
    ),
    opt(
        "--distributed",
        is_flag=True,
        help="Run a cluster: a chief plus workers, parameter servers and evaluators, each with TF_CONFIG.",
    ),
    worker_count_option(help="Workers (with --distributed; default 2 without --config)."),
    parameter_server_count_option(help="Parameter servers (with --distributed; default 2 without --config)."),
    opt("--evaluator-count", type=click.IntRange(min=0), help="Evaluators (with --distributed; default 0)."),
    opt(
        "--start-port",
        type=click.IntRange(1, 65535),
        help="First of a contiguous block of ports, as gcloud. Default: free ports chosen for you.",
    ),
    opt(
        "--job-dir", metavar="DIR", help="Output directory (local or gs://), passed to the app as --job-dir."
    ),
    opt(
        "--python",
        metavar="PATH",
        help="Interpreter for the replicas (else MLSUBMIT_LOCAL_PYTHON, else gcloud's ml_engine/local_python, "
        "else python3 on PATH).",
    ),
    TRIAL_OPTION,
    opt(
        "--primary-name",
        type=click.Choice(["chief", "master"]),
        help="TF_CONFIG name of the primary replica (default: chief, or master where the config says so).",
    ),
    opt(
        "--evaluators-in-cluster",
        is_flag=True,
        help="Give evaluators ports and list them in TF_CONFIG's cluster (the service does not).",
    ),
    opt(
        "--max-running-time",
        metavar="DURATION",
        help="Stop the run after this long, e.g. 30s or 3600s (default: scheduling.maxRunningTime).",
    ),
    opt(
        "--grace-period",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="Between TERM and KILL when replicas are stopped. Default: 1.",
    ),
    opt(
        "--from-package",
        is_flag=True,
        help="Build the package as `training` would, install it into a cached venv and run it from there.",
    ),
    target_option(
        default=None,
        help="vertex: give each replica Vertex AI's environment (CLUSTER_SPEC, AIP_*, MASTER_ADDR...); "
        "a config with a vertex: block implies it. kubernetes: TF_CONFIG as the training operator writes it "
        "(docs/kubernetes.md).",
    ),
    env_option(help="KEY=VALUE for the trainer (with --target vertex); repeatable."),
)


def local_run_options(*, trial: bool) -> Callable[[F], F]:
    """The local run group; ``trial`` keeps ``--trial`` (`local train`; a study numbers its trials)."""
    return compose(*(option for option in LOCAL_RUN_OPTIONS if trial or option is not TRIAL_OPTION))


# The image group of `local train`: run the replicas in an image, or build the trainer's and run it there.
local_image_options = compose(
    opt(
        "--image",
        metavar="IMAGE",
        help="Run every replica inside this image with a local engine (docs/containers.md).",
    ),
    opt(
        "--build-image",
        is_flag=True,
        help="Build the trainer's image (as `training --build-image`) and run every replica inside it.",
    ),
    output_image_uri_option(
        help="With --build-image: push there under the content tag (reused when present). Default: local only."
    ),
    base_image_option(
        help="With --build-image: the image to build on (default: from runtimeVersion, docs/containers.md)."
    ),
    builder_option(help="The local engine that builds and runs the image (auto: the first that answers)."),
)


def local_train_request(
    ctx: click.Context, opts: dict[str, Any], env: dict[str, str]
) -> tuple[LocalTrainRequest, JobFile | None]:
    """The checked request of `local train`'s options (and the file it read), merged as `training` does."""
    from dataclasses import fields

    from mlsubmit.cli.output import warn
    from mlsubmit.local.request import LocalTrainFlags, resolve_request

    job_file = None
    if opts["config"] is not None:
        from mlsubmit.job.validate import check_config_file
        from mlsubmit.targets.translate import rules_for_target

        job_file = check_config_file(opts["config"], target_rules=rules_for_target(opts["target"]))
    # Every option is a LocalTrainFlags field of the same name; `local tune` numbers its trials itself (no --trial).
    given = {f.name: opts.get(f.name) for f in fields(LocalTrainFlags) if f.name not in ("user_args", "env")}
    user_args = ctx.meta.get("user_args")
    flags = LocalTrainFlags(
        **{k: v for k, v in given.items() if v is not None},
        user_args=None if user_args is None else tuple(user_args),
        env=tuple(opts["env"]),
    )
    request = resolve_request(flags, job_file.data if job_file else None, cwd=Path.cwd(), environ=env)
    warn(request.warnings)
    return request, job_file
