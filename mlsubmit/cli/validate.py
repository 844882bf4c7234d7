"""`mlsubmit validate FILE...`: check config files on their own (pre-commit, CI), nothing sent anywhere."""

from __future__ import annotations

import click

from mlsubmit.cli.options import target_option
from mlsubmit.cli.output import report_error
from mlsubmit.errors import ExitStatus, MlsubmitError
from mlsubmit.job.validate import check_config_file


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option(
    "--complete",
    is_flag=True,
    help="Also require what flags usually supply (region, packages, module, runtime or image).",
)
@target_option(
    default=None, help="Whose rules apply (default: vertex when the file has a vertex: block, else ml)."
)
@click.option("-q", "--quiet", is_flag=True, help="Print errors only.")
def validate(files: tuple[str, ...], complete: bool, target: str | None, quiet: bool) -> None:
    """Check job config files (YAML or JSON) against the schema and the TrainingInput rules."""
    from mlsubmit.targets.translate import rules_for_target

    failed = 0
    for path in files:
        try:  # the schema and the rules, as `training` and `local train` check them
            check_config_file(path, complete=complete, target_rules=rules_for_target(target))
        except MlsubmitError as err:
            failed += 1
            report_error(err)
            continue
        if not quiet:
            click.echo(f"{path}: ok")
    if failed:
        raise click.exceptions.Exit(int(ExitStatus.USAGE))
