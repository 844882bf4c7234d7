"""Where each trial's parameters come from: a grid, random draws, or Optuna's TPE sampler (https://optuna.org, the
``mlsubmit[tune]`` extra); every sampler observes every trial that ends, a resumed study's included."""

from __future__ import annotations

import random
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.local.tune.space import (
    BAYESIAN,
    GRID,
    LISTED,
    LOG,
    REVERSE_LOG,
    Param,
    StudySpec,
    grid_points,
    random_value,
)
from mlsubmit.local.tune.study import TrialRecord


def make_sampler(spec: StudySpec, seed: int | None) -> GridSampler | RandomSampler | OptunaSampler:
    """The sampler ``spec.algorithm`` asks for: ``suggest`` the next point (None: no more), ``observe`` a trial."""
    if spec.algorithm == GRID:
        return GridSampler(spec)
    if spec.algorithm == BAYESIAN:
        return OptunaSampler(spec, seed)
    return RandomSampler(spec, seed)


class GridSampler:
    """Every combination in order (see :func:`grid_points`), each once; tried combinations are skipped."""

    def __init__(self, spec: StudySpec) -> None:
        self._tried: list[dict[str, Any]] = []
        self._points = (point for point in grid_points(spec.params) if point not in self._tried)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        point = next(self._points, None)
        if point is not None:
            self._tried.append(point)
        return point

    def observe(self, trial: TrialRecord) -> None:
        if trial.point not in self._tried:
            self._tried.append(dict(trial.point))


class RandomSampler:
    """Independent draws, each parameter on its scale."""

    def __init__(self, spec: StudySpec, seed: int | None) -> None:
        self._params = spec.params
        self._rng = random.Random(seed)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        return {p.name: random_value(p, self._rng) for p in self._params}

    def observe(self, trial: TrialRecord) -> None:
        return None


class OptunaSampler:
    """Optuna's TPE sampler through its ask-and-tell interface, in memory (the study file is the record)."""

    def __init__(self, spec: StudySpec, seed: int | None) -> None:
        try:
            import optuna
        except ImportError:
            raise UsageError(
                "the default (Bayesian) tuning algorithm needs Optuna: pip install 'mlsubmit[tune]' "
                "(or set algorithm: RANDOM_SEARCH or GRID_SEARCH)."
            ) from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._params = spec.params
        self._distributions = {p.name: _distribution(optuna, p) for p in spec.params}
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=spec.max_parallel > 1)
        self._study = optuna.create_study(
            direction="maximize" if spec.maximize else "minimize", sampler=sampler
        )
        self._asked: dict[str, Any] = {}

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        trial = self._study.ask(self._distributions)
        self._asked[trial_id] = trial
        return {p.name: _mirrored(p, trial.params[p.name]) for p in self._params}

    def observe(self, trial: TrialRecord) -> None:
        state_enum = self._optuna.trial.TrialState
        if trial.state == "SUCCEEDED" and trial.objective is not None and not trial.stopped_early:
            state, value = state_enum.COMPLETE, trial.objective
        elif trial.stopped_early:
            state, value = state_enum.PRUNED, None
        elif trial.state == "FAILED":
            state, value = state_enum.FAIL, None
        else:
            return  # cancelled: it will run again
        asked = self._asked.pop(trial.trial_id, None)
        if asked is not None:
            for step, reported in sorted(trial.intermediate_values().items()):
                asked.report(reported, step)
            self._study.tell(asked, value, state=state)
            return
        self._study.add_trial(
            self._optuna.trial.create_trial(
                params={p.name: _mirrored(p, trial.point[p.name]) for p in self._params},
                distributions=self._distributions,
                value=value,
                state=state,
                intermediate_values=trial.intermediate_values(),
            )
        )


def _distribution(optuna: Any, param: Param) -> Any:
    dists = optuna.distributions
    if param.kind in LISTED:
        return dists.CategoricalDistribution(list(param.values))
    log = param.scale in (LOG, REVERSE_LOG)
    if param.kind == "INTEGER":
        return dists.IntDistribution(int(param.low or 0), int(param.high or 0), log=log)
    return dists.FloatDistribution(param.low, param.high, log=log)


def _mirrored(param: Param, value: Any) -> Any:
    """A reverse-log value to or from Optuna's log scale (the mirror is its own inverse)."""
    if param.scale == REVERSE_LOG and param.low is not None and param.high is not None:
        mirrored = param.low + param.high - value
        return round(mirrored) if param.kind == "INTEGER" else float(mirrored)
    return value
