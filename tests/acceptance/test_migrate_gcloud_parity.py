"""gcloud 528 as the oracle for `mlsubmit migrate`: the job file and command line it writes, run by the real
`gcloud ai custom-jobs create` / `gcloud ai hp-tuning-jobs create` against the loopback Vertex AI fake, send the
body mlsubmit's own `training --target vertex` sends for the same flags (docs/migrate.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.gcloud_oracle import requires_gcloud, run_gcloud
from tests.fakes.lifecycle_support import point_cli_at, run_cli

pytestmark = [requires_gcloud, pytest.mark.gcloud]

JOB = [
    "--region", "us-central1", "--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task",
    "--runtime-version", "2.11", "--labels", "team=ml", "--job-dir", "gs://bkt/out",
]  # fmt: skip


def migrated(tmp_path: Path, *args: str) -> dict[str, Any]:
    result = run_cli(
        ["migrate", "j1", "--output-dir", str(tmp_path / "out"), "--format", "json", *JOB, *args]
    )
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def ours(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with FakeGoogleApis() as server:
        point_cli_at(monkeypatch, server)
        result = run_cli(["training", "j1", "--target", "vertex", *JOB, *args])
        assert result.exit_code == 0, result.stderr
        return server.custom_job_bodies, server.tuning_job_bodies


def theirs(tmp_path: Path, command: list[str]) -> Any:
    assert command[0] == "gcloud"
    with FakeGoogleApis() as server:
        run = run_gcloud(command[1:], server, cwd=tmp_path / "out")
    assert run.returncode == 0, run.stderr
    return run


def test_custom_job_file_and_command_send_the_same_body(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cluster = ("--scale-tier", "custom", "--master-machine-type", "n1-standard-8", "--worker-count", "2",
               "--worker-machine-type", "n1-standard-4", "--scheduling-strategy", "spot", "--", "--epochs", "3")  # fmt: skip
    document = migrated(tmp_path, *cluster)
    (body,), _ = ours(monkeypatch, *cluster)
    assert theirs(tmp_path, document["command"]).custom_job_bodies == [body]


def test_tuning_job_file_and_command_send_the_same_body(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "hp.yaml"
    config.write_text(
        "trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    hyperparameterMetricTag: accuracy\n"
        "    maxTrials: 6\n    maxParallelTrials: 2\n    enableTrialEarlyStopping: true\n    params:\n"
        "    - {parameterName: lr, type: DOUBLE, minValue: 0.001, maxValue: 0.1, scaleType: UNIT_LOG_SCALE}\n"
        "    - {parameterName: units, type: INTEGER, minValue: 8, maxValue: 64}\n"
        "    - {parameterName: opt, type: CATEGORICAL, categoricalValues: [adam, sgd]}\n"
    )
    document = migrated(tmp_path, "--config", str(config))
    _, (body,) = ours(monkeypatch, "--config", str(config))
    assert theirs(tmp_path, document["command"]).tuning_job_bodies == [body]
