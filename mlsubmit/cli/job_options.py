"""The option groups of the commands that read a job as `training` does (`training`, `export`, `preflight`,
`migrate`): job (with packages), machines, encryption and Vertex; the groups these commands share with others
(follow, failover, image, submit, connection, output) are in ``cli/options.py``.

Each command composes the groups it needs with :func:`job_command_options`; none copies another command's
options, so what one command offers never changes another's (tests/unit/cli/test_options.py). The groups' values
become the typed request here too (:func:`build_request`), as twine's ``Settings`` registers its options and
builds itself from them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.common import AppArgsCommand, environment, given_options
from mlsubmit.cli.flagtypes import AcceleratorType, CommaList, GcsUrl, KeyValues, ScaleTier
from mlsubmit.cli.options import (
    F,
    OptionTable,
    compose,
    config_option,
    env_option,
    failover_options,
    follow_options,
    image_options,
    job_dir_option,
    module_name_option,
    option_table,
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

_TIERS = sorted(map(flag_spelling, SCALE_TIERS))  # as gcloud lists them: basic, basic-gpu, ... standard-1
STAGING_OPTIONS: OptionTable = (
    ("--staging-bucket", {"type": GcsUrl(), "default": None, "help": "Bucket to stage packages in."}),
)
RUNTIME_OPTIONS: OptionTable = (
    (
        "--staging-layout",
        {
            "type": click.Choice(STAGING_LAYOUTS),
            "default": "shared",
            "show_default": True,
            "help": "shared: gs://BUCKET/mlsubmit/packages/DIGEST/NAME, reused by every job; gcloud: per job, "
            "as gcloud.",
        },
    ),
    (
        "--scale-tier",
        {
            "type": ScaleTier(),
            "default": None,
            "help": f"{', '.join(_TIERS[:-1])} or {_TIERS[-1]}.",
        },
    ),
    ("--runtime-version", {"default": None, "metavar": "VERSION", "help": "AI Platform runtime, e.g. 2.11."}),
    ("--python-version", {"default": None, "metavar": "VERSION", "help": "Python version, e.g. 3.7."}),
    ("--service-account", {"default": None, "metavar": "EMAIL", "help": "Service account the job runs as."}),
    (
        "--enable-web-access",
        {"is_flag": True, "default": None, "help": "Interactive shell access to the job."},
    ),
    (
        "--labels",
        {"type": KeyValues(), "multiple": True, "help": "KEY=VALUE,... (replaces the file's labels)."},
    ),
)


def package_options(f: F) -> F:
    """The packages group: the trainer's code and the module to run."""
    return compose(
        package_path_option(),
        click.option(
            "--packages", type=CommaList(), multiple=True, help="More packages: local files or gs:// URIs."
        ),
        module_name_option(),
    )(f)


def job_options(f: F) -> F:
    """The job group (with the packages group in its --help place): the config file, the code, where it runs and
    stages, the runtime, who it runs as, its labels."""
    return compose(
        config_option(),
        package_options,
        region_option(),
        option_table(STAGING_OPTIONS),
        job_dir_option(),
        option_table(RUNTIME_OPTIONS),
    )(f)


# The roles with flags of their own, and how a flag's help names their replicas.
ROLE_HELP = ((MASTER, "the master"), (WORKER, "each worker"), (PARAMETER_SERVER, "each parameter server"))


def role_options(f: F) -> F:
    """``--ROLE-accelerator`` and ``--ROLE-image-uri`` for master, worker and parameter server."""
    for role, who in reversed(ROLE_HELP):
        f = click.option(
            f"--{role.flag}-image-uri", default=None, metavar="IMAGE", help=f"Container image for {who}."
        )(f)
        f = click.option(
            f"--{role.flag}-accelerator",
            type=AcceleratorType(),
            default=None,
            help=f"Accelerators for {who}: type=nvidia-tesla-t4,count=1.",
        )(f)
    return f


def machine_options(f: F) -> F:
    """The machines group: each role's machine type, count, accelerators and image."""
    return compose(
        click.option(
            "--master-machine-type", default=None, metavar="TYPE", help="Master machine type (CUSTOM tier)."
        ),
        worker_count_option(),
        click.option("--worker-machine-type", default=None, metavar="TYPE", help="Worker machine type."),
        parameter_server_count_option(),
        click.option(
            "--parameter-server-machine-type", default=None, metavar="TYPE", help="Parameter server type."
        ),
        role_options,
        click.option(
            "--use-chief-in-tf-config",
            type=click.BOOL,
            default=None,
            metavar="true|false",
            help="Name the primary `chief` in TF_CONFIG (custom containers).",
        ),
    )(f)


ENCRYPTION_OPTIONS: OptionTable = (
    ("--kms-key", {"default": None, "help": "KMS key id or full name projects/.../cryptoKeys/KEY."}),
    ("--kms-keyring", {"default": None, "help": "KMS key ring (with a short --kms-key)."}),
    ("--kms-location", {"default": None, "help": "KMS location (with a short --kms-key)."}),
    ("--kms-project", {"default": None, "help": "KMS project (default: the job's project)."}),
)


def encryption_options(f: F) -> F:
    """The encryption group: the customer-managed key the job's data is encrypted with."""
    return option_table(ENCRYPTION_OPTIONS)(f)


# Vertex AI flags (docs/vertex.md): the job's own, then (after the failover group) the prebuilt image's.
VERTEX_OPTIONS: OptionTable = (
    (
        "--executor-image-uri",
        {"default": None, "help": "Vertex: prebuilt executor image (default: from the runtime)."},
    ),
    (
        "--scheduling-strategy",
        {
            "type": click.Choice(tuple(map(flag_spelling, SCHEDULING_STRATEGIES)), case_sensitive=False),
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
            "type": click.Choice(tuple(RESERVATION_AFFINITIES), case_sensitive=False),
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
FRAMEWORK_OPTIONS: OptionTable = (
    (
        "--framework",
        {
            "type": click.Choice(FRAMEWORKS, case_sensitive=False),
            "help": "Vertex: framework of the prebuilt executor image.",
        },
    ),
    ("--framework-version", {"metavar": "X.Y", "help": "Vertex: framework version of the prebuilt image."}),
)


def vertex_options(*, failover: bool) -> Callable[[F], F]:
    """The Vertex group (with ``--env``); with ``failover`` the failover group sits before the framework options,
    where ``training --help`` has always listed it."""
    groups: list[Callable[[F], F]] = [option_table(VERTEX_OPTIONS), env_option()]
    if failover:
        groups.append(failover_options)
    return compose(*groups, option_table(FRAMEWORK_OPTIONS))


def job_command_options(*, follow: bool, failover: bool) -> Callable[[F], F]:
    """The groups every command that reads a job as `training` does takes, in `training`'s --help order:
    job, machines, encryption, (follow, --target,) Vertex (with failover), image."""
    head: list[Callable[[F], F]] = [job_options, machine_options, encryption_options]
    if follow:
        head += [follow_options, target_option()]
    return compose(*head, vertex_options(failover=failover), image_options)


def job_command(
    name: str, callback: Callable[..., Any], *groups: Callable[[Any], Any], help: str
) -> click.Command:
    """``mlsubmit NAME [OPTIONS] JOB [-- USER_ARGS]`` with ``groups``' options, calling ``callback(ctx, job,
    **opts)``: the shape of every command that reads a job as `training` does."""
    decorated: Any = click.pass_context(callback)
    for group in reversed(groups):
        decorated = group(decorated)
    return click.command(
        name, cls=AppArgsCommand, help=help, context_settings={"help_option_names": ["-h", "--help"]}
    )(click.argument("job")(decorated))


def build_request(
    ctx: click.Context, job: str, exclude: tuple[str, ...] = (), target: str | None = None
) -> Call:
    """The request of a command's typed options (``exclude``: the command's own options that are not job
    flags), built by ``mlsubmit.api.call``: the one builder, so a command line and an API call with the same
    flags send the same body."""
    from mlsubmit.api import call

    given = given_options(ctx)
    for name in ("job", *exclude):
        given.pop(name, None)
    return call(job, given, user_args=ctx.meta.get("user_args"), env=environment(), target=target)
