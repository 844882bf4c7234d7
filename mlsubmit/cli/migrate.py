"""`mlsubmit migrate JOB [training flags] --output-dir DIR -- USER_ARGS`: a legacy job as Vertex-native files,
planned offline: the job file, `submit.sh` with the gcloud command, the packages and MIGRATION.md with the trainer
checkup (docs/migrate.md). Exit 2 when Vertex AI refuses the job; with `--strict`, 1 when the checkup finds errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mlsubmit.cli.job_options import build_request, job_command
from mlsubmit.cli.options import format_option, project_option
from mlsubmit.errors import ExitStatus, InvalidJobError


def _migrate(ctx: click.Context, /, job: str, **opts: Any) -> None:
    """Write the job's Vertex AI files and MIGRATION.md into --output-dir."""
    from mlsubmit.cli.output import emit, status, warn
    from mlsubmit.cli.serialize import yaml_text
    from mlsubmit.job.imageref import ImageOptions
    from mlsubmit.migrate.migration import build_migration, legacy_request
    from mlsubmit.migrate.report import check_output_dir, migration_md, write_migration
    from mlsubmit.proc.processes import temporary_directory
    from mlsubmit.services.connection import project_of
    from mlsubmit.submit.plan import PlanRequest, plan

    request, refused = legacy_request(build_request(ctx, job, exclude=("output_dir", "strict")).request)
    output_dir = Path(opts["output_dir"])
    check_output_dir(output_dir, Path(request.package_path) if request.package_path else None)
    with temporary_directory("mlsubmit-") as tmp:
        planned = plan(PlanRequest(request), Path(tmp))
        migration = build_migration(
            planned.body,
            planned.staged,
            executor_image_uri=opts.get("executor_image_uri"),
            package_dir=Path(request.package_path) if request.package_path else None,
            refused=refused,
            # as Settings resolves it (ADC included), when the image needs it
            project=project_of(opts["project"], request.env, required=False),
            workdir=Path(tmp),
            walked=planned.walked,
            image_options=ImageOptions(opts.get("output_image_uri"), opts.get("base_image")),
            sdist=planned.sdist,
        )
        config_text = yaml_text(migration.config, literal_blocks=True) if migration.config is not None else ""
        written = write_migration(migration, output_dir, config_text)
    if opts["fmt"] != "text":
        document = {**migration.as_dict(), "outputDir": str(output_dir), "files": written}
        emit({**document, "report": migration_md(migration)}, opts["fmt"])
    else:
        warn(migration.warnings)
        for finding in migration.checkup.findings if migration.checkup else ():
            status(finding.text())
        click.echo(f"Wrote {', '.join(written)} to {output_dir}.")
        if migration.config is not None:
            click.echo(f"Submit with: sh {output_dir / 'submit.sh'}")
    if migration.refused:
        status(
            f"ERROR: Vertex AI refuses this job as written; {output_dir / 'MIGRATION.md'} says what to change:"
        )
        raise InvalidJobError(migration.refused)
    for rewrite in migration.rewrites:
        status(f"WARNING: changed: {rewrite}")
    if opts["strict"] and migration.checkup is not None and migration.checkup.errors:
        status(f"ERROR: the trainer checkup found {len(migration.checkup.errors)} error(s) (--strict).")
        ctx.exit(int(ExitStatus.FAILURE))
    if opts["strict"] and migration.rewrites:
        status(
            f"ERROR: migrate changed {len(migration.rewrites)} setting(s) the trainer must follow (--strict)."
        )
        ctx.exit(int(ExitStatus.FAILURE))


# The job's groups as `training` has them, without following, failover or submitting. Only --project of the
# connection group: a migration is planned offline and asks no API (nothing is uploaded or read).
migrate = job_command(
    "migrate",
    _migrate,
    project_option,
    format_option,
    click.option(
        "--output-dir",
        required=True,
        type=click.Path(file_okay=False),
        help="Directory for the job file, submit.sh, the packages and MIGRATION.md (created if needed).",
    ),
    click.option(
        "--strict",
        is_flag=True,
        help="Exit 1 when the trainer checkup finds an error-level problem (for CI).",
    ),
)
