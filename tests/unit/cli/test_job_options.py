"""The groups of the commands that read a job as `training` does (``cli/job_options.py``): each command offers
exactly the groups it composes."""

from __future__ import annotations

import click

from mlsubmit.cli import cli

FOLLOW = {"--async", "--stream-logs", "--wait", "--cancel-on-interrupt"}
FAILOVER = {"--fallback-regions", "--max-queue-wait"}
SUBMIT = {"--dry-run", "--preflight"}
CONNECTION = {"--project", "--access-token-file", "--api-endpoint"}
COST = {"--max-cost", "--expected-hours", "--prices"}  # training's own (docs/cost.md)
KUBERNETES = {"--context", "--namespace", "--queue"}  # training and preflight (docs/kubernetes.md)


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None
    return found


def options(name: str) -> dict[str, click.Option]:
    return {p.opts[0]: p for p in command(name).params if isinstance(p, click.Option)}


def test_each_command_offers_the_groups_it_composes() -> None:
    training = set(options("training"))
    job = training - FOLLOW - FAILOVER - SUBMIT - CONNECTION - COST - KUBERNETES - {"--target", "--format"}
    assert set(options("export")) == job | CONNECTION | {"--format", "--output", "--namespace", "--dry-run"}
    assert set(options("preflight")) == job | CONNECTION | KUBERNETES | {"--target", "--format"}
    assert set(options("migrate")) == job | {"--project", "--format", "--output-dir", "--strict"}
