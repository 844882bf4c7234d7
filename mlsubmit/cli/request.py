"""The typed requests the commands build from their option groups: :func:`build_request` for every command that
reads a job as `training` does (`training`, `export`, `preflight`, `migrate`; ``cli/job_options.py``) and
:func:`local_train_request` for `local train` and `local tune` (``cli/local_options.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mlsubmit.cli.common import environment, given_options
from mlsubmit.job.merge import TrainingFlags
from mlsubmit.job.validate import TrainingRequest

if TYPE_CHECKING:
    from mlsubmit.job.jobfile import JobFile
    from mlsubmit.local.request import LocalTrainRequest


def build_request(
    ctx: click.Context, job: str, opts: dict[str, Any], exclude: tuple[str, ...] = ()
) -> TrainingRequest:
    """The typed request of a command's options: only typed flags count, ``exclude`` names the command's own
    options that are not job flags. ``submit.plan`` merges it, checks it by its target's rules and translates
    it, once."""
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
