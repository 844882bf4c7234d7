"""A study's search space and settings from ``trainingInput.hyperparameters`` (docs/local.md), with ml v1's defaults
(https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#HyperparameterSpec).
``UNIT_REVERSE_LOG_SCALE`` mirrors the log scale: ``min + max - z`` for ``z`` drawn on the log scale."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlsubmit.errors import UsageError

DEFAULT_METRIC_TAG = "training/hptuning/metric"
GRID = "GRID_SEARCH"
BAYESIAN = "ALGORITHM_UNSPECIFIED"
LOG = "UNIT_LOG_SCALE"
REVERSE_LOG = "UNIT_REVERSE_LOG_SCALE"

HP = "$.trainingInput.hyperparameters"
# the kinds of parameter that list their values, and where
LISTED = {"CATEGORICAL": "categoricalValues", "DISCRETE": "discreteValues"}


@dataclass(frozen=True)
class Param:
    """One tuned parameter (ml v1 ``ParameterSpec``)."""

    name: str
    kind: str  # DOUBLE | INTEGER | CATEGORICAL | DISCRETE
    low: float | None = None
    high: float | None = None
    values: tuple[Any, ...] = ()  # categoricalValues (str) or discreteValues (numbers), as written
    scale: str = "NONE"

    def choices(self) -> Sequence[Any]:
        """Every value of a grid parameter, in order (INTEGER: min..max, a lazy ``range``: never built)."""
        return range(int(self.low or 0), int(self.high or 0) + 1) if self.kind == "INTEGER" else self.values

    def count(self) -> int:
        """How many values :meth:`choices` has (``len`` of a range past 2**63 would overflow)."""
        if self.kind == "INTEGER":
            return max(0, int(self.high or 0) - int(self.low or 0) + 1)
        return len(self.values)


@dataclass(frozen=True)
class StudySpec:
    """What the study does: its space, objective and budgets."""

    params: tuple[Param, ...]
    goal: str  # MAXIMIZE | MINIMIZE
    metric_tag: str = DEFAULT_METRIC_TAG
    max_trials: int = 1
    max_parallel: int = 1
    max_failed: int = 0  # 0: the default rule (see mlsubmit.local.tune.study)
    algorithm: str = BAYESIAN
    early_stopping: bool = False
    resume_job_id: str | None = None

    @property
    def maximize(self) -> bool:
        """True when larger objectives are better."""
        return self.goal == "MAXIMIZE"


def study_spec(hp: Mapping[str, Any] | None) -> StudySpec:
    """The study a schema-valid ``hyperparameters`` block describes; UsageError when there is none or it cannot run."""
    if not hp:
        raise UsageError(
            f"{HP}: the --config file has no hyperparameters block; add one with goal and params "
            "(docs/local.md), or use `mlsubmit local train`."
        )
    params = tuple(_param(p) for p in hp["params"])
    algorithm = str(hp.get("algorithm") or BAYESIAN)
    if algorithm == GRID and (doubles := [p.name for p in params if p.kind == "DOUBLE"]):
        raise UsageError(
            f"{HP}.algorithm: GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE parameters; "
            f"{', '.join(doubles)} is DOUBLE: give it discreteValues (type DISCRETE) or use RANDOM_SEARCH."
        )
    return StudySpec(
        params=params,
        goal=str(hp["goal"]),
        metric_tag=str(hp.get("hyperparameterMetricTag") or DEFAULT_METRIC_TAG),
        max_trials=int(hp.get("maxTrials") or 1),
        max_parallel=int(hp.get("maxParallelTrials") or 1),
        max_failed=int(hp.get("maxFailedTrials") or 0),
        algorithm=algorithm,
        early_stopping=bool(hp.get("enableTrialEarlyStopping")),
        resume_job_id=str(hp["resumePreviousJobId"]) if hp.get("resumePreviousJobId") else None,
    )


def _param(raw: Mapping[str, Any]) -> Param:
    kind = str(raw["type"])
    values = tuple(raw[LISTED[kind]]) if kind in LISTED else ()  # the rules make sure they are given
    low, high = (None if raw.get(k) is None else float(raw[k]) for k in ("minValue", "maxValue"))
    return Param(str(raw["parameterName"]), kind, low, high, values, str(raw.get("scaleType") or "NONE"))


def grid_points(params: Sequence[Param]) -> Iterator[dict[str, Any]]:
    """Every combination, the first parameter changing slowest; walked by index, so no range is ever copied."""
    counts = [p.count() for p in params]
    choices = [p.choices() for p in params]
    for index in range(math.prod(counts)):
        picked: list[Any] = []
        for count, values in zip(reversed(counts), reversed(choices), strict=True):
            index, at = divmod(index, count)
            picked.append(values[at])
        yield {p.name: v for p, v in zip(params, reversed(picked), strict=True)}


def random_value(param: Param, rng: random.Random) -> Any:
    """One value of ``param`` drawn on its scale."""
    if param.kind in LISTED:
        return rng.choice(param.values)
    assert param.low is not None and param.high is not None
    lo, hi = param.low, param.high
    if param.scale in (LOG, REVERSE_LOG):
        z = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        x = lo + hi - z if param.scale == REVERSE_LOG else z
    else:
        x = rng.uniform(lo, hi)
    x = min(hi, max(lo, x))
    return int(min(hi, max(lo, round(x)))) if param.kind == "INTEGER" else x


def trial_args(point: Mapping[str, Any]) -> list[str]:
    """The arguments the service appended for a trial: ``--NAME=VALUE`` per parameter, in order."""
    return [f"--{name}={value}" for name, value in point.items()]
