"""The option table: every option several commands share, declared once (as pip's ``cmdoptions``).

Commands compose these decorators; a command that words an option for its own case passes ``help=`` (and only
that), so an option's name, type and default never drift between commands. Options only one command takes stay
in that command's module. The connection options are declared by ``Settings`` itself (twine's ``Settings``
registers its own arguments) and turned into click options here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from mlsubmit.cli.flagtypes import CommaList, EnvVar, GcsUrl
from mlsubmit.cli.output import FORMATS
from mlsubmit.job.vocab import DEFAULT_TARGET, ML_NOTICE, TARGET_ENV, TARGETS

F = TypeVar("F", bound=Callable[..., Any])
#: A command's own options as data: (flag, click keyword arguments), in --help order.
OptionTable = tuple[tuple[str, dict[str, Any]], ...]
BUILDERS = ("auto", "cloud-build", "docker", "podman", "buildah")


def option_table(options: OptionTable) -> Callable[[F], F]:
    """A decorator adding ``options`` in their order."""

    def add(f: F) -> F:
        for flag, kwargs in reversed(options):
            f = click.option(flag, **kwargs)(f)
        return f

    return add


def format_option(f: F) -> F:
    """``--format text|json|yaml`` (parameter ``fmt``)."""
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
    """The options ``Settings`` declares (``--access-token-file``, ``--api-endpoint``) and ``--project``."""
    # ``Settings.OPTIONS``, read from where they are declared (without importing Settings: a dry run needs none)
    from mlsubmit.services.tokens import CONNECTION_OPTIONS

    for flag, kwargs in reversed(CONNECTION_OPTIONS):
        f = click.option(flag, **kwargs)(f)
    return project_option(f)


def target_option(
    *,
    default: str | None = DEFAULT_TARGET,
    help: str = "ml: AI Platform Training (ml v1); vertex: a Vertex AI CustomJob.",
) -> Callable[[F], F]:
    """``--target ml|vertex``: the service a job goes to (and whose rules apply). ``MLSUBMIT_TARGET`` replaces
    the default ``ml`` for every command (where the default is inferred from the job file, the file decides). ``ml``
    draws one notice per command that the service no longer runs jobs."""
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
