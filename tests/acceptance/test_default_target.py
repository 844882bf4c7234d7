"""The default target (issue 27, item 8): `--target ml` is a service shut down on 2025-01-31, so a command on it
says so once, naming `--target vertex`; `MLSUBMIT_TARGET` sets the default for every command (gcloud's style of
a setting a user or CI sets once), and `MLSUBMIT_TARGET=ml` keeps ml without the notice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.trainers import write_trainer

NOTICE = "--target ml is AI Platform Training, which stopped running jobs on 2025-01-31; --target vertex runs"
ARGS = ["training", "j1", "--module-name", "trainer.task", "--region", "us-central1", "--project", "p1"]
ARGS += ["--staging-bucket", "gs://my-bucket", "--dry-run", "--format", "json"]


@pytest.fixture
def args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv("MLSUBMIT_TARGET")  # a new user's shell
    package = write_trainer(tmp_path, "print('hi')\n")
    return [*ARGS, "--package-path", str(package), "--runtime-version", "2.11"]


def test_the_default_ml_says_once_that_it_is_shut_down(args: list[str]) -> None:
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count(NOTICE) == 1 and "MLSUBMIT_TARGET=vertex" in result.stderr
    assert "trainingInput" in json.loads(result.stdout)  # still the ml v1 body it was asked for


def test_vertex_draws_no_notice_and_the_variable_sets_the_default(args: list[str]) -> None:
    framework = ["--framework", "scikit-learn", "--framework-version", "1.3"]
    args = [a for a in args if a not in ("--runtime-version", "2.11")] + framework
    explicit = run_cli([*args, "--target", "vertex"])
    assert explicit.exit_code == 0, explicit.stderr
    assert NOTICE not in explicit.stderr
    by_default = run_cli(args, env={"MLSUBMIT_TARGET": "vertex"})
    assert by_default.exit_code == 0, by_default.stderr
    assert json.loads(by_default.stdout) == json.loads(explicit.stdout)  # a Vertex AI CustomJob
    assert "jobSpec" in json.loads(by_default.stdout) and NOTICE not in by_default.stderr


def test_ml_chosen_for_good_is_quiet_and_a_bad_value_is_one_line(args: list[str]) -> None:
    quiet = run_cli(args, env={"MLSUBMIT_TARGET": "ml"})
    assert quiet.exit_code == 0 and NOTICE not in quiet.stderr
    bad = run_cli(args, env={"MLSUBMIT_TARGET": "vertx"})
    assert bad.exit_code == 2
    assert "MLSUBMIT_TARGET='vertx' is not one of ml, vertex" in bad.stderr and "Traceback" not in bad.stderr
