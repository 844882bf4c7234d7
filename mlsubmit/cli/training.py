"""`mlsubmit training JOB [flags] -- USER_ARGS`: every flag of `gcloud ai-platform jobs submit training`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.common import AppArgsCommand, environment, given_options
from mlsubmit.cli.flagtypes import AcceleratorType, CommaList, Duration, GcsUrl, KeyValues, ScaleTier
from mlsubmit.cli.image_options import image_options, image_step
from mlsubmit.cli.options import (
    F,
    OptionTable,
    config_option,
    connection_options,
    dry_run_option,
    env_option,
    fallback_regions_option,
    format_option,
    interrupt_option,
    job_dir_option,
    module_name_option,
    option_table,
    package_path_option,
    parameter_server_count_option,
    region_option,
    target_option,
    worker_count_option,
)
from mlsubmit.errors import UsageError
from mlsubmit.job.merge import TrainingFlags
from mlsubmit.job.validate import TrainingRequest

if TYPE_CHECKING:
    from mlsubmit.submit import Plan

ROLE_HELP = {"master": "the master", "worker": "each worker", "parameter-server": "each parameter server"}


def role_options(f: Any) -> Any:
    for role, who in reversed(ROLE_HELP.items()):
        f = click.option(
            f"--{role}-image-uri", default=None, metavar="IMAGE", help=f"Container image for {who}."
        )(f)
        f = click.option(
            f"--{role}-accelerator",
            type=AcceleratorType(),
            default=None,
            help=f"Accelerators for {who}: type=nvidia-tesla-t4,count=1.",
        )(f)
    return f


# Vertex AI flags (README "Moving to Vertex AI"): (flag, click kwargs). --executor-image-uri is further down.
VERTEX_OPTIONS: OptionTable = (
    (
        "--scheduling-strategy",
        {
            "type": click.Choice(["standard", "spot", "flex-start"], case_sensitive=False),
            "help": "Vertex: on-demand, Spot VMs, or Flex-start (Dynamic Workload Scheduler; keeps maxWaitTime).",
        },
    ),
    (
        "--restart-job-on-worker-restart",
        {"is_flag": True, "default": None, "help": "Vertex: restart the whole job when a worker restarts."},
    ),
    (
        "--disable-retries",
        {"is_flag": True, "default": None, "help": "Vertex: no retries on internal errors."},
    ),
    (
        "--reservation-affinity",
        {
            "type": click.Choice(["any", "no", "specific"], case_sensitive=False),
            "help": "Vertex: which Compute Engine reservations every pool may use.",
        },
    ),
    ("--reservation", {"metavar": "NAME", "help": "Vertex: consume this reservation (resource name)."}),
    ("--persistent-resource-id", {"metavar": "ID", "help": "Vertex: run on this persistent resource."}),
    (
        "--tensorboard",
        {"metavar": "NAME", "help": "Vertex: projects/P/locations/L/tensorboards/ID to write logs to."},
    ),
    ("--experiment", {"metavar": "NAME", "help": "Vertex: the experiment's full resource name."}),
    ("--experiment-run", {"metavar": "NAME", "help": "Vertex: the experiment run's full resource name."}),
    (
        "--enable-dashboard-access",
        {"is_flag": True, "default": None, "help": "Vertex: access to the chief's dashboard."},
    ),
    ("--network", {"metavar": "NETWORK", "help": "projects/P/global/networks/NAME to peer the job with."}),
)
# After the shared --env and --fallback-regions in --help.
VERTEX_START_OPTIONS: OptionTable = (
    (
        "--max-queue-wait",
        {
            "type": Duration(),
            "metavar": "DURATION",
            "help": "Vertex: cancel a job QUEUED this long (e.g. 30m) and try the next candidate (not FLEX_START).",
        },
    ),
    (
        "--framework",
        {
            "type": click.Choice(["tensorflow", "pytorch", "scikit-learn", "xgboost"], case_sensitive=False),
            "help": "Vertex: framework of the prebuilt executor image.",
        },
    ),
    ("--framework-version", {"metavar": "X.Y", "help": "Vertex: framework version of the prebuilt image."}),
)


def vertex_options(f: F) -> F:
    """The Vertex AI options, with the shared ``--env`` and ``--fallback-regions`` in their --help place."""
    f = option_table(VERTEX_START_OPTIONS)(f)
    f = fallback_regions_option(
        help='Vertex: regions to fail over to when the job cannot start (README "Getting jobs to start").'
    )(f)
    f = env_option()(f)
    return option_table(VERTEX_OPTIONS)(f)


def build_request(
    ctx: click.Context, job: str, opts: dict[str, Any], exclude: tuple[str, ...] = ()
) -> TrainingRequest:
    """The typed request behind `training` (and `export`, which takes the same flags): only typed flags count.
    ``submit.plan`` merges it, checks it by its target's rules and translates it, once."""
    given = given_options(ctx)
    for name in ("job", *exclude):
        given.pop(name, None)
    if "labels" in given:
        given["labels"] = {k: v for part in given["labels"] for k, v in part.items()}
    return TrainingRequest(
        flags=TrainingFlags(job_id=job, given=given, user_args=ctx.meta.get("user_args")),
        config=opts["config"],
        package_path=opts["package_path"],
        packages=[p for part in opts["packages"] for p in part],
        staging_bucket=opts["staging_bucket"],
        project=opts["project"],
        env=environment(),
        staging_layout=opts.get("staging_layout") or "shared",
    )


def trainer_checkup(request: TrainingRequest) -> Callable[[Plan], None]:
    """What prints, for the plan of ``request``, one warning line for what the trainer checkup finds that fails
    on the plan's target (README "Migrating a legacy job"): from the files the plan's sdist build walked and
    read, so the package is read once."""

    def check(plan: Plan) -> None:
        if not request.package_path:
            return
        from pathlib import Path

        from mlsubmit.cli.output import status
        from mlsubmit.migrate.summary import trainer_notes

        sdist = Path(plan.sources[-1])  # the sdist of --package-path, built last (submit.plan)
        # the planned image's base (follow.image_step.JobImageStep.image), judged as migrate judges it
        base = getattr(getattr(getattr(plan.image, "image", None), "spec", None), "base", None)
        notes = trainer_notes(
            plan.job, plan.target, Path(request.package_path), plan.walked, sdist=sdist, image_base=base
        )
        for note in notes:
            status(f"WARNING: {note}")

    return check


@click.command(cls=AppArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("job")
@config_option()
@package_path_option()
@click.option("--packages", type=CommaList(), multiple=True, help="More packages: local files or gs:// URIs.")
@module_name_option()
@region_option()
@click.option("--staging-bucket", type=GcsUrl(), default=None, help="Bucket to stage packages in.")
@job_dir_option()
@click.option(
    "--staging-layout",
    type=click.Choice(["shared", "gcloud"]),
    default="shared",
    show_default=True,
    help="shared: gs://BUCKET/mlsubmit/packages/DIGEST/NAME, reused by every job; gcloud: per job, as gcloud.",
)
@click.option(
    "--scale-tier",
    type=ScaleTier(),
    default=None,
    help="basic, basic-gpu, basic-tpu, custom, premium-1 or standard-1.",
)
@click.option("--runtime-version", default=None, metavar="VERSION", help="AI Platform runtime, e.g. 2.11.")
@click.option("--python-version", default=None, metavar="VERSION", help="Python version, e.g. 3.7.")
@click.option("--service-account", default=None, metavar="EMAIL", help="Service account the job runs as.")
@click.option("--enable-web-access", is_flag=True, default=None, help="Interactive shell access to the job.")
@click.option("--labels", type=KeyValues(), multiple=True, help="KEY=VALUE,... (replaces the file's labels).")
@click.option(
    "--master-machine-type", default=None, metavar="TYPE", help="Master machine type (CUSTOM tier)."
)
@worker_count_option()
@click.option("--worker-machine-type", default=None, metavar="TYPE", help="Worker machine type.")
@parameter_server_count_option()
@click.option("--parameter-server-machine-type", default=None, metavar="TYPE", help="Parameter server type.")
@role_options
@click.option(
    "--use-chief-in-tf-config",
    type=click.BOOL,
    default=None,
    metavar="true|false",
    help="Name the primary `chief` in TF_CONFIG (custom containers).",
)
@click.option("--kms-key", default=None, help="KMS key id or full name projects/.../cryptoKeys/KEY.")
@click.option("--kms-keyring", default=None, help="KMS key ring (with a short --kms-key).")
@click.option("--kms-location", default=None, help="KMS location (with a short --kms-key).")
@click.option("--kms-project", default=None, help="KMS project (default: the job's project).")
@click.option("--async", "async_", is_flag=True, default=False, help="Return after submitting (the default).")
@click.option("--stream-logs", is_flag=True, default=False, help="Stream the job's logs until it ends.")
@click.option(
    "--wait", is_flag=True, default=False, help="Wait for the job to end; exit 0 only if it succeeded."
)
@interrupt_option(
    help="Ctrl-C cancels the job (with --wait/--stream-logs, or the failover's live attempt) or its Cloud Build "
    "(--build-image)."
)
@target_option()
@click.option(
    "--executor-image-uri", default=None, help="Vertex: prebuilt executor image (default: from the runtime)."
)
@vertex_options
@image_options
@dry_run_option(help="Validate and print the job body; upload nothing, create nothing.")
@click.option(
    "--preflight/--no-preflight",
    default=None,
    help="Vertex: read-only checks before any upload or create (on by default; a --dry-run runs them only "
    "with --preflight).",
)
@connection_options
@format_option
@click.pass_context
def training(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Submit a training job: mlsubmit training JOB [flags] -- [USER_ARGS]."""
    if opts["async_"] and (opts["stream_logs"] or opts["wait"]):
        raise UsageError("--async cannot be combined with --stream-logs or --wait; pick one.")
    request = build_request(ctx, job, opts, exclude=("preflight",))
    target = opts["target"].lower()
    checkup = trainer_checkup(request)
    fmt = opts["fmt"].lower()
    from mlsubmit.cli.output import status

    if opts["preflight"] and target != "vertex":
        status("WARNING: --preflight checks Vertex AI jobs only (--target vertex); nothing to check here.")
    if opts["dry_run"] and opts["preflight"] and target == "vertex":
        from mlsubmit.cli.preflight import preflight_alone

        preflight_alone(request, opts, fmt=fmt, then_emit_body=True, checkup=checkup)
        return
    if opts["dry_run"]:
        from mlsubmit.cli.output import emit
        from mlsubmit.submit import dry_run

        planned = dry_run(
            request,
            target=target,
            executor_image_uri=opts["executor_image_uri"],
            image=image_step(opts),
            inspect=checkup,
        )
        for warning in planned.warnings:
            status(f"WARNING: {warning}")
        # with --build-image: the image (Dockerfile, content tag, name, build request) beside the job
        emit(
            planned.body
            if planned.image_view is None
            else {"image": planned.image_view, "job": planned.body},
            fmt,
        )
        return
    from mlsubmit.cli.submitting import submit_and_report

    follow = "stream-logs" if opts["stream_logs"] else "wait" if opts["wait"] else None
    hook = None
    if target == "vertex" and opts["preflight"] is not False:
        from mlsubmit.cli.preflight import checked

        def hook(plan: Any, job_settings: Any) -> dict[str, Any]:
            # with failover candidates a refusal goes to stderr only: stdout gets the job the failover settles on
            return checked(plan, job_settings, fmt="text" if len(plan.candidates) > 1 else fmt)

    submit_and_report(
        request,
        target=target,
        executor_image_uri=opts["executor_image_uri"],
        connection={k: opts[k] for k in ("project", "access_token_file", "api_endpoint")},
        fmt=fmt,
        follow=follow,
        cancel_on_interrupt=opts["cancel_on_interrupt"],
        max_queue_wait=opts["max_queue_wait"],
        image=image_step(opts, cancel_on_interrupt=opts["cancel_on_interrupt"]),
        preflight=hook,
        checkup=checkup,
    )


def with_training_flags(
    name: str,
    callback: Any,
    *,
    help: str,
    drop: frozenset[str],
    own: tuple[click.Parameter, ...] = (),
) -> click.Command:
    """A command that takes `training`'s flags (but ``drop``), plus its ``own`` options where training has no
    option of that name: `export` and `preflight` read a job exactly as `training` does."""
    params: list[click.Parameter] = [p for p in training.params if p.name not in drop]
    names = {p.name for p in params}
    params += [p for p in own if p.name not in names]
    return AppArgsCommand(
        name=name,
        callback=click.pass_context(callback),
        params=params,
        help=help,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
