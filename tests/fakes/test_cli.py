"""The shared CLI runner (tests/fakes/cli.py): stdout and stderr apart, exceptions not swallowed, env applied,
and the child process runs the same mlsubmit the tests import."""

from __future__ import annotations

import json

import pytest

import mlsubmit
from tests.fakes.cli import RunCli, run_cli, run_cli_process

DRY_RUN = ["training", "j1", "--packages", "gs://my-bucket/t.tar.gz",
           "--module-name", "trainer.task", "--runtime-version", "2.11", "--dry-run", "--format", "json"]  # fmt: skip


def test_fixture_is_the_helper(run_cli: RunCli) -> None:
    from tests.fakes import cli

    assert run_cli is cli.run_cli


def test_stdout_and_stderr_apart_and_env_applied() -> None:
    result = run_cli(DRY_RUN, env={"CLOUDSDK_COMPUTE_REGION": "europe-west4"})
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["jobId"], body["trainingInput"]["region"]) == ("j1", "europe-west4")
    refused = run_cli(["training", "bad id!", "--dry-run"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr.startswith("ERROR: ")


def test_exceptions_are_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLSUBMIT_DEBUG", "1")  # the CLI re-raises unexpected errors instead of exit 3

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("mlsubmit.submit.plan.plan", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        run_cli([*DRY_RUN, "--region", "us-central1"])


def test_process_runs_the_same_mlsubmit() -> None:
    done = run_cli_process(["--version"])
    assert done.returncode == 0, done.stderr
    assert mlsubmit.__version__ in done.stdout
