"""ml v1 tuning jobs as Vertex AI HyperparameterTuningJob bodies (mlsubmit.targets.hptuning)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.errors import InvalidJobError
from mlsubmit.targets.hptuning import parameter_spec
from mlsubmit.targets.translate import translate

IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"


def to_hptuning_job(body: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    done = translate(body, "hptuningjob", executor_image_uri=IMAGE)
    return done.body, done.warnings


def job(hyperparameters: dict[str, Any] | None, **training_input: Any) -> dict[str, Any]:
    ti: dict[str, Any] = {
        "region": "us-central1",
        "packageUris": ["gs://bkt/trainer-0.0.0.tar.gz"],
        "pythonModule": "trainer.task",
        "runtimeVersion": "2.11",
        "pythonVersion": "3.7",
        "jobDir": "gs://bkt/out",
        **training_input,
    }
    if hyperparameters is not None:
        ti["hyperparameters"] = hyperparameters
    return {"jobId": "tune_1", "trainingInput": ti}


HP = {
    "goal": "MINIMIZE",
    "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 0.1}],
}


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        (
            {
                "parameterName": "lr",
                "type": "DOUBLE",
                "minValue": 0.001,
                "maxValue": 0.1,
                "scaleType": "NONE",
            },
            {
                "parameterId": "lr",
                "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1},
                "scaleType": "SCALE_TYPE_UNSPECIFIED",
            },
        ),
        (
            {
                "parameterName": "lr",
                "type": "DOUBLE",
                "minValue": 1e-4,
                "maxValue": 1,
                "scaleType": "UNIT_LOG_SCALE",
            },
            {
                "parameterId": "lr",
                "doubleValueSpec": {"minValue": 1e-4, "maxValue": 1.0},
                "scaleType": "UNIT_LOG_SCALE",
            },
        ),
        (
            {
                "parameterName": "m",
                "type": "DOUBLE",
                "minValue": 0.5,
                "maxValue": 0.99,
                "scaleType": "UNIT_REVERSE_LOG_SCALE",
            },
            {
                "parameterId": "m",
                "doubleValueSpec": {"minValue": 0.5, "maxValue": 0.99},
                "scaleType": "UNIT_REVERSE_LOG_SCALE",
            },
        ),
        (
            {
                "parameterName": "n",
                "type": "INTEGER",
                "minValue": 1,
                "maxValue": 8,
                "scaleType": "UNIT_LINEAR_SCALE",
            },
            {
                "parameterId": "n",
                "integerValueSpec": {"minValue": "1", "maxValue": "8"},
                "scaleType": "UNIT_LINEAR_SCALE",
            },
        ),
        (
            {"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 8},
            {"parameterId": "n", "integerValueSpec": {"minValue": "1", "maxValue": "8"}},
        ),
        (
            {"parameterName": "units", "type": "DISCRETE", "discreteValues": [16, 32.5]},
            {"parameterId": "units", "discreteValueSpec": {"values": [16.0, 32.5]}},
        ),
        (
            {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adam"]},
            {"parameterId": "opt", "categoricalValueSpec": {"values": ["sgd", "adam"]}},
        ),
    ],
)
def test_parameter_specs(param: dict[str, Any], expected: dict[str, Any]) -> None:
    assert parameter_spec(param) == expected


def test_study_counts_and_trial_job_spec() -> None:
    hp = {**HP, "maxTrials": 20, "maxParallelTrials": 4, "maxFailedTrials": 3, "algorithm": "RANDOM_SEARCH"}
    body, warnings = to_hptuning_job(job(hp))
    assert body["displayName"] == "tune_1" and body["labels"] == {"mlsubmit_job_id": "tune_1"}
    assert body["studySpec"]["metrics"] == [{"metricId": "training/hptuning/metric", "goal": "MINIMIZE"}]
    assert body["studySpec"]["algorithm"] == "RANDOM_SEARCH"
    assert body["studySpec"]["measurementSelectionType"] == "LAST_MEASUREMENT"
    assert "medianAutomatedStoppingSpec" not in body["studySpec"]
    assert (body["maxTrialCount"], body["parallelTrialCount"], body["maxFailedTrialCount"]) == (20, 4, 3)
    pool = body["trialJobSpec"]["workerPoolSpecs"][0]
    assert pool["pythonPackageSpec"]["pythonModule"] == "trainer.task"
    assert body["trialJobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://bkt/out"}
    assert not any("enableTrialEarlyStopping" in w for w in warnings)


def test_defaults_and_metric_tag() -> None:
    body, _ = to_hptuning_job(job({**HP, "hyperparameterMetricTag": "loss"}))
    assert body["studySpec"]["metrics"][0]["metricId"] == "loss"
    assert body["studySpec"]["algorithm"] == "ALGORITHM_UNSPECIFIED"
    assert (body["maxTrialCount"], body["parallelTrialCount"]) == (1, 1)
    assert "maxFailedTrialCount" not in body


def test_early_stopping_is_the_median_rule_with_a_warning() -> None:
    body, warnings = to_hptuning_job(job({**HP, "enableTrialEarlyStopping": True}))
    assert body["studySpec"]["medianAutomatedStoppingSpec"] == {"useElapsedDuration": False}
    assert any("medianAutomatedStoppingSpec" in w for w in warnings)


def test_resume_is_refused_with_everything_else_vertex_cannot_express() -> None:
    bad = job({**HP, "resumePreviousJobId": "old_job"}, scheduling={"priority": 5})
    with pytest.raises(InvalidJobError) as caught:
        to_hptuning_job(bad)
    paths = [p.path for p in caught.value.problems]
    assert "$.trainingInput.hyperparameters.resumePreviousJobId" in paths
    assert any("priority" in p for p in paths)
    assert "no equivalent of resumePreviousJobId" in str(caught.value)


def test_the_vertex_translation_picks_the_collection() -> None:
    assert translate(job(HP), "vertex", executor_image_uri=IMAGE).collection == "hyperparameterTuningJobs"
    custom = translate(job(None), "vertex", executor_image_uri=IMAGE)
    assert custom.collection == "customJobs" and "jobSpec" in custom.body
