"""`mlsubmit local train [flags] -- USER_ARGS`: gcloud's `ai-platform local train`, supervised and stricter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.common import AppArgsCommand, environment
from mlsubmit.cli.options import (
    OptionTable,
    base_image_option,
    builder_option,
    config_option,
    dry_run_option,
    env_option,
    job_dir_option,
    module_name_option,
    option_table,
    output_image_uri_option,
    package_path_option,
    parameter_server_count_option,
    target_option,
    worker_count_option,
)

if TYPE_CHECKING:
    from mlsubmit.job.jobfile import JobFile
    from mlsubmit.local.containers import ImageFlags
    from mlsubmit.local.request import LocalTrainRequest


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def local() -> None:
    """Run training jobs on this machine."""


# `local train`'s own options, in --help order around the shared ones (cli/options.py); click's defaults (None,
# False for a flag) mean "not given", which the merge needs.
CLUSTER_OPTIONS: OptionTable = (
    (
        "--evaluator-count",
        {"type": click.IntRange(min=0), "help": "Evaluators (with --distributed; default 0)."},
    ),
    (
        "--start-port",
        {
            "type": click.IntRange(1, 65535),
            "help": "First of a contiguous block of ports, as gcloud. Default: free ports chosen for you.",
        },
    ),
)
RUN_OPTIONS: OptionTable = (
    (
        "--python",
        {
            "metavar": "PATH",
            "help": "Interpreter for the replicas (else MLSUBMIT_LOCAL_PYTHON, else gcloud's "
            "ml_engine/local_python, else python3 on PATH).",
        },
    ),
    (
        "--trial",
        {
            "type": click.IntRange(min=1),
            "help": "Simulate hyperparameter trial N: sets task.trial in TF_CONFIG.",
        },
    ),
    (
        "--primary-name",
        {
            "type": click.Choice(["chief", "master"]),
            "help": "TF_CONFIG name of the primary replica (default: chief, or master where the config says so).",
        },
    ),
    (
        "--evaluators-in-cluster",
        {
            "is_flag": True,
            "help": "Give evaluators ports and list them in TF_CONFIG's cluster (the service does not).",
        },
    ),
    (
        "--max-running-time",
        {
            "metavar": "DURATION",
            "help": "Stop the run after this long, e.g. 30s or 3600s (default: scheduling.maxRunningTime).",
        },
    ),
    (
        "--grace-period",
        {
            "type": click.FloatRange(min=0),
            "metavar": "SECONDS",
            "help": "Between TERM and KILL when replicas are stopped. Default: 1.",
        },
    ),
    (
        "--from-package",
        {
            "is_flag": True,
            "help": "Build the package as `training` would, install it into a cached venv and run it from there.",
        },
    ),
)


IMAGE_OPTIONS: OptionTable = (
    (
        "--image",
        {
            "metavar": "IMAGE",
            "help": 'Run every replica inside this image with a local engine (README "Containers").',
        },
    ),
    (
        "--build-image",
        {
            "is_flag": True,
            "help": "Build the trainer's image (as `training --build-image`) and run every replica inside it.",
        },
    ),
)


@local.command(
    "train",
    cls=AppArgsCommand,
    options_metavar="[OPTIONS] [-- USER_ARGS...]",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@package_path_option(help="Trainer package folder (holds __init__.py). Default: the current directory.")
@module_name_option(help="Module to run, e.g. trainer.task (default: pythonModule of --config).")
@config_option(
    help="The Job file `training` takes: counts, args, jobDir, scheduling come from it; flags override."
)
@click.option(
    "--distributed",
    is_flag=True,
    help="Run a cluster: a chief plus workers, parameter servers and evaluators, each with TF_CONFIG.",
)
@worker_count_option(help="Workers (with --distributed; default 2 without --config).")
@parameter_server_count_option(help="Parameter servers (with --distributed; default 2 without --config).")
@option_table(CLUSTER_OPTIONS)
@job_dir_option(local=True, help="Output directory (local or gs://), passed to the app as --job-dir.")
@option_table(RUN_OPTIONS)
@target_option(
    default=None,
    help="vertex: give each replica Vertex AI's environment (CLUSTER_SPEC, AIP_*, MASTER_ADDR...); "
    "a config with a vertex: block implies it.",
)
@env_option(help="KEY=VALUE for the trainer (with --target vertex); repeatable.")
@option_table(IMAGE_OPTIONS)
@output_image_uri_option(
    help="With --build-image: push there under the content tag (reused when present). Default: local only."
)
@base_image_option(
    help='With --build-image: the image to build on (default: from runtimeVersion, README "Containers").'
)
@builder_option(help="The local engine that builds and runs the image (auto: the first that answers).")
@dry_run_option(help="Print each replica's command and TF_CONFIG as JSON; start nothing.")
@click.pass_context
def train(ctx: click.Context, /, **opts: Any) -> None:
    """Run a trainer locally, as `gcloud ai-platform local train` does, with arguments for it after `--`.

    \b
    mlsubmit local train --package-path trainer --module-name trainer.task \\
        --distributed --worker-count 2 --parameter-server-count 1 --job-dir out -- --epochs 3
    """
    env = environment()
    request, _ = local_train_request(ctx, opts, env)

    if opts["dry_run"]:
        from dataclasses import asdict

        from mlsubmit.local.containers import dry_run_image
        from mlsubmit.local.runner import dry_run

        shown: dict[str, Any] = {"replicas": [asdict(r) for r in dry_run(request, env)]}
        image = dry_run_image(
            _image_flags(opts),
            package_dir=request.package_dir,
            module=request.module_name,
            training_input=request.training_input,
            job_dir=request.job_dir,
        )
        if image is not None:  # the replicas would run in it (README "Containers")
            shown["image"] = image
        click.echo(json.dumps(shown, indent=2))
        return

    from mlsubmit.cli.output import make_console
    from mlsubmit.local.containers import prepare_image
    from mlsubmit.local.runner import run_local_training

    console = make_console()
    if request.from_package and (opts["image"] or opts["build_image"]):
        from mlsubmit.errors import UsageError

        raise UsageError(
            "--from-package runs the package from a local venv; the image already holds it: drop one"
        )
    container = prepare_image(  # README "Containers": None unless --image or --build-image
        _image_flags(opts),
        package_dir=request.package_dir,
        module=request.module_name,
        training_input=request.training_input,
        env=env,
        output=lambda line: console.notify(f"[build] {line}"),
        log=console.notify,
        job_dir=request.job_dir,
    )
    status = run_local_training(request, console, environ=env, container=container)
    if status != 0:
        # Like gcloud, the primary's status is ours; unlike gcloud, say so.
        click.echo(f"ERROR: [{request.primary_name}] exited with status {status}.", err=True)
        ctx.exit(status)


def _image_flags(opts: dict[str, Any]) -> ImageFlags:
    from mlsubmit.local.containers import ImageFlags

    return ImageFlags(
        image=opts["image"],
        build_image=opts["build_image"],
        output_image_uri=opts["output_image_uri"],
        base_image=opts["base_image"],
        builder=opts["builder"],
    )


def local_train_request(
    ctx: click.Context, opts: dict[str, Any], env: dict[str, str]
) -> tuple[LocalTrainRequest, JobFile | None]:
    """The checked request of `local train`'s options (and of `local tune`, which takes them too), with the
    --config file it read: the file meets `training`'s schema and rules (Vertex AI's with --target vertex or a
    vertex: block), then the flags are merged over it as `training` merges them. Warnings go to stderr."""
    from dataclasses import fields

    from mlsubmit.local.request import LocalTrainFlags, resolve_request

    job_file = None
    if opts["config"] is not None:
        from mlsubmit.job.validate import check_config_file
        from mlsubmit.targets.vertex_rules import rules_for_target

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
    for warning in request.warnings:
        click.echo(f"WARNING: {warning}", err=True)
    return request, job_file


def _add_tune() -> None:
    from mlsubmit.cli.tune import build_tune  # `local tune` takes every `local train` option

    local.add_command(build_tune(train))


_add_tune()
