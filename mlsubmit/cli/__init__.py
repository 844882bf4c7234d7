"""The click entry point: a lazily loaded command group (a command's module is imported only when it runs,
benchmarks/bench_dry_run.py) and the one place errors become exit codes."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Any

import click

from mlsubmit import __version__
from mlsubmit.cli.output import make_console, report_error
from mlsubmit.errors import ExitStatus, MlsubmitError

__all__ = ["cli", "main", "report_error"]

# command name -> the first paragraph of its help; the command is NAME in module `cli/NAME.py`, imported on
# first use only: `--help` lists the commands from these alone (tests/unit/test_cli.py keeps them equal to the help).
COMMANDS: dict[str, str] = {
    "training": "Submit a training job: mlsubmit training JOB [flags] -- [USER_ARGS].",
    "validate": "Check job config files (YAML or JSON) against the schema and the TrainingInput rules.",
    "local": "Run training jobs on this machine.",
    "jobs": "See, stop and follow training jobs (AI Platform Training or Vertex AI).",
    "preflight": "Check that a job can start (read-only): on Vertex AI its APIs, buckets, service account, key, "
    "images, quota; with --target kubernetes the cluster's API server, the operator's CRD, the namespace, RBAC and "
    "the Kueue queue: mlsubmit preflight JOB [training flags].",
    "export": "Print the job as a Vertex AI CustomJob or HyperparameterTuningJob, or a Kubernetes TFJob: "
    "mlsubmit export --format customjob|hptuningjob|tfjob JOB [training flags] -- [USER_ARGS].",
    "migrate": "Write a legacy job as Vertex AI files (job spec, gcloud command, MIGRATION.md with a trainer "
    "checkup): mlsubmit migrate JOB [training flags] --output-dir DIR -- [USER_ARGS].",
}

BUG_HINT = (
    "This is a bug in mlsubmit; please report it with the command line (set MLSUBMIT_DEBUG=1 for details)."
)


class LazyGroup(click.Group):
    """A group whose subcommands are imported on demand and whose errors never become tracebacks."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            cmd = getattr(importlib.import_module(f"mlsubmit.cli.{cmd_name}"), cmd_name)
            assert isinstance(cmd, click.Command)
            return cmd
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from the summaries, without importing any command module."""
        commands = {**self.commands, **{name: click.Command(name, help=h) for name, h in self.lazy.items()}}
        limit = formatter.width - 6 - max(map(len, commands), default=0)
        rows = [
            (n, commands[n].get_short_help_str(limit)) for n in sorted(commands) if not commands[n].hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """click's main, except that a usage error is one ``ERROR:`` line (gcloud's style), not three."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as err:
            if type(err).__name__ == "NoArgsIsHelpError":  # `mlsubmit jobs` alone: show the help (exit 2)
                err.show()
                sys.exit(err.exit_code)
            where = f"({err.ctx.command_path}) " if err.ctx is not None else ""
            hint = f" See '{err.ctx.command_path} --help'." if err.ctx is not None else ""
            click.echo(f"ERROR: {where}{err.format_message().rstrip('.')}.{hint}", err=True)
            sys.exit(err.exit_code)
        except click.ClickException as err:
            click.echo(f"ERROR: {err.format_message()}", err=True)
            sys.exit(err.exit_code)
        except click.exceptions.Abort:
            click.echo("ERROR: aborted.", err=True)
            sys.exit(int(ExitStatus.INTERRUPTED))
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        from mlsubmit.console import using

        try:
            with using(make_console()):  # the one console core code reaches (mlsubmit.console.current)
                return super().invoke(ctx)
        except MlsubmitError as err:
            report_error(err)
            ctx.exit(int(err.exit_status))
        except KeyboardInterrupt:
            click.echo("ERROR: interrupted.", err=True)
            ctx.exit(int(ExitStatus.INTERRUPTED))
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except Exception as exc:
            if os.environ.get("MLSUBMIT_DEBUG"):
                raise
            click.echo(f"ERROR: unexpected {type(exc).__name__}: {exc}", err=True)
            click.echo(f"ERROR: {BUG_HINT}", err=True)
            ctx.exit(int(ExitStatus.BUG))


def configure_logging(verbosity: str, env: Mapping[str, str]) -> None:
    """Diagnostics on stderr, tokens redacted (``cli.logsetup``), installed once logging is imported."""
    if "logging" in sys.modules:
        from mlsubmit.cli import logsetup

        logsetup.install(verbosity, env)
        return
    for finder in [f for f in sys.meta_path if isinstance(f, _AfterLogging)]:
        sys.meta_path.remove(finder)  # an earlier command of this process: its settings are replaced
    sys.meta_path.insert(0, _AfterLogging(lambda: configure_logging(verbosity, env)))


class _AfterLogging:
    """A meta path finder that runs ``then`` right after ``logging`` is imported, then steps aside."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "logging":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)  # found by the usual finders
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then(module: Any) -> None:
            exec_module(module)
            self.then()

        loader.exec_module = exec_then
        return spec


# every subcommand's context inherits -h from this one
@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mlsubmit")
@click.option(
    "--verbosity",
    type=click.Choice(("debug", "info", "warning", "error", "critical", "none"), case_sensitive=False),
    default="warning",
    envvar="CLOUDSDK_CORE_VERBOSITY",
    show_default=True,
    help="Diagnostics on stderr (also CLOUDSDK_CORE_VERBOSITY). Tokens are never shown.",
)
def cli(verbosity: str) -> None:
    """Submit, run locally and follow ML training jobs (gcloud ai-platform compatible)."""
    configure_logging(verbosity, dict(os.environ))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    import gc

    # A command lives for seconds and keeps its modules to the end: they need no collecting, and rarer
    # collections cost less than the cycles they free (about 15 ms of CPU a submit, benchmarks/bench_all.py).
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
    # CI runners stop a cancelled job with SIGTERM, which would end us at once, skipping every cleanup: as an
    # interrupt (also SIGHUP, unless ignored as under nohup) it unwinds like Ctrl-C, exit 130 (docs/ci.md).
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, signal.default_int_handler)
    cli.main(args=argv, prog_name="mlsubmit")
