"""Reading a trial's metric file, and the median rule that stops clearly bad trials early.

``cloudml-hypertune`` (https://github.com/GoogleCloudPlatform/cloudml-hypertune, ``hypertune/hypertune.py``)
rewrites ``$CLOUD_ML_HP_METRIC_FILE`` on every report with its last 100 reports, one JSON object a line::

    {"checkpoint_path": "", "global_step": "3", "timestamp": 1700000000.0, "trial": "2",
     "training/hptuning/metric": "0.75"}

Values are strings (``str(float(value))``); the step is ``global_step``. The file is read while the trial runs
(for early stopping; a half-written last line is left for the next read) and once more when it has ended. The
final measurement is the last report, as ml v1 and Vertex's ``LAST_MEASUREMENT`` take it.

The median rule (Vertex ``medianAutomatedStoppingSpec``, https://cloud.google.com/vertex-ai/docs/reference/rest/
v1/StudySpec#MedianAutomatedStoppingSpec): a trial is stopped when its best value so far is strictly worse than
the median of the best values the finished trials had reached by the same step. It needs
:data:`MIN_FINISHED` finished trials that reported by then, so the first trials always run to the end.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MAX_METRIC_BYTES = (
    1 << 20
)  # cloudml-hypertune keeps 100 short lines; anything past 1 MiB is read from its end
MIN_FINISHED = 2


@dataclass
class MetricLog:
    """What a trial reported for the study's metric: ``values[step]`` (the last report per step wins)."""

    path: str
    tag: str
    values: dict[int, float] = field(default_factory=dict)
    last_step: int | None = None
    problem: str | None = None  # why the reports cannot be used (a non-number, not JSON)

    def read(self, *, final: bool = False) -> None:
        """Take in the file's reports. ``final``: the trial has ended, so a broken line is a problem."""
        try:
            with open(self.path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > MAX_METRIC_BYTES:
                    handle.seek(size - MAX_METRIC_BYTES)
                    handle.readline()  # skip the partial first line
                data = handle.read(MAX_METRIC_BYTES)
        except FileNotFoundError:
            return
        except OSError as err:
            if final:
                self.problem = f"its metric file {self.path} cannot be read: {err.strerror or err}"
            return
        lines = data.split(b"\n")
        if not data.endswith(b"\n"):
            lines = lines[:-1] if not final else lines  # a line still being written
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                if final:
                    self.problem = f"line {number} of its metric file {self.path} is not JSON"
                continue
            if not isinstance(entry, dict) or self.tag not in entry:
                continue
            self._take(entry, final)

    def _take(self, entry: Mapping[str, object], final: bool) -> None:
        raw = entry[self.tag]
        value = _number(raw)
        if value is None:
            if final or self.problem is None:
                self.problem = (
                    f"it reported {self.tag} = {str(raw)[:60]!r}, which is not a finite number; report a "
                    "number with hypertune.HyperTune().report_hyperparameter_tuning_metric(...)"
                )
            return
        step = _step(entry.get("global_step"))
        self.values[step] = value
        self.last_step = step

    @property
    def final(self) -> tuple[int, float] | None:
        """(step, value) of the last report, or None when the trial reported nothing."""
        if self.last_step is None:
            return None
        return self.last_step, self.values[self.last_step]


def _number(raw: object) -> float | None:
    if isinstance(raw, bool):
        return None
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _step(raw: object) -> int:
    try:
        return int(float(str(raw)))
    except (TypeError, ValueError):
        return 0


def best_by_step(values: Mapping[int, float], step: int, maximize: bool) -> float | None:
    """The best value reported at or before ``step`` (None when there is none)."""
    seen = [v for s, v in values.items() if s <= step]
    if not seen:
        return None
    return max(seen) if maximize else min(seen)


def should_stop(
    values: Mapping[int, float], finished: Iterable[Mapping[int, float]], *, maximize: bool
) -> bool:
    """The median rule (module docstring) for a running trial's ``values`` against ``finished`` trials'."""
    if not values:
        return False
    step = max(values)
    mine = best_by_step(values, step, maximize)
    theirs = [b for b in (best_by_step(f, step, maximize) for f in finished) if b is not None]
    if mine is None or len(theirs) < MIN_FINISHED:
        return False
    median = statistics.median(theirs)
    return mine < median if maximize else mine > median
