"""A trial's metric file, rewritten by cloudml-hypertune (https://github.com/GoogleCloudPlatform/cloudml-hypertune)
with its last 100 reports, a JSON object a line; and the median rule that stops a trial early
(https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec#MedianAutomatedStoppingSpec)."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mlsubmit.errors import LocalRunError
from mlsubmit.proc.files import parse_json, read_bounded

# cloudml-hypertune keeps 100 short lines; anything past 1 MiB is read from its end
MAX_METRIC_BYTES = 1 << 20
MIN_FINISHED = 2
MAX_STEP = 2**63 - 1  # an int64, as the services keep steps


@dataclass
class MetricLog:
    """What a trial reported for the study's metric: ``values[step]`` (the last report per step wins)."""

    path: str
    tag: str
    values: dict[int, float] = field(default_factory=dict)
    last_step: int | None = None
    problem: str | None = None  # why the reports cannot be used (a non-number, not JSON)

    def read(self, *, final: bool = False) -> None:
        """Take in the file's reports, bounded (``final``: the trial has ended, so a broken line is a problem)."""
        try:
            data = read_bounded(
                self.path, what="a metric file", max_bytes=MAX_METRIC_BYTES, error=LocalRunError, tail=True
            )
        except LocalRunError as err:
            if final and os.path.lexists(self.path):
                self.problem = f"its metric file cannot be used: {err}"
            return
        if len(data) == MAX_METRIC_BYTES and b"\n" in data:
            data = data[data.index(b"\n") + 1 :]  # maybe the end of a line cut at the start: skip it
        lines = data.split(b"\n")
        if not data.endswith(b"\n") and not final:
            lines = lines[:-1]  # a line still being written
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                entry = parse_json(raw)
            except ValueError:
                if final:
                    self.problem = f"line {number} of its metric file {self.path} is not JSON"
                continue
            if not isinstance(entry, dict) or self.tag not in entry:
                continue
            raw, raw_step = entry[self.tag], entry.get("global_step")
            value, step = _number(raw), _step(raw_step)
            if value is not None and step is not None:
                self.values[step] = value
                self.last_step = step
            elif final or self.problem is None:
                self.problem = (
                    f"it reported {self.tag} = {str(raw)[:60]!r}, which is not a finite number; report a "
                    "number with hypertune.HyperTune().report_hyperparameter_tuning_metric(...)"
                    if value is None
                    else f"it reported global_step = {str(raw_step)[:60]!r}, which is not a whole number "
                    f"from 0 to {MAX_STEP}"
                )

    @property
    def final(self) -> tuple[int, float] | None:
        """(step, value) of the last report, or None when the trial reported nothing."""
        return None if self.last_step is None else (self.last_step, self.values[self.last_step])


def _number(raw: object) -> float | None:
    if isinstance(raw, bool):
        return None
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of thousands of digits
        return None
    return value if math.isfinite(value) else None


def _step(raw: object) -> int | None:
    """The report's step: 0 when it gives none, None when it is not a whole number in range."""
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return None
    value = _number(raw)
    return int(value) if value is not None and 0 <= value <= MAX_STEP else None


def best_by_step(values: Mapping[int, float], step: int, maximize: bool) -> float | None:
    """The best value reported at or before ``step`` (None when there is none)."""
    return (max if maximize else min)((v for s, v in values.items() if s <= step), default=None)


def should_stop(
    values: Mapping[int, float], finished: Iterable[Mapping[int, float]], *, maximize: bool
) -> bool:
    """Whether the trial's best so far is worse than the median of the finished trials' by then (MIN_FINISHED)."""
    if not values:
        return False
    step = max(values)
    mine = best_by_step(values, step, maximize)
    theirs = [b for b in (best_by_step(f, step, maximize) for f in finished) if b is not None]
    if mine is None or len(theirs) < MIN_FINISHED:
        return False
    median = statistics.median(theirs)
    return mine < median if maximize else mine > median
