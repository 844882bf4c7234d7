"""Tuning jobs on the services: the Vertex HyperparameterTuningJob body against the aiplatform v1 schema on the
loopback server, created exactly once, and `jobs describe/wait/list` showing the same trials table for an ml v1
and a Vertex tuning job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlsubmit.job.vocab import JOB_ID_LABEL, job_id_label
from mlsubmit.services.ml import Caller
from mlsubmit.services.vertex import VertexJobs
from tests.fakes.api_server import VERTEX_TUNING_CREATE, FakeGoogleApis
from tests.fakes.clients import production_service
from tests.fakes.lifecycle_support import PROJECT, parse_json, point_cli_at, run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "trainer_tune" / "config.yaml"
REGION = "us-central1"
VERTEX = ["--target", "vertex", "--region", REGION]
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
FLAGS = ["--packages", "gs://bkt/pkgs/trainer-0.0.0.tar.gz", "--job-dir", "gs://bkt/out", "--region", REGION]
EVERY_TYPE = {
    "goal": "MINIMIZE",
    "hyperparameterMetricTag": "loss",
    "algorithm": "RANDOM_SEARCH",
    "maxTrials": 8,
    "maxParallelTrials": 2,
    "maxFailedTrials": 2,
    "params": [
        {"parameterName": "a", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1, "scaleType": "NONE"},
        {
            "parameterName": "b",
            "type": "DOUBLE",
            "minValue": 0.1,
            "maxValue": 1,
            "scaleType": "UNIT_LINEAR_SCALE",
        },
        {
            "parameterName": "c",
            "type": "DOUBLE",
            "minValue": 0.1,
            "maxValue": 1,
            "scaleType": "UNIT_LOG_SCALE",
        },
        {
            "parameterName": "d",
            "type": "DOUBLE",
            "minValue": 0.1,
            "maxValue": 1,
            "scaleType": "UNIT_REVERSE_LOG_SCALE",
        },
        {
            "parameterName": "e",
            "type": "INTEGER",
            "minValue": 1,
            "maxValue": 64,
            "scaleType": "UNIT_LOG_SCALE",
        },
        {"parameterName": "f", "type": "DISCRETE", "discreteValues": [1, 2.5, 10]},
        {"parameterName": "g", "type": "CATEGORICAL", "categoricalValues": ["x", "y"]},
    ],
}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def tuning_backend(server: FakeGoogleApis) -> VertexJobs:
    service = production_service("aiplatform", server.url)
    return VertexJobs(
        service, PROJECT, REGION, Caller(sleep=lambda _s: None), collection="hyperparameterTuningJobs"
    )


def exported(config: Path, job_id: str = "tune_1") -> dict[str, Any]:
    result = run_cli(
        [
            "export",
            "--format",
            "hptuningjob",
            job_id,
            "--config",
            str(config),
            *FLAGS,
            "--executor-image-uri",
            IMAGE,
            "--output",
            "json",
        ]
    )
    assert result.exit_code == 0, result.stderr
    body: dict[str, Any] = json.loads(result.stdout)
    return body


@pytest.mark.parametrize("hyperparameters", [None, EVERY_TYPE])
def test_tuning_job_body_passes_the_aiplatform_schema(
    fake_apis: FakeGoogleApis, tmp_path: Path, hyperparameters: dict[str, Any] | None
) -> None:
    config = EXAMPLE
    if hyperparameters is not None:
        config = tmp_path / "every_type.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "trainingInput": {
                        "pythonModule": "trainer.task",
                        "runtimeVersion": "2.11",
                        "hyperparameters": hyperparameters,
                    }
                }
            )
        )
    body = exported(config)
    shown = tuning_backend(fake_apis).create(body, "tune_1").job
    assert shown["jobId"] == "tune_1" and shown["state"] == "QUEUED"
    (stored,) = fake_apis.tuning_jobs.values()  # stored only after the server's schema check
    assert stored["name"].startswith(f"projects/{PROJECT}/locations/{REGION}/hyperparameterTuningJobs/")
    study = stored["studySpec"]
    if hyperparameters is None:
        assert study["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
        assert "medianAutomatedStoppingSpec" in study
    else:
        scales = {p["parameterId"]: p.get("scaleType") for p in study["parameters"]}
        assert scales == {
            "a": "SCALE_TYPE_UNSPECIFIED",
            "b": "UNIT_LINEAR_SCALE",
            "c": "UNIT_LOG_SCALE",
            "d": "UNIT_REVERSE_LOG_SCALE",
            "e": "UNIT_LOG_SCALE",
            "f": None,
            "g": None,
        }
        assert stored["maxFailedTrialCount"] == 2 and stored["parallelTrialCount"] == 2


def test_a_lost_create_answer_still_gives_one_tuning_job(fake_apis: FakeGoogleApis) -> None:
    body = exported(EXAMPLE)
    fake_apis.inject("POST", VERTEX_TUNING_CREATE, 503, after=True)  # created, but the answer is lost
    backend = tuning_backend(fake_apis)
    result = backend.create(body, "tune_1")
    assert len(fake_apis.tuning_jobs) == 1 and len(fake_apis.tuning_job_bodies) == 1
    assert result.recovered and result.job["jobId"] == "tune_1"


def test_training_target_vertex_creates_a_tuning_job(fake_apis: FakeGoogleApis) -> None:
    result = run_cli(
        [
            "training",
            "tune_2",
            "--config",
            str(EXAMPLE),
            *FLAGS,
            "--target",
            "vertex",
            "--executor-image-uri",
            IMAGE,
            "--format",
            "json",
        ]
    )
    assert result.exit_code == 0, result.stderr
    (stored,) = fake_apis.tuning_jobs.values()
    assert stored["displayName"] == "tune_2" and not fake_apis.custom_jobs
    assert "medianAutomatedStoppingSpec" in result.stderr


def test_resume_previous_job_is_refused_for_vertex(tmp_path: Path) -> None:
    config = tmp_path / "resume.yaml"
    data = yaml.safe_load(EXAMPLE.read_text())
    data["trainingInput"]["hyperparameters"]["resumePreviousJobId"] = "old_job"
    config.write_text(yaml.safe_dump(data))
    result = run_cli(
        [
            "export",
            "--format",
            "hptuningjob",
            "tune_1",
            "--config",
            str(config),
            *FLAGS,
            "--executor-image-uri",
            IMAGE,
        ]
    )
    assert result.exit_code == 2
    assert "resumePreviousJobId: Vertex AI has no equivalent of resumePreviousJobId" in result.stderr


# The same finished study as ml v1 and Vertex AI report it.
ML_TRIALS = [
    {
        "trialId": "1",
        "hyperparameters": {"lr": "0.1", "units": "16"},
        "state": "SUCCEEDED",
        "finalMetric": {"trainingStep": "5", "objectiveValue": 0.75},
        "startTime": "2026-11-01T10:00:00Z",
        "endTime": "2026-11-01T10:01:00Z",
    },
    {
        "trialId": "2",
        "hyperparameters": {"lr": "0.01", "units": "32"},
        "state": "SUCCEEDED",
        "finalMetric": {"trainingStep": "5", "objectiveValue": 0.9},
        "startTime": "2026-11-01T10:00:00Z",
        "endTime": "2026-11-01T10:02:30.5Z",
    },
    {
        "trialId": "3",
        "hyperparameters": {"lr": "1", "units": "64"},
        "state": "FAILED",
        "startTime": "2026-11-01T10:01:00Z",
        "endTime": "2026-11-01T10:01:10Z",
    },
]
VERTEX_TRIALS = [
    {
        "id": t["trialId"],
        "state": "SUCCEEDED" if t["state"] == "SUCCEEDED" else "INFEASIBLE",
        "parameters": [{"parameterId": k, "value": float(v)} for k, v in t["hyperparameters"].items()],
        **(
            {
                "finalMeasurement": {
                    "stepCount": t["finalMetric"]["trainingStep"],
                    "metrics": [{"metricId": "accuracy", "value": t["finalMetric"]["objectiveValue"]}],
                }
            }
            if "finalMetric" in t
            else {}
        ),
        "startTime": t["startTime"],
        "endTime": t["endTime"],
    }
    for t in ML_TRIALS
]


def seed_both(server: FakeGoogleApis) -> None:
    server.script_job("ml_tune", ["SUCCEEDED"])
    server.add_job(
        {
            "jobId": "ml_tune",
            "trainingInput": {
                "region": REGION,
                "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "accuracy"},
            },
            "trainingOutput": {
                "isHyperparameterTuningJob": True,
                "completedTrialCount": "2",
                "hyperparameterMetricTag": "accuracy",
                "trials": ML_TRIALS,
            },
        },
        project=PROJECT,
    )
    server.add_tuning_job(
        {
            "displayName": "vx_tune",
            "labels": {JOB_ID_LABEL: job_id_label("vx_tune")},
            "state": "JOB_STATE_SUCCEEDED",
            "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}], "parameters": []},
            "maxTrialCount": 3,
            "parallelTrialCount": 1,
            "trials": VERTEX_TRIALS,
        },
        project=PROJECT,
        region=REGION,
    )


def table(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TRIAL "))
    return lines[start:]


def test_describe_prints_the_same_trials_table_for_ml_and_vertex(fake_apis: FakeGoogleApis) -> None:
    seed_both(fake_apis)
    ml = run_cli(["jobs", "describe", "ml_tune"])
    vx = run_cli(["jobs", "describe", "vx_tune", *VERTEX])
    assert ml.exit_code == 0 and vx.exit_code == 0, ml.stderr + vx.stderr
    assert table(ml.stdout) == table(vx.stdout)
    rows = table(ml.stdout)
    assert rows[0].split() == ["TRIAL", "PARAMETERS", "OBJECTIVE", "STEP", "STATE", "TIME"]
    assert rows[1].split() == ["2", "lr=0.01", "units=32", "0.9", "5", "SUCCEEDED", "150.5s"]
    assert rows[2].split()[0] == "1" and rows[3].split()[0] == "3" and "FAILED" in rows[3]
    assert rows[-1] == "Best trial: 2 (objective 0.9 at step 5): lr=0.01 units=32"
    # The numeric id finds the tuning job too, and JSON output is the whole resource.
    number = next(iter(fake_apis.tuning_jobs))
    as_json = run_cli(["jobs", "describe", number, *VERTEX, "--format", "json"])
    assert as_json.exit_code == 0, as_json.stderr
    assert parse_json(as_json)["jobId"] == "vx_tune"


def test_wait_ends_with_the_best_trial_and_list_marks_tuning_jobs(fake_apis: FakeGoogleApis) -> None:
    seed_both(fake_apis)
    for args in (["ml_tune"], ["vx_tune", *VERTEX]):
        waited = run_cli(["jobs", "wait", *args])
        assert waited.exit_code == 0, waited.stderr
        assert (
            waited.stdout.rstrip().splitlines()[-1]
            == "Best trial: 2 (objective 0.9 at step 5): lr=0.01 units=32"
        )
    listed = run_cli(["jobs", "list", *VERTEX])
    assert listed.exit_code == 0, listed.stderr
    header, row = listed.stdout.splitlines()[:2]
    assert header.split()[-1] == "TUNING" and row.split()[0] == "vx_tune" and row.split()[-1] == "yes"
    cancelled = run_cli(["jobs", "cancel", "vx_tune", *VERTEX])
    assert cancelled.exit_code == 0 and "already ended" in cancelled.stderr


def test_stream_logs_follows_a_vertex_tuning_job(fake_apis: FakeGoogleApis) -> None:
    fake_apis.add_tuning_job(
        {
            "displayName": "vx_logs",
            "labels": {JOB_ID_LABEL: job_id_label("vx_logs")},
            "studySpec": {"metrics": [{"metricId": "m", "goal": "MAXIMIZE"}], "parameters": []},
            "maxTrialCount": 1,
            "parallelTrialCount": 1,
        },
        project=PROJECT,
        region=REGION,
    )
    number = next(iter(fake_apis.tuning_jobs))
    fake_apis.add_log_lines(
        number, ["trial 1 epoch 1"], task_name="workerpool0-0", when_state="JOB_STATE_RUNNING"
    )
    result = run_cli(["jobs", "stream-logs", "vx_logs", *VERTEX])
    assert result.exit_code == 0, result.stderr
    assert "trial 1 epoch 1" in result.stdout
