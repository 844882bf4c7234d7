"""The groups of the commands that read a job as `training` does (``cli/job_options.py``): each command offers
exactly the groups it composes."""

from __future__ import annotations

from typing import Any

import click
import pytest

from mlsubmit.cli import cli
from mlsubmit.errors import UsageError
from tests.fakes.cli import run_cli

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


@pytest.mark.parametrize("name", ["training", "export", "preflight", "migrate"])
def test_every_command_that_reads_a_job_builds_it_with_the_apis_one_builder(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI is a thin layer over ``mlsubmit.api`` (docs/api.md): its request comes from ``api.call``."""
    import mlsubmit.api

    seen: list[str] = []

    def spy(job_id: str, *args: Any, **kwargs: Any) -> mlsubmit.api.Call:
        seen.append(job_id)
        raise UsageError("stop here")

    monkeypatch.setattr(mlsubmit.api, "call", spy)
    own = {"export": ["--format", "customjob"], "migrate": ["--output-dir", "out"]}.get(name, [])
    result = run_cli([name, "api_built", *own, "--region", "us-central1"])
    assert (result.exit_code, seen) == (2, ["api_built"]), result.output
    assert "ERROR: stop here" in result.stderr
