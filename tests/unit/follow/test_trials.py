"""The trials table of ml v1, Vertex AI and local tuning jobs (mlsubmit.follow.trials)."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.follow.trials import best_line, is_tuning_job, trials_of, trials_table, trials_text


def ml_job(goal: str, trials: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "jobId": "j",
        "trainingInput": {"hyperparameters": {"goal": goal}},
        "trainingOutput": {"isHyperparameterTuningJob": True, "trials": trials},
    }


TRIALS = [
    {
        "trialId": "1",
        "hyperparameters": {"x": "1"},
        "state": "SUCCEEDED",
        "finalMetric": {"trainingStep": "3", "objectiveValue": 0.2},
    },
    {
        "trialId": "2",
        "hyperparameters": {"x": "2"},
        "state": "SUCCEEDED",
        "isTrialStoppedEarly": True,
        "finalMetric": {"trainingStep": "1", "objectiveValue": 0.1},
    },
    {"trialId": "10", "hyperparameters": {"x": "3"}, "state": "RUNNING"},
]


@pytest.mark.parametrize(
    ("goal", "order", "best"), [("MAXIMIZE", ["1", "2", "10"], "1"), ("MINIMIZE", ["2", "1", "10"], "2")]
)
def test_rows_sort_by_goal_and_trials_without_objective_go_last(
    goal: str, order: list[str], best: str
) -> None:
    trials = trials_of(ml_job(goal, TRIALS))
    assert trials is not None
    assert [r.trial_id for r in trials.rows] == order
    assert trials.best is not None and trials.best.trial_id == best


def test_table_marks_stopped_trials_and_leaves_unknowns_blank() -> None:
    trials = trials_of(ml_job("MAXIMIZE", TRIALS))
    assert trials is not None
    lines = trials_table(trials).splitlines()
    assert lines[2].split() == ["2", "x=2", "0.1", "1", "STOPPED_EARLY"]
    assert lines[3].split() == ["10", "x=3", "RUNNING"]
    assert best_line(trials) == "Best trial: 1 (objective 0.2 at step 3): x=1"


def test_vertex_trials_and_nanosecond_times() -> None:
    job = {
        "studySpec": {"metrics": [{"metricId": "m", "goal": "MINIMIZE"}]},
        "trials": [
            {
                "id": "1",
                "state": "SUCCEEDED",
                "parameters": [{"parameterId": "x", "value": 2.0}],
                "finalMeasurement": {"stepCount": "7", "metrics": [{"metricId": "m", "value": 1.5}]},
                "startTime": "2026-11-01T10:00:00.123456789Z",
                "endTime": "2026-11-01T10:00:02.623456789Z",
            },
            {"id": "2", "state": "INFEASIBLE", "parameters": [{"parameterId": "x", "value": "a"}]},
        ],
    }
    trials = trials_of(job)
    assert trials is not None and not trials.maximize
    first = trials.rows[0]
    assert (first.parameters, first.objective, first.step, first.seconds) == ((("x", "2"),), 1.5, "7", 2.5)
    assert trials.rows[1].state == "FAILED"


def test_plain_jobs_are_not_tuning_jobs() -> None:
    plain = {"jobId": "j", "trainingInput": {"region": "r"}, "state": "SUCCEEDED"}
    assert not is_tuning_job(plain) and trials_of(plain) is None and trials_text(plain) is None
    assert trials_text(ml_job("MAXIMIZE", [])) == "Trials: none yet."
