"""`mlsubmit local tune`: a hyperparameter study on this machine, each trial run as ``local train`` runs it;
results on stdout. Exit 0 when a trial succeeded; 1 when none did or ``maxFailedTrials`` was reached; 2 for bad
input; 130 on Ctrl-C (``--resume`` continues)."""

from __future__ import annotations

import os
from typing import Any

import click

from mlsubmit.cli.local_options import local_run_options, local_train_request
from mlsubmit.cli.options import AppArgsCommand, formats_option
from mlsubmit.errors import LocalRunError, UsageError


# The local run group without --trial (the study numbers its trials); no --dry-run (a dry run of a study would
# have to invent trial parameters) and no image options (trials run as processes, for now).
@click.command("tune", cls=AppArgsCommand, options_metavar="[OPTIONS] [-- USER_ARGS...]")
@local_run_options(trial=False)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the study kept in --job-dir: finished trials are not run again "
    "(also hyperparameters.resumePreviousJobId).",
)
@click.option("--seed", type=int, help="Seed of the random and Bayesian samplers, for a repeatable study.")
@formats_option(help="Results on stdout: a table, or ml v1 trainingOutput as JSON or YAML.")
@click.pass_context
def tune(ctx: click.Context, /, **opts: Any) -> None:
    """Run the --config file's hyperparameter study locally: each trial a full `local train` run with the
    trial's parameters appended as --NAME=VALUE.

    \b
    mlsubmit local tune --package-path trainer --module-name trainer.task \\
        --config tune.yaml --job-dir out -- --epochs 5
    """
    from mlsubmit.cli.output import emit
    from mlsubmit.follow.trials import best_line, trials_of, trials_table
    from mlsubmit.local.tune.runner import prepare_tune, run_study
    from mlsubmit.local.tune.study import training_output

    if opts.get("config") is None:
        raise UsageError("local tune needs --config FILE with a trainingInput.hyperparameters block.")
    env = dict(os.environ)
    # `local train`'s flags, config rules and merge: a trial runs exactly what `local train` would run.
    train, job_file = local_train_request(ctx, opts, env)
    assert job_file is not None  # --config was given
    request = prepare_tune(train, job_file, resume=opts["resume"], seed=opts["seed"])
    study, stop_reason = run_study(request, environ=env)
    output = training_output(study, request.spec)
    if opts["fmt"] == "text":
        trials = trials_of({"trainingOutput": output, "goal": request.spec.goal})
        assert trials is not None
        click.echo(f"{trials_table(trials)}\n{best_line(trials)}")
    else:
        emit(output, opts["fmt"])
    if stop_reason or not any(t.state == "SUCCEEDED" for t in study.trials):
        raise LocalRunError(stop_reason or "no trial succeeded; their errors are listed above.")
