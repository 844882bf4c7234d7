"""The option groups: every option a command takes, declared once, in groups that commands compose (as pip's
``cmdoptions``).

Here: the single options several commands word their own way, and the groups several command families share
(follow, failover, image, submit, connection, output). The job's own groups (job with packages, machines,
encryption, Vertex) are in ``cli/job_options.py``; the local run group in ``cli/local_options.py``. A command
stacks the groups it needs (``training``: job, machines, encryption, follow, target, Vertex with failover, image,
submit, connection, output; ``export`` and ``preflight`` the same without following or submitting). No command
builds its options from another command's, so no command module imports another (tests/unit/cli/test_options.py).
A group's order is the order of ``--help``. A command that words an option for its own case passes ``help=`` (and
only that), so an option's name, type and default never drift between commands. The connection options are
declared by ``Settings`` itself (twine's ``Settings`` registers its own arguments) and turned into click options
here; every command that talks to Google takes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from mlsubmit.cli.flagtypes import CommaList, Duration, EnvVar, GcsUrl
from mlsubmit.cli.output import FORMATS
from mlsubmit.job.vocab import BUILDERS, DEFAULT_TARGET, ML_NOTICE, TARGET_ENV, TARGETS

F = TypeVar("F", bound=Callable[..., Any])
#: Options as data: (flag, click keyword arguments), in --help order.
OptionTable = tuple[tuple[str, dict[str, Any]], ...]


def option_table(options: OptionTable) -> Callable[[F], F]:
    """A decorator adding ``options`` in their order."""

    def add(f: F) -> F:
        for flag, kwargs in reversed(options):
            f = click.option(flag, **kwargs)(f)
        return f

    return add


def compose(*groups: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator adding ``groups`` in their order (the first on top of ``--help``)."""

    def add(f: F) -> F:
        for group in reversed(groups):
            f = group(f)
        return f

    return add


# --- output and connection -----------------------------------------------------------------------------------


def format_option(f: F) -> F:
    """``--format text|json|yaml`` (parameter ``fmt``): the output group."""
    return formats_option()(f)


def formats_option(*, help: str = "Output format of the result on stdout.") -> Callable[[F], F]:
    """``--format text|json|yaml`` worded for a command's own output (``format_option`` with its own help)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS, case_sensitive=False),
        default="text",
        show_default=True,
        help=help,
    )


def project_option(f: F) -> F:
    """``--project`` (else CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, then Application Default Credentials)."""
    return click.option(
        "--project",
        default=None,
        metavar="PROJECT",
        help="Google Cloud project (default: CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, ADC).",
    )(f)


def connection_options(f: F) -> F:
    """The connection group: ``--project`` and the options ``Settings`` declares (``--access-token-file``,
    ``--api-endpoint``). Every command that talks to Google takes it."""
    # ``Settings.OPTIONS``, read from where they are declared (without importing Settings: a dry run needs none)
    from mlsubmit.services.connection import CONNECTION_OPTIONS

    return project_option(option_table(CONNECTION_OPTIONS)(f))


# --- single options that several groups or commands word their own way --------------------------------------


def target_option(
    *,
    default: str | None = DEFAULT_TARGET,
    help: str = "ml: AI Platform Training (ml v1); vertex: a Vertex AI CustomJob; kubernetes: a TFJob on the "
    "kubeconfig's cluster (docs/kubernetes.md).",
) -> Callable[[F], F]:
    """``--target ml|vertex|kubernetes``: the service a job goes to (and whose rules apply). ``MLSUBMIT_TARGET``
    replaces the default ``ml`` for every command (where the default is inferred from the job file, the file
    decides). ``ml`` draws one notice per command that the service no longer runs jobs."""
    shown = f"{default}, or ${TARGET_ENV}" if default is not None else None
    return click.option(
        "--target",
        type=click.Choice(TARGETS, case_sensitive=False),
        default=default,
        show_default=shown if shown is not None else False,
        callback=_target,
        help=help,
    )


def _target(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The default from ``MLSUBMIT_TARGET``; then, for ``ml``, the notice once per command, unless the user
    chose ml for good (``MLSUBMIT_TARGET=ml``)."""
    import os

    from click.core import ParameterSource

    chosen = os.environ.get(TARGET_ENV, "").strip().lower()
    if (
        param.name
        and ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT
        and value is not None
        and chosen
    ):
        if chosen not in TARGETS:
            raise click.BadParameter(
                f"{TARGET_ENV}={chosen!r} is not one of {', '.join(TARGETS)}", ctx, param
            )
        value = chosen
    if (
        value is not None
        and value.lower() == "ml"
        and chosen != "ml"
        and not ctx.meta.get("mlsubmit.ml-notice")
    ):
        ctx.meta["mlsubmit.ml-notice"] = True  # meta is shared by the command's whole context chain
        click.echo(ML_NOTICE, err=True)
    return value


def region_option(*, help: str = "Region (else the file, else CLOUDSDK_COMPUTE_REGION).") -> Callable[[F], F]:
    """``--region``: the job's region (merged over the config file's) or, for ``jobs``, where to look."""
    return click.option("--region", default=None, help=help)


def config_option(
    *, help: str = "YAML or JSON Job resource (jobId, labels, trainingInput); flags override it."
) -> Callable[[F], F]:
    """``--config FILE``: the Job resource every command that reads a job takes."""
    return click.option("--config", type=click.Path(dir_okay=True), default=None, metavar="FILE", help=help)


def package_path_option(*, help: str = "Trainer package folder (holds __init__.py).") -> Callable[[F], F]:
    """``--package-path DIR``."""
    return click.option("--package-path", default=None, metavar="DIR", help=help)


def module_name_option(*, help: str = "Module to run, e.g. trainer.task.") -> Callable[[F], F]:
    """``--module-name MODULE``."""
    return click.option("--module-name", default=None, metavar="MODULE", help=help)


def job_dir_option(
    *, local: bool = False, help: str = "gs:// output directory, passed as --job-dir."
) -> Callable[[F], F]:
    """``--job-dir``: a gs:// URL for the cloud, a local folder or gs:// URL for a local run (``local=True``)."""
    if local:
        return click.option("--job-dir", default=None, metavar="DIR", help=help)
    return click.option("--job-dir", type=GcsUrl(), default=None, help=help)


def env_option(
    *, help: str = "KEY=VALUE for the trainer (Vertex pools, local replicas, TFJob containers); repeatable."
) -> Callable[[F], F]:
    """``--env KEY=VALUE`` (repeatable), over the config file's ``vertex.env``."""
    return click.option("--env", type=EnvVar(), multiple=True, help=help)


def worker_count_option(*, help: str = "Number of workers.") -> Callable[[F], F]:
    """``--worker-count N``."""
    return click.option("--worker-count", type=click.IntRange(min=0), default=None, help=help)


def parameter_server_count_option(*, help: str = "Number of parameter servers.") -> Callable[[F], F]:
    """``--parameter-server-count N``."""
    return click.option("--parameter-server-count", type=click.IntRange(min=0), default=None, help=help)


def dry_run_option(*, help: str) -> Callable[[F], F]:
    """``--dry-run``: print what would be done; start, upload and create nothing."""
    return click.option("--dry-run", is_flag=True, default=False, help=help)


def output_image_uri_option(*, help: str) -> Callable[[F], F]:
    """``--output-image-uri REGISTRY/PATH/NAME``: where a built image goes (no tag: the content tag is added)."""
    return click.option("--output-image-uri", default=None, metavar="REGISTRY/PATH/NAME", help=help)


def base_image_option(*, help: str) -> Callable[[F], F]:
    """``--base-image IMAGE``: what a built image is built on."""
    return click.option("--base-image", default=None, metavar="IMAGE", help=help)


def builder_option(*, help: str) -> Callable[[F], F]:
    """``--builder``: who builds the image (auto: the first local engine that answers, else Cloud Build)."""
    return click.option(
        "--builder", type=click.Choice(BUILDERS), default="auto", show_default=True, help=help
    )


def fallback_regions_option(*, help: str) -> Callable[[F], F]:
    """``--fallback-regions REGION,...``: the other regions of a Vertex AI job's failover."""
    return click.option("--fallback-regions", type=CommaList(), default=None, metavar="REGION,...", help=help)


def interrupt_option(
    *,
    help: str = "On Ctrl-C or SIGTERM, cancel the job (default: leave it running and say how to cancel it).",
) -> Callable[[F], F]:
    """``--cancel-on-interrupt`` for the commands that follow a job."""
    return click.option("--cancel-on-interrupt", is_flag=True, default=False, help=help)


# --- the groups several command families share ----------------------------------------------------------

FOLLOW_OPTIONS: OptionTable = (
    ("--async", {"is_flag": True, "default": False, "help": "Return after submitting (the default)."}),
    ("--stream-logs", {"is_flag": True, "default": False, "help": "Stream the job's logs until it ends."}),
    (
        "--wait",
        {"is_flag": True, "default": False, "help": "Wait for the job to end; exit 0 only if it succeeded."},
    ),
)


def follow_options(f: F) -> F:
    """The follow group of a submit: return at once, or wait for the job or stream its logs; what Ctrl-C does."""
    return compose(
        click.option("--async", "async_", **FOLLOW_OPTIONS[0][1]),
        option_table(FOLLOW_OPTIONS[1:]),
        interrupt_option(
            help="Ctrl-C cancels the job (with --wait/--stream-logs, or the failover's live attempt) or its Cloud "
            "Build (--build-image)."
        ),
    )(f)


def failover_options(f: F) -> F:
    """The failover group: the other regions a Vertex AI job may start in, and how long it may queue."""
    return compose(
        fallback_regions_option(
            help="Vertex: regions to fail over to when the job cannot start (docs/getting-jobs-to-start.md)."
        ),
        click.option(
            "--max-queue-wait",
            type=Duration(),
            metavar="DURATION",
            help="Vertex: cancel a job QUEUED this long (e.g. 30m) and try the next candidate (not FLEX_START).",
        ),
    )(f)


def image_options(f: F) -> F:
    """The image group of `training`, `export`, `preflight`, `migrate` (docs/containers.md)."""
    return compose(
        click.option(
            "--build-image",
            is_flag=True,
            default=None,
            help="Build the trainer into an image (content-tagged, reused when unchanged) and run the job in it, "
            "pinned by digest (vertex.buildImage in the config).",
        ),
        output_image_uri_option(
            help="With --build-image: where the image goes, no tag (default "
            "REGION-docker.pkg.dev/PROJECT/mlsubmit/PACKAGE)."
        ),
        base_image_option(help="With --build-image: the image to build on (default: from the runtime)."),
        builder_option(
            help="With --build-image: who builds (auto: a local engine that answers, else Cloud Build)."
        ),
    )(f)


def submit_options(f: F) -> F:
    """The submit group: print instead of sending, and the preflight."""
    return compose(
        dry_run_option(help="Validate and print the job body; upload nothing, create nothing."),
        click.option(
            "--preflight/--no-preflight",
            default=None,
            help="Vertex and Kubernetes: read-only checks before any upload or create (on by default; a --dry-run "
            "runs them only with --preflight, Vertex AI's only).",
        ),
    )(f)


KUBERNETES_OPTIONS: OptionTable = (
    ("--context", {"metavar": "NAME", "help": "Kubernetes: kubeconfig context (default: current-context)."}),
    (
        "--namespace",
        {"metavar": "NS", "help": "Kubernetes: namespace (default: the config file's, then the context's)."},
    ),
    ("--queue", {"metavar": "NAME", "help": "Kubernetes: Kueue LocalQueue to submit the TFJob to."}),
)


def kubernetes_options(f: F) -> F:
    """``--context``, ``--namespace`` and ``--queue`` for ``--target kubernetes`` (docs/kubernetes.md), over the
    config file's ``kubernetes:`` block and the kubeconfig's current context."""
    return option_table(KUBERNETES_OPTIONS)(f)
