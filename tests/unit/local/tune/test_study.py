"""The study file, the failure limit, the best trial and the ml v1 trainingOutput shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.local.tune.space import study_spec
from mlsubmit.local.tune.study import STUDY_FILE, Study, TrialRecord, training_output

HP: dict[str, Any] = {
    "goal": "MAXIMIZE",
    "params": [{"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 4}],
}


def trial(trial_id: str, state: str, objective: float | None = None, **extra: Any) -> TrialRecord:
    return TrialRecord(
        trial_id=trial_id, point={"n": int(trial_id)}, state=state, objective=objective, **extra
    )


def test_the_study_file_round_trips(tmp_path: Path) -> None:
    study = Study("s", dict(HP), [trial("1", "SUCCEEDED", 0.5, step=3, intermediate=[[1, 0.2], [3, 0.5]])])
    study.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [STUDY_FILE]  # no temporary file left behind
    loaded = Study.load(tmp_path, {**HP, "maxTrials": 9})  # budgets may change on resume
    assert loaded.trials == study.trials
    assert loaded.trials[0].intermediate_values() == {1: 0.2, 3: 0.5}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"goal": "MINIMIZE"}, "goal differ"),
        ({"algorithm": "GRID_SEARCH"}, "algorithm differ"),
        ({"hyperparameterMetricTag": "loss"}, "hyperparameterMetricTag differ"),
    ],
)
def test_a_different_study_is_not_resumed(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    Study("s", dict(HP)).save(tmp_path)
    with pytest.raises(UsageError, match=message):
        Study.load(tmp_path, {**HP, **change})


def test_missing_or_broken_study_files_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="nothing to resume"):
        Study.load(tmp_path, HP)
    (tmp_path / STUDY_FILE).write_text("{")
    with pytest.raises(UsageError, match="remove it to start afresh"):
        Study.load(tmp_path, HP)


@pytest.mark.parametrize(
    ("max_failed", "states", "reached"),
    [
        (2, ["FAILED", "SUCCEEDED"], False),
        (2, ["FAILED", "FAILED"], True),
        (0, ["FAILED", "FAILED"], False),
        (0, ["FAILED", "FAILED", "FAILED"], True),  # default: three failures and no success
        (0, ["SUCCEEDED", "FAILED", "FAILED", "FAILED"], False),
    ],
)
def test_failure_limit(max_failed: int, states: list[str], reached: bool) -> None:
    spec = study_spec({**HP, "maxFailedTrials": max_failed})
    study = Study("s", HP, [trial(str(i + 1), s) for i, s in enumerate(states)])
    assert (study.failure_reason(spec) is not None) is reached


def test_training_output_has_ml_v1s_shape_sorted_best_first() -> None:
    spec = study_spec({**HP, "hyperparameterMetricTag": "acc"})
    study = Study(
        "s",
        HP,
        [
            trial("1", "SUCCEEDED", 0.5, step=4, start_time="t0", end_time="t1"),
            trial("2", "FAILED", error="boom"),
            trial("3", "SUCCEEDED", 0.9, step=2, stopped_early=True),
        ],
    )
    out = training_output(study, spec)
    assert out["completedTrialCount"] == "2" and out["isHyperparameterTuningJob"] is True
    assert out["hyperparameterMetricTag"] == "acc"
    assert [t["trialId"] for t in out["trials"]] == ["3", "1", "2"]
    assert out["trials"][1] == {
        "trialId": "1",
        "hyperparameters": {"n": "1"},
        "finalMetric": {"trainingStep": "4", "objectiveValue": 0.5},
        "isTrialStoppedEarly": False,
        "state": "SUCCEEDED",
        "startTime": "t0",
        "endTime": "t1",
    }
    assert out["trials"][0]["isTrialStoppedEarly"] is True
    assert "finalMetric" not in out["trials"][2]
    assert study.best(spec) is study.trials[2]
    json.dumps(out)  # plain JSON
