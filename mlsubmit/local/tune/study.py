"""A local study's trials, the model (:mod:`.studyfile` keeps it for ``--resume``, which runs again the trials
that had not finished), and :func:`training_output`, the study as ml v1 ``trainingOutput``
(https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#TrainingOutput).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from mlsubmit.local.tune.space import StudySpec

FINISHED = ("SUCCEEDED", "FAILED")
# Without maxFailedTrials the study gives up when this many trials failed and none succeeded: the trainer is
# most likely broken, and running the rest of the budget would only repeat the failure.
DEFAULT_FAILURE_LIMIT = 3


def now_rfc3339() -> str:
    """The current UTC time as the APIs write it, with microseconds."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class TrialRecord:
    """One trial: its parameters and, once it has ended, how it went."""

    trial_id: str
    point: dict[str, Any]  # typed values, by parameter name, in the spec's order
    state: str = "QUEUED"  # QUEUED | RUNNING | SUCCEEDED | FAILED | CANCELLED
    stopped_early: bool = False
    step: int | None = None
    objective: float | None = None
    intermediate: list[list[float]] = field(default_factory=list)  # [[step, value], ...]
    start_time: str | None = None
    end_time: str | None = None
    seconds: float | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        """Succeeded or failed: not run again on resume."""
        return self.state in FINISHED

    def intermediate_values(self) -> dict[int, float]:
        """The reports as ``{step: value}``."""
        return {int(s): float(v) for s, v in self.intermediate}


@dataclass
class Study:
    """Everything kept about a study."""

    study_id: str
    hyperparameters: dict[str, Any]
    trials: list[TrialRecord] = field(default_factory=list)

    def failure_limit_reached(self, spec: StudySpec) -> bool:
        """Whether enough trials failed to end the study (maxFailedTrials, else the default rule)."""
        failed = sum(1 for t in self.trials if t.state == "FAILED")
        if spec.max_failed:
            return failed >= spec.max_failed
        succeeded = any(t.state == "SUCCEEDED" for t in self.trials)
        return failed >= DEFAULT_FAILURE_LIMIT and not succeeded

    def best(self, spec: StudySpec) -> TrialRecord | None:
        """The succeeded trial with the best objective (the first such on ties)."""
        done = [t for t in self.trials if t.state == "SUCCEEDED" and t.objective is not None]
        return (max if spec.maximize else min)(done, key=lambda t: t.objective or 0.0, default=None)


def training_output(study: Study, spec: StudySpec) -> dict[str, Any]:
    """The study as ml v1 ``trainingOutput``: trials with an objective first, best first (as the service listed
    them), then the others in id order; each an ml v1 ``HyperparameterOutput``."""
    from mlsubmit.local.tune.space import format_value

    sign = -1.0 if spec.maximize else 1.0
    trials = []
    for trial in sorted(
        study.trials, key=lambda t: (t.objective is None, sign * (t.objective or 0.0), int(t.trial_id))
    ):
        out: dict[str, Any] = {
            "trialId": trial.trial_id,
            "hyperparameters": {k: format_value(v) for k, v in trial.point.items()},
        }
        if trial.objective is not None:
            out["finalMetric"] = {"trainingStep": str(trial.step or 0), "objectiveValue": trial.objective}
        out["isTrialStoppedEarly"] = trial.stopped_early
        out["state"] = trial.state
        # errorMessage is not an ml v1 field: the reason a local trial failed
        times = (("startTime", trial.start_time), ("endTime", trial.end_time), ("errorMessage", trial.error))
        trials.append(out | {key: value for key, value in times if value})
    return {
        "completedTrialCount": str(sum(1 for t in study.trials if t.state == "SUCCEEDED")),
        "trials": trials,
        "isHyperparameterTuningJob": True,
        "hyperparameterMetricTag": spec.metric_tag,
    }


def end_line(trial: TrialRecord) -> str:
    """The line printed when a trial ends."""
    took = f" in {trial.seconds:.2f}s" if trial.seconds is not None else ""
    if trial.state == "SUCCEEDED":
        how = "stopped early" if trial.stopped_early else "SUCCEEDED"
        return f"Trial {trial.trial_id} {how}{took}: objective {trial.objective:.6g} at step {trial.step}."
    return f"Trial {trial.trial_id} {trial.state}{took}: {trial.error}."
