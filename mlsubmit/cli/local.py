"""`mlsubmit local train [flags] -- USER_ARGS`: gcloud's `ai-platform local train`, supervised and stricter."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from mlsubmit.cli import LazyGroup
from mlsubmit.cli.local_options import local_image_options, local_run_options, local_train_request
from mlsubmit.cli.options import AppArgsCommand, compose, dry_run_option

# `local tune` is imported when it runs (as the top-level commands are); `local --help` lists it from this summary
# (tests/unit/cli/test_options.py keeps it equal to the command's own help).
LOCAL_COMMANDS = {
    "tune": "Run the --config file's hyperparameter study locally: each trial a full `local train` run with the "
    "trial's parameters appended as --NAME=VALUE."
}


@click.group(cls=LazyGroup, lazy=LOCAL_COMMANDS)
def local() -> None:
    """Run training jobs on this machine."""


@local.command("train", cls=AppArgsCommand, options_metavar="[OPTIONS] [-- USER_ARGS...]")
@compose(
    local_run_options(trial=True),
    local_image_options,
    dry_run_option(help="Print each replica's command and TF_CONFIG as JSON; start nothing."),
)
@click.pass_context
def train(ctx: click.Context, /, **opts: Any) -> None:
    """Run a trainer locally, as `gcloud ai-platform local train` does, with arguments for it after `--`.

    \b
    mlsubmit local train --package-path trainer --module-name trainer.task \\
        --distributed --worker-count 2 --parameter-server-count 1 --job-dir out -- --epochs 3
    """
    from mlsubmit.local.containers import ImageFlags

    env = dict(os.environ)
    request, _ = local_train_request(ctx, opts, env)
    flags = ImageFlags(
        **{k: opts[k] for k in ("image", "build_image", "output_image_uri", "base_image", "builder")}
    )
    if opts["dry_run"]:
        from mlsubmit.local.containers import dry_run_image
        from mlsubmit.local.runner import dry_run

        image = dry_run_image(flags, request)
        # with an image the replicas run in it (docs/containers.md): its command and folder, not this machine's
        shown = {"replicas": dry_run(request, env, image), **({"image": image} if image is not None else {})}
        click.echo(json.dumps(shown, indent=2))
        return

    from mlsubmit.local.containers import prepare_image
    from mlsubmit.local.runner import run_local_training

    container = prepare_image(flags, request, env)  # docs/containers.md: None unless --image or --build-image
    status = run_local_training(request, environ=env, container=container)
    if status != 0:
        # Like gcloud, the primary's status is ours; unlike gcloud, say so.
        click.echo(f"ERROR: [{request.primary_name}] exited with status {status}.", err=True)
        ctx.exit(status)


@local.command("clean")
def clean() -> None:
    """Remove the environments `local train --from-package` cached (each run keeps only the most recently used
    few); one another run is using stays."""
    from mlsubmit.local.venv import cache_root, clean_cache

    root = cache_root(dict(os.environ))
    removed, held = clean_cache(root)
    said = f"Removed {len(removed)} cached environment(s) from {root}."
    click.echo(said + (f" {len(held)} in use by another run stay(s)." if held else ""))
