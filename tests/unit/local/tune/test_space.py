"""The hyperparameters block as a study: defaults, grid order, sampling scales, trial arguments."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.local.tune.space import (
    Param,
    grid_points,
    random_value,
    study_spec,
    trial_args,
)

LR = {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 0.1}


def test_defaults_are_the_services() -> None:
    spec = study_spec({"goal": "MAXIMIZE", "params": [LR]})
    assert spec.metric_tag == "training/hptuning/metric"
    assert (spec.max_trials, spec.max_parallel, spec.max_failed) == (1, 1, 0)
    assert spec.algorithm == "ALGORITHM_UNSPECIFIED" and not spec.early_stopping
    assert spec.params[0] == Param("lr", "DOUBLE", 0.001, 0.1)
    assert spec.maximize and not study_spec({"goal": "MINIMIZE", "params": [LR]}).maximize


@pytest.mark.parametrize(
    ("hyperparameters", "message"),
    [
        (None, "has no hyperparameters block"),
        ({"goal": "MAXIMIZE", "algorithm": "GRID_SEARCH", "params": [LR]}, "lr is DOUBLE"),
    ],
)
def test_studies_that_cannot_run_are_refused(hyperparameters: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        study_spec(hyperparameters)


def test_grid_is_every_combination_first_parameter_slowest() -> None:
    params = study_spec(
        {
            "goal": "MAXIMIZE",
            "params": [
                {"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 2},
                {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["a", "b"]},
                {"parameterName": "u", "type": "DISCRETE", "discreteValues": [8, 16.5]},
            ],
        }
    ).params
    points = list(grid_points(params))
    assert len(points) == 8
    assert points[:3] == [
        {"n": 1, "opt": "a", "u": 8},
        {"n": 1, "opt": "a", "u": 16.5},
        {"n": 1, "opt": "b", "u": 8},
    ]
    assert points[-1] == {"n": 2, "opt": "b", "u": 16.5}


@pytest.mark.parametrize(
    ("scale", "expect_median_near"),
    [
        ("UNIT_LINEAR_SCALE", 50.5),  # the middle
        ("UNIT_LOG_SCALE", 10.0),  # the geometric mean: dense near the minimum
        ("UNIT_REVERSE_LOG_SCALE", 91.0),  # its mirror image: dense near the maximum
    ],
)
def test_random_values_follow_their_scale(scale: str, expect_median_near: float) -> None:
    param = Param("x", "DOUBLE", 1.0, 100.0, scale=scale)
    rng = random.Random(0)
    values = [random_value(param, rng) for _ in range(4000)]
    assert all(1.0 <= v <= 100.0 for v in values)
    assert math.isclose(statistics.median(values), expect_median_near, rel_tol=0.1)


def test_random_integers_and_choices_stay_in_the_space() -> None:
    rng = random.Random(1)
    integer = Param("n", "INTEGER", 1, 5, scale="UNIT_LOG_SCALE")
    assert {random_value(integer, rng) for _ in range(500)} == {1, 2, 3, 4, 5}
    discrete = Param("u", "DISCRETE", values=(8, 16))
    assert {random_value(discrete, rng) for _ in range(100)} == {8, 16}


def test_trial_args_are_name_equals_value_in_order() -> None:
    point = {"lr": 0.001, "units": 16, "decay": 1.0, "opt": "adam"}
    assert trial_args(point) == ["--lr=0.001", "--units=16", "--decay=1.0", "--opt=adam"]  # as written
