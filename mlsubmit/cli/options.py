"""The shared options and groups, declared once (the job's: ``cli/job_options.py``, the local run's:
``cli/local_options.py``), and the `--` split of a command. A command words a shared option with ``help=`` only, so
names, types and defaults never drift. No command module imports another (tests/unit/cli/test_options.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mlsubmit.cli.flagtypes import CommaList, Duration, EnvVar, GcsUrl
from mlsubmit.cli.output import FORMATS
from mlsubmit.job.vocab import BUILDERS, DEFAULT_TARGET, ML_NOTICE, TARGET_ENV, TARGETS

F = TypeVar("F", bound=Callable[..., Any])
#: Options as data: (flag, click keyword arguments), in --help order.
OptionTable = tuple[tuple[str, dict[str, Any]], ...]
APP_ARGS_HINT = "arguments for your trainer go after `--`, e.g. `mlsubmit {cmd} ... -- --epochs 3`"


class AppArgsCommand(click.Command):
    """A command whose arguments after ``--`` are the app's (``ctx.meta["user_args"]``; None: no ``--``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # the run ledger (docs/cost.md)
        ctx.meta["argv"] = ["mlsubmit", *ctx.command_path.split(" ")[1:], *args]
        cut = args.index("--") if "--" in args else len(args)
        ctx.meta["user_args"] = list(args[cut + 1 :]) if cut < len(args) else None
        args = args[:cut]
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            message = err.format_message()
            if isinstance(err, click.NoSuchOption) or "Got unexpected extra argument" in message:
                hint = APP_ARGS_HINT.format(cmd=ctx.command_path.split(" ", 1)[-1])
                raise click.UsageError(f"{message.rstrip('.')}; {hint}", ctx) from None
            raise


def option_table(options: OptionTable) -> Callable[[F], F]:
    """A decorator adding ``options`` in their order."""
    return compose(*(click.option(flag, **kwargs) for flag, kwargs in options))


def compose(*groups: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator adding ``groups`` in their order (the first on top of ``--help``)."""
    return lambda f: functools.reduce(lambda done, group: group(done), reversed(groups), f)


def shared(*decls: str, help: str | None = None, **kwargs: Any) -> Callable[..., Callable[[F], F]]:
    """A shared option: call it (with ``help=`` to word it for a command) for its decorator."""
    return functools.partial(click.option, *decls, **kwargs, help=help)


formats_option = shared(
    "--format",
    "fmt",
    type=click.Choice(FORMATS, case_sensitive=False),
    default="text",
    show_default=True,
    help="Output format of the result on stdout.",
)
format_option = formats_option()  # the output group
project_option = shared(
    "--project",
    metavar="PROJECT",
    help="Google Cloud project (default: CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, ADC).",
)()
region_option = shared("--region", help="Region (else the file, else CLOUDSDK_COMPUTE_REGION).")
config_option = shared(
    "--config",
    type=click.Path(dir_okay=True),
    metavar="FILE",
    help="YAML or JSON Job resource (jobId, labels, trainingInput); flags override it.",
)
package_path_option = shared(
    "--package-path", metavar="DIR", help="Trainer package folder (holds __init__.py)."
)
module_name_option = shared("--module-name", metavar="MODULE", help="Module to run, e.g. trainer.task.")
job_dir_option = shared("--job-dir", type=GcsUrl(), help="gs:// output directory, passed as --job-dir.")
env_option = shared(
    "--env",
    type=EnvVar(),
    multiple=True,
    help="KEY=VALUE for the trainer (Vertex pools, local replicas, TFJob containers); repeatable.",
)
worker_count_option = shared("--worker-count", type=click.IntRange(min=0), help="Number of workers.")
parameter_server_count_option = shared(
    "--parameter-server-count", type=click.IntRange(min=0), help="Number of parameter servers."
)
dry_run_option = shared("--dry-run", is_flag=True, default=False)
output_image_uri_option = shared("--output-image-uri", metavar="REGISTRY/PATH/NAME")
base_image_option = shared("--base-image", metavar="IMAGE")
builder_option = shared("--builder", type=click.Choice(BUILDERS), default="auto", show_default=True)
fallback_regions_option = shared("--fallback-regions", type=CommaList(), metavar="REGION,...")
interrupt_option = shared(
    "--cancel-on-interrupt",
    is_flag=True,
    help="On Ctrl-C or SIGTERM, cancel the job (default: leave it running and say how to cancel it).",
)


def connection_options(f: F) -> F:
    """``--project`` and ``Settings``' connection options, read without importing Settings."""
    from mlsubmit.services.connection import CONNECTION_OPTIONS

    return project_option(option_table(CONNECTION_OPTIONS)(f))


def target_option(
    *,
    default: str | None = DEFAULT_TARGET,
    choices: tuple[str, ...] = TARGETS,
    shown: str | None = None,
    help: str = "ml: AI Platform Training (ml v1); vertex: a Vertex AI CustomJob; kubernetes: a TFJob on the "
    "kubeconfig's cluster (docs/kubernetes.md).",
) -> Callable[[F], F]:
    """``--target`` (or ``choices``): the service a job goes to; ``MLSUBMIT_TARGET`` sets the default."""
    shown = shown or (f"{default}, or ${TARGET_ENV}" if default is not None else None)
    choice = click.Choice(choices, case_sensitive=False)
    return click.option(
        "--target", type=choice, default=default, show_default=shown or False, callback=_target, help=help
    )


def _target(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The default from ``MLSUBMIT_TARGET``; for ``ml``, the notice once, unless ml is chosen for good."""
    import os

    from click.core import ParameterSource

    chosen = os.environ.get(TARGET_ENV, "").strip().lower()
    choices = tuple(getattr(param.type, "choices", TARGETS))
    if param.name and ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT and value and chosen:
        if chosen in choices:  # `preflight` (no ml) takes only a target it checks, and stays on vertex
            value = chosen
        elif choices == TARGETS:
            raise click.BadParameter(
                f"{TARGET_ENV}={chosen!r} is not one of {', '.join(TARGETS)}", ctx, param
            )
    if value and value.lower() == "ml" and chosen != "ml" and not ctx.meta.get("mlsubmit.ml-notice"):
        ctx.meta["mlsubmit.ml-notice"] = True  # meta is shared by the command's whole context chain
        click.echo(ML_NOTICE, err=True)
    return value


# The follow group of a submit: return at once, or wait for the job or stream its logs; what Ctrl-C does.
follow_options = compose(
    click.option("--async", "async_", is_flag=True, help="Return after submitting (the default)."),
    click.option("--stream-logs", is_flag=True, help="Stream the job's logs until it ends."),
    click.option("--wait", is_flag=True, help="Wait for the job to end; exit 0 only if it succeeded."),
    interrupt_option(
        help="Ctrl-C cancels the job (with --wait/--stream-logs, or the failover's live attempt) or its Cloud "
        "Build (--build-image)."
    ),
)


# The failover group: the other regions a Vertex AI job may start in, and how long it may queue.
failover_options = compose(
    fallback_regions_option(
        help="Vertex: regions to fail over to when the job cannot start (docs/getting-jobs-to-start.md)."
    ),
    click.option(
        "--max-queue-wait",
        type=Duration(),
        metavar="DURATION",
        help="Vertex: cancel a job QUEUED this long (e.g. 30m) and try the next candidate (not FLEX_START).",
    ),
)


# The image group of `training`, `export`, `preflight`, `migrate` (docs/containers.md).
image_options = compose(
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
)


# The submit group: print instead of sending, and the preflight.
submit_options = compose(
    dry_run_option(help="Validate and print the job body; upload nothing, create nothing."),
    click.option(
        "--preflight/--no-preflight",
        default=None,
        help="Vertex and Kubernetes: read-only checks before any upload or create (on by default; a --dry-run "
        "runs them only with --preflight, Vertex AI's only).",
    ),
)


KUBERNETES_OPTIONS: OptionTable = (
    ("--context", {"metavar": "NAME", "help": "Kubernetes: kubeconfig context (default: current-context)."}),
    (
        "--namespace",
        {"metavar": "NS", "help": "Kubernetes: namespace (default: the config file's, then the context's)."},
    ),
    ("--queue", {"metavar": "NAME", "help": "Kubernetes: Kueue LocalQueue to submit the TFJob to."}),
)
# --context, --namespace and --queue for --target kubernetes (docs/kubernetes.md), over the config file's
# kubernetes: block and the kubeconfig's current context
kubernetes_options = option_table(KUBERNETES_OPTIONS)
