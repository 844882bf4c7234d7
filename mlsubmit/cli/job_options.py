"""The option groups of the commands that read a job as `training` does (`training`, `export`, `preflight`,
`migrate`), composed by :func:`job_command`, and the request of their values (:func:`build_request`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.flagtypes import AcceleratorType, CommaList, GcsUrl, KeyValues, ScaleTier
from mlsubmit.cli.options import (
    AppArgsCommand,
    compose,
    config_option,
    env_option,
    failover_options,
    follow_options,
    image_options,
    job_dir_option,
    module_name_option,
    package_path_option,
    parameter_server_count_option,
    region_option,
    target_option,
    worker_count_option,
)
from mlsubmit.job.vocab import (
    FRAMEWORKS,
    MASTER,
    PARAMETER_SERVER,
    RESERVATION_AFFINITIES,
    SCALE_TIERS,
    SCHEDULING_STRATEGIES,
    STAGING_LAYOUTS,
    WORKER,
    flag_spelling,
)

if TYPE_CHECKING:
    from mlsubmit.api import Call

opt = click.option
# a flag left out is None, not False: the file's value stands
flag = functools.partial(click.option, is_flag=True, default=None)
_TIERS = sorted(map(flag_spelling, SCALE_TIERS))  # as gcloud lists them: basic, basic-gpu, ... standard-1


# The job group (with the packages in its --help place): the config file, the code, where it runs and stages,
# the runtime, who it runs as, its labels.
job_options = compose(
    config_option(),
    package_path_option(),
    opt("--packages", type=CommaList(), multiple=True, help="More packages: local files or gs:// URIs."),
    module_name_option(),
    region_option(),
    opt("--staging-bucket", type=GcsUrl(), help="Bucket to stage packages in."),
    job_dir_option(),
    opt(
        "--staging-layout",
        type=click.Choice(STAGING_LAYOUTS),
        default="shared",
        show_default=True,
        help="shared: gs://BUCKET/mlsubmit/packages/DIGEST/NAME, reused by every job; gcloud: per job, "
        "as gcloud.",
    ),
    opt("--scale-tier", type=ScaleTier(), help=f"{', '.join(_TIERS[:-1])} or {_TIERS[-1]}."),
    opt("--runtime-version", metavar="VERSION", help="AI Platform runtime, e.g. 2.11."),
    opt("--python-version", metavar="VERSION", help="Python version, e.g. 3.7."),
    opt("--service-account", metavar="EMAIL", help="Service account the job runs as."),
    flag("--enable-web-access", help="Interactive shell access to the job."),
    opt("--labels", type=KeyValues(), multiple=True, help="KEY=VALUE,... (replaces the file's labels)."),
)


# The roles with flags of their own, and how a flag's help names their replicas.
ROLE_HELP = ((MASTER, "the master"), (WORKER, "each worker"), (PARAMETER_SERVER, "each parameter server"))
ACCELERATORS_HELP = "Accelerators for {}: type=nvidia-tesla-t4,count=1."


# The machines group: each role's machine type, count, accelerators and image.
machine_options = compose(
    opt("--master-machine-type", metavar="TYPE", help="Master machine type (CUSTOM tier)."),
    worker_count_option(),
    opt("--worker-machine-type", metavar="TYPE", help="Worker machine type."),
    parameter_server_count_option(),
    opt("--parameter-server-machine-type", metavar="TYPE", help="Parameter server type."),
    *(
        option
        for role, who in ROLE_HELP
        for option in (
            opt(f"--{role.flag}-accelerator", type=AcceleratorType(), help=ACCELERATORS_HELP.format(who)),
            opt(f"--{role.flag}-image-uri", metavar="IMAGE", help=f"Container image for {who}."),
        )
    ),
    opt(
        "--use-chief-in-tf-config",
        type=click.BOOL,
        metavar="true|false",
        help="Name the primary `chief` in TF_CONFIG (custom containers).",
    ),
)


# The encryption group: the customer-managed key the job's data is encrypted with.
encryption_options = compose(
    opt("--kms-key", help="KMS key id or full name projects/.../cryptoKeys/KEY."),
    opt("--kms-keyring", help="KMS key ring (with a short --kms-key)."),
    opt("--kms-location", help="KMS location (with a short --kms-key)."),
    opt("--kms-project", help="KMS project (default: the job's project)."),
)


# Vertex AI flags (docs/vertex.md): the job's own, then (after the failover group) the prebuilt image's.
VERTEX_OPTIONS = (
    opt("--executor-image-uri", help="Vertex: prebuilt executor image (default: from the runtime)."),
    opt(
        "--scheduling-strategy",
        type=click.Choice(tuple(map(flag_spelling, SCHEDULING_STRATEGIES)), case_sensitive=False),
        help="Vertex: on-demand, Spot VMs, or Flex-start (Dynamic Workload Scheduler; keeps maxWaitTime).",
    ),
    flag("--restart-job-on-worker-restart", help="Vertex: restart the whole job when a worker restarts."),
    flag("--disable-retries", help="Vertex: no retries on internal errors."),
    opt(
        "--reservation-affinity",
        type=click.Choice(tuple(RESERVATION_AFFINITIES), case_sensitive=False),
        help="Vertex: which Compute Engine reservations every pool may use.",
    ),
    opt("--reservation", metavar="NAME", help="Vertex: consume this reservation (resource name)."),
    opt("--persistent-resource-id", metavar="ID", help="Vertex: run on this persistent resource."),
    opt(
        "--tensorboard",
        metavar="NAME",
        help="Vertex: projects/P/locations/L/tensorboards/ID to write logs to.",
    ),
    opt("--experiment", metavar="NAME", help="Vertex: the experiment's full resource name."),
    opt("--experiment-run", metavar="NAME", help="Vertex: the experiment run's full resource name."),
    flag("--enable-dashboard-access", help="Vertex: access to the chief's dashboard."),
    opt("--network", metavar="NETWORK", help="projects/P/global/networks/NAME to peer the job with."),
    env_option(),
)
FRAMEWORK_OPTIONS = (
    opt(
        "--framework",
        type=click.Choice(FRAMEWORKS, case_sensitive=False),
        help="Vertex: framework of the prebuilt executor image.",
    ),
    opt("--framework-version", metavar="X.Y", help="Vertex: framework version of the prebuilt image."),
)


# The cost group of `training` (docs/cost.md; --max-cost refuses in submit.plan, before any upload).
cost_options = compose(
    click.option(
        "--max-cost",
        type=click.FloatRange(min=0, min_open=True, max=1e9),
        metavar="USD",
        help="Refuse (exit 2, nothing uploaded) when the job's upper bound passes USD (docs/cost.md).",
    ),
    click.option(
        "--expected-hours",
        type=click.FloatRange(min=0, max=1e6),
        metavar="HOURS",
        help="Show the expected cost of a run this long beside the upper bound.",
    ),
    click.option(
        "--prices",
        type=click.Path(dir_okay=False),
        envvar="MLSUBMIT_PRICES",
        metavar="FILE",
        help="A price table laid over the shipped one (env MLSUBMIT_PRICES; docs/cost.md).",
    ),
)


def job_command(
    name: str, callback: Callable[..., Any], *groups: Callable[[Any], Any], submits: bool = False
) -> click.Command:
    """``mlsubmit NAME [OPTIONS] JOB [-- USER_ARGS]``: the job groups in their --help order (``submits``, for
    `training`: with the follow group, --target and the failover group), then ``groups``; ``callback(ctx, job, **opts)``."""
    from mlsubmit.cli import COMMANDS

    follow = [follow_options, target_option()] if submits else []
    vertex = [*VERTEX_OPTIONS, *([failover_options] if submits else []), *FRAMEWORK_OPTIONS]
    job_groups = [job_options, machine_options, encryption_options, *follow, *vertex, image_options]
    decorated = compose(click.argument("job"), *job_groups, *groups)(click.pass_context(callback))
    return click.command(name, cls=AppArgsCommand, help=COMMANDS[name])(decorated)


def build_request(
    ctx: click.Context, job: str, exclude: tuple[str, ...] = (), target: str | None = None
) -> Call:
    """The request of the options the user typed (less ``exclude``), built by ``mlsubmit.api.call``: a flag left at
    its default never overrides the file."""
    from mlsubmit.api import call

    typed = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
    skip = ("job", *exclude)
    given = {k: v for k, v in ctx.params.items() if k not in skip and ctx.get_parameter_source(k) in typed}
    return call(job, given, user_args=ctx.meta.get("user_args"), env=dict(os.environ), target=target)
