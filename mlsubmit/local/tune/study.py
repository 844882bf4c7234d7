"""A local study's trials, kept in ``JOB_DIR/mlsubmit-study.json`` so ``--resume`` can continue it.

The file is rewritten atomically (temporary file + rename) whenever a trial starts or ends, so an interrupted or
killed study loses nothing that had finished. Trials that were running when the study stopped are run again,
with the same id and parameters, when it is resumed; trials that finished (succeeded, failed or were stopped
early) are not.

:func:`training_output` gives the study in the shape of ml v1 ``trainingOutput``
(https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#TrainingOutput).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.local.tune.space import StudySpec

STUDY_FILE = "mlsubmit-study.json"
FORMAT_VERSION = 1
FINISHED = ("SUCCEEDED", "FAILED")
# Without maxFailedTrials the study gives up when this many trials failed and none succeeded: the trainer is
# most likely broken, and running the rest of the budget would only repeat the failure.
DEFAULT_FAILURE_LIMIT = 3
# What must match for --resume: a different space or objective is a different study.
SAME_STUDY_KEYS = ("params", "goal", "hyperparameterMetricTag", "algorithm")


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

    def save(self, job_dir: Path) -> None:
        """Write the study file atomically."""
        data = {
            "version": FORMAT_VERSION,
            "studyId": self.study_id,
            "hyperparameters": self.hyperparameters,
            "trials": [asdict(t) for t in self.trials],
        }
        job_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".mlsubmit-study-", dir=job_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
            os.replace(tmp, job_dir / STUDY_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def failure_limit_reached(self, spec: StudySpec) -> bool:
        """Whether enough trials failed to end the study (maxFailedTrials, else the default rule)."""
        failed = sum(1 for t in self.trials if t.state == "FAILED")
        if spec.max_failed:
            return failed >= spec.max_failed
        succeeded = any(t.state == "SUCCEEDED" for t in self.trials)
        return failed >= DEFAULT_FAILURE_LIMIT and not succeeded

    def best(self, spec: StudySpec) -> TrialRecord | None:
        """The succeeded trial with the best objective (the first such on ties)."""
        best: TrialRecord | None = None
        for trial in self.trials:
            if trial.state != "SUCCEEDED" or trial.objective is None:
                continue
            if best is None or spec.better(trial.objective, best.objective):  # type: ignore[arg-type]
                best = trial
        return best


def load_study(job_dir: Path, hyperparameters: Mapping[str, Any]) -> Study:
    """The study kept in ``job_dir``, checked to be the same study as ``hyperparameters`` describes."""
    from mlsubmit.local.tune.studyfile import check_point, read_study_data

    path = job_dir / STUDY_FILE
    data = read_study_data(path)
    if data.get("version") != FORMAT_VERSION:
        raise UsageError(f"{path} was written by another version of mlsubmit; remove it to start afresh.")
    kept = data.get("hyperparameters") or {}
    changed = [k for k in SAME_STUDY_KEYS if kept.get(k) != hyperparameters.get(k)]
    if changed:
        raise UsageError(
            f"$.trainingInput.hyperparameters: {', '.join(changed)} differ from the study in {path}; a resumed "
            "study keeps its search space, goal, metric and algorithm (maxTrials and the other budgets may change)."
        )
    names = [str(p.get("parameterName")) for p in hyperparameters.get("params") or [] if isinstance(p, dict)]
    trials = [TrialRecord(**t) for t in data["trials"]]
    for trial in trials:
        if not check_point(trial.point, names):
            raise UsageError(
                f"{path}: trial {trial.trial_id} has parameters {', '.join(list(trial.point)[:5])}, not the "
                "study's; remove it to start afresh (or move it away)."
            )
    return Study(study_id=str(data.get("studyId")), hyperparameters=dict(hyperparameters), trials=trials)


def study_exists(job_dir: Path) -> bool:
    """Whether ``job_dir`` already holds a study."""
    return (job_dir / STUDY_FILE).exists()


def trial_output(trial: TrialRecord) -> dict[str, Any]:
    """One ml v1 ``HyperparameterOutput``."""
    from mlsubmit.local.tune.space import format_value

    out: dict[str, Any] = {
        "trialId": trial.trial_id,
        "hyperparameters": {k: format_value(v) for k, v in trial.point.items()},
    }
    if trial.objective is not None:
        out["finalMetric"] = {"trainingStep": str(trial.step or 0), "objectiveValue": trial.objective}
    out["isTrialStoppedEarly"] = trial.stopped_early
    out["state"] = trial.state
    if trial.start_time:
        out["startTime"] = trial.start_time
    if trial.end_time:
        out["endTime"] = trial.end_time
    if trial.error:
        out["errorMessage"] = trial.error  # not an ml v1 field: the reason a local trial failed
    return out


def training_output(study: Study, spec: StudySpec) -> dict[str, Any]:
    """The study as ml v1 ``trainingOutput`` (trials sorted best first, as the service listed them)."""
    completed = sum(1 for t in study.trials if t.state == "SUCCEEDED")
    return {
        "completedTrialCount": str(completed),
        "trials": [trial_output(t) for t in sort_trials(study.trials, spec)],
        "isHyperparameterTuningJob": True,
        "hyperparameterMetricTag": spec.metric_tag,
    }


def sort_trials(trials: list[TrialRecord], spec: StudySpec) -> list[TrialRecord]:
    """Trials with an objective first, best first; the others after them in id order."""
    sign = -1.0 if spec.maximize else 1.0
    return sorted(
        trials,
        key=lambda t: (t.objective is None, sign * (t.objective or 0.0), int(t.trial_id)),
    )


def end_line(trial: TrialRecord) -> str:
    """The line printed when a trial ends."""
    took = f" in {trial.seconds:.2f}s" if trial.seconds is not None else ""
    if trial.state == "SUCCEEDED":
        how = "stopped early" if trial.stopped_early else "SUCCEEDED"
        return f"Trial {trial.trial_id} {how}{took}: objective {trial.objective:.6g} at step {trial.step}."
    return f"Trial {trial.trial_id} {trial.state}{took}: {trial.error}."
