"""Rules of a hyperparameter study the JSON Schema cannot say (ml v1 ParameterSpec). Equal bounds are not
refused (the field docs only say the values are required, and published studies pin a parameter that way)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

from mlsubmit.job.vocab import as_dict

Path = tuple[str | int, ...]
Found = Iterator[tuple[Path, str]]
TI = "trainingInput"


def check_hyperparameters(ti: dict[str, Any]) -> Found:
    hp = as_dict(ti.get("hyperparameters"))
    base: Path = (TI, "hyperparameters")
    max_trials = hp.get("maxTrials", 1)
    parallel = hp.get("maxParallelTrials")
    if isinstance(parallel, int) and isinstance(max_trials, int) and parallel > max_trials:
        yield (*base, "maxParallelTrials"), f"maxParallelTrials ({parallel}) exceeds maxTrials ({max_trials})"
    seen: set[str] = set()
    # a param that is no mapping is the schema's to report
    for i, param in enumerate(map(as_dict, hp.get("params") or [])):
        at: Path = (*base, "params", i)
        name = param.get("parameterName")
        if name in seen:
            yield (*at, "parameterName"), f"parameterName {name!r} is used twice; names must be unique"
        if isinstance(name, str):
            seen.add(name)
        kind = param.get("type")
        lo, hi = param.get("minValue"), param.get("maxValue")
        # YAML's .inf/.nan are floats the schema accepts, but they have no JSON spelling: the body would not parse.
        for key, v in (("minValue", lo), ("maxValue", hi)):
            if isinstance(v, float) and not math.isfinite(v):
                yield (*at, key), f"{key} must be a finite number, not {v}"
        values = param.get("discreteValues")
        if isinstance(values, list) and any(isinstance(v, float) and not math.isfinite(v) for v in values):
            yield (*at, "discreteValues"), "discreteValues must be finite numbers (no .inf or .nan)"
        if kind in ("DOUBLE", "INTEGER"):
            if lo is None or hi is None:
                yield at, f"a {kind} parameter needs minValue and maxValue"
            elif lo > hi:
                yield (*at, "minValue"), f"minValue ({lo}) must not be more than maxValue ({hi})"
            if kind == "INTEGER":
                for key, v in (("minValue", lo), ("maxValue", hi)):
                    if isinstance(v, float) and not v.is_integer():
                        yield (*at, key), f"an INTEGER parameter needs a whole {key}, not {v}"
            scale = param.get("scaleType")
            if scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and lo is not None and lo <= 0:
                yield (*at, "minValue"), f"{scale} needs minValue greater than 0"
        elif kind == "CATEGORICAL":
            if not param.get("categoricalValues"):
                yield at, "a CATEGORICAL parameter needs categoricalValues"
        elif kind == "DISCRETE":
            if not values:
                yield at, "a DISCRETE parameter needs discreteValues"
            elif any(b <= a for a, b in itertools.pairwise(values)):
                yield (*at, "discreteValues"), "discreteValues must be strictly increasing"
        if kind in ("CATEGORICAL", "DISCRETE") and (lo is not None or hi is not None):
            yield at, f"a {kind} parameter takes no minValue/maxValue"


def hyperparameter_warnings(ti: dict[str, Any]) -> Found:
    """Settings the service runs but that do not do what a study is for (warnings): a DOUBLE or INTEGER parameter
    with ``minValue == maxValue`` is fixed, every trial gets that one value."""
    params = as_dict(ti.get("hyperparameters")).get("params")
    for i, param in enumerate(params if isinstance(params, list) else []):
        if not isinstance(param, dict) or param.get("type") not in ("DOUBLE", "INTEGER"):
            continue
        lo, hi = param.get("minValue"), param.get("maxValue")
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (lo, hi)
        )
        if numbers and lo == hi:
            name = param.get("parameterName")
            message = (
                f"minValue equals maxValue ({lo}): every trial gets {name}={lo}, so tuning it is pointless; "
                "pass it as a fixed argument instead"
            )
            yield (TI, "hyperparameters", "params", i, "minValue"), message
