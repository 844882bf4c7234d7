"""Grid, random and Optuna samplers: every point once, in range, and learning from resumed trials."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.local.tune.samplers import GridSampler, OptunaSampler, RandomSampler, make_sampler
from mlsubmit.local.tune.space import study_spec
from mlsubmit.local.tune.study import TrialRecord

PARAMS: list[dict[str, Any]] = [
    {
        "parameterName": "lr",
        "type": "DOUBLE",
        "minValue": 0.001,
        "maxValue": 0.1,
        "scaleType": "UNIT_LOG_SCALE",
    },
    {
        "parameterName": "m",
        "type": "DOUBLE",
        "minValue": 0.5,
        "maxValue": 0.99,
        "scaleType": "UNIT_REVERSE_LOG_SCALE",
    },
    {"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 8},
    {"parameterName": "u", "type": "DISCRETE", "discreteValues": [16, 32]},
    {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adam"]},
]


def in_space(point: dict[str, Any]) -> bool:
    return (
        0.001 <= point["lr"] <= 0.1
        and 0.5 <= point["m"] <= 0.99
        and isinstance(point["n"], int)
        and 1 <= point["n"] <= 8
        and point["u"] in (16, 32)
        and point["opt"] in ("sgd", "adam")
    )


def test_make_sampler_follows_the_algorithm() -> None:
    assert isinstance(
        make_sampler(
            study_spec({"goal": "MAXIMIZE", "params": PARAMS[2:], "algorithm": "GRID_SEARCH"}), None
        ),
        GridSampler,
    )
    assert isinstance(
        make_sampler(study_spec({"goal": "MAXIMIZE", "params": PARAMS, "algorithm": "RANDOM_SEARCH"}), 1),
        RandomSampler,
    )
    assert isinstance(make_sampler(study_spec({"goal": "MAXIMIZE", "params": PARAMS}), 1), OptunaSampler)


def test_grid_skips_points_already_given_out_and_ends() -> None:
    spec = study_spec({"goal": "MAXIMIZE", "params": PARAMS[3:], "algorithm": "GRID_SEARCH"})
    grid = GridSampler(spec)
    grid.observe(TrialRecord("1", {"u": 16, "opt": "adam"}, state="RUNNING"))
    points = [grid.suggest(str(i)) for i in range(4)]
    assert points == [{"u": 16, "opt": "sgd"}, {"u": 32, "opt": "sgd"}, {"u": 32, "opt": "adam"}, None]


def test_random_is_repeatable_with_a_seed() -> None:
    spec = study_spec({"goal": "MAXIMIZE", "params": PARAMS, "algorithm": "RANDOM_SEARCH"})
    first = [RandomSampler(spec, 5).suggest("1") for _ in range(1)]
    again = [RandomSampler(spec, 5).suggest("1") for _ in range(1)]
    assert first == again and all(p is not None and in_space(p) for p in first)


def test_optuna_suggests_in_the_space_and_learns_from_resumed_trials() -> None:
    pytest.importorskip("optuna")
    spec = study_spec({"goal": "MAXIMIZE", "params": PARAMS})
    sampler = OptunaSampler(spec, seed=3)
    resumed = TrialRecord(
        "1", {"lr": 0.01, "m": 0.9, "n": 2, "u": 32, "opt": "adam"}, state="SUCCEEDED", objective=0.8, step=5
    )
    sampler.observe(resumed)
    sampler.observe(TrialRecord("2", {"lr": 0.05, "m": 0.6, "n": 7, "u": 16, "opt": "sgd"}, state="FAILED"))
    for number in range(3, 9):
        point = sampler.suggest(str(number))
        assert point is not None and in_space(point), point
        done = TrialRecord(
            str(number),
            point,
            state="SUCCEEDED",
            objective=point["lr"],
            step=1,
            intermediate=[[1, point["lr"]]],
        )
        sampler.observe(done)
    trials = sampler._study.trials
    assert len(trials) == 8
    assert trials[0].params["m"] == pytest.approx(0.5 + 0.99 - 0.9)  # stored on the mirrored log scale


def test_optuna_missing_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(UsageError, match=r"pip install 'mlsubmit\[tune\]'"):
        OptunaSampler(study_spec({"goal": "MAXIMIZE", "params": PARAMS}), None)
