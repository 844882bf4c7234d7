"""The trials of a tuning job as one table, best first, whoever ran them: ml v1 (``trainingOutput.trials[]``,
https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#HyperparameterOutput), Vertex AI
(``trials[]`` of a HyperparameterTuningJob, https://cloud.google.com/vertex-ai/docs/reference/rest/v1/
projects.locations.hyperparameterTuningJobs) or ``local tune``. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlsubmit.follow.entries import parse_timestamp
from mlsubmit.services.answers import neutralize

# Vertex trial states, in ml v1 words (SUCCEEDED is the same word).
VERTEX_TRIAL_STATES = {
    "REQUESTED": "QUEUED",
    "ACTIVE": "RUNNING",
    "STOPPING": "RUNNING",
    "INFEASIBLE": "FAILED",
}


@dataclass(frozen=True)
class TrialRow:
    """One line of the trials table."""

    trial_id: str
    parameters: tuple[tuple[str, str], ...]
    objective: float | None
    step: str
    state: str
    seconds: float | None
    stopped_early: bool = False


@dataclass(frozen=True)
class Trials:
    """A tuning job's trials, best first, and whether larger objectives are better."""

    rows: tuple[TrialRow, ...]
    maximize: bool

    @property
    def best(self) -> TrialRow | None:
        """The succeeded trial with the best objective."""
        return next((r for r in self.rows if r.state == "SUCCEEDED" and r.objective is not None), None)


def is_tuning_job(job: Mapping[str, Any]) -> bool:
    """Whether a job (ml v1 Job, or a Vertex job as `jobs` shows it) is a hyperparameter tuning job."""
    if "studySpec" in job or "trialJobSpec" in job:
        return True
    hyperparameters = (job.get("trainingInput") or {}).get("hyperparameters")
    return bool(hyperparameters or (job.get("trainingOutput") or {}).get("isHyperparameterTuningJob"))


def trials_of(job: Mapping[str, Any]) -> Trials | None:
    """The trials of an ml v1 Job, a ``local tune`` result or a Vertex HyperparameterTuningJob; None for others."""
    if "studySpec" in job or "trialJobSpec" in job:
        return _vertex(job)
    output = job.get("trainingOutput") if "trainingOutput" in job else job
    if not isinstance(output, Mapping) or not (output.get("isHyperparameterTuningJob") or "trials" in output):
        return None
    goal = ((job.get("trainingInput") or {}).get("hyperparameters") or {}).get("goal") or job.get("goal")
    rows = []
    for trial in output.get("trials") or []:
        final = trial.get("finalMetric") or {}
        objective = final.get("objectiveValue")
        rows.append(
            TrialRow(
                trial_id=str(trial.get("trialId", "")),
                parameters=tuple((str(k), str(v)) for k, v in (trial.get("hyperparameters") or {}).items()),
                objective=None if objective is None else float(objective),
                step=str(final.get("trainingStep", "")),
                state=str(trial.get("state") or "STATE_UNSPECIFIED"),
                seconds=_seconds(trial.get("startTime"), trial.get("endTime")),
                stopped_early=bool(trial.get("isTrialStoppedEarly")),
            )
        )
    return _sorted(rows, maximize=goal != "MINIMIZE")


def _vertex(job: Mapping[str, Any]) -> Trials:
    metrics = ((job.get("studySpec") or {}).get("metrics") or [{}])[0]
    metric_id = str(metrics.get("metricId") or "")
    rows = []
    for trial in job.get("trials") or []:
        final = trial.get("finalMeasurement") or {}
        values = [m for m in final.get("metrics") or [] if not metric_id or m.get("metricId") == metric_id]
        objective = values[0].get("value") if values else None
        state = str(trial.get("state") or "STATE_UNSPECIFIED")
        rows.append(
            TrialRow(
                trial_id=str(trial.get("id", "")),
                parameters=tuple(
                    (str(p.get("parameterId")), _text(p.get("value"))) for p in trial.get("parameters") or []
                ),
                objective=None if objective is None else float(objective),
                step=str(final.get("stepCount", "")),
                state=VERTEX_TRIAL_STATES.get(state, state),
                seconds=_seconds(trial.get("startTime"), trial.get("endTime")),
                stopped_early=state == "STOPPING",
            )
        )
    return _sorted(rows, maximize=metrics.get("goal") != "MINIMIZE")


def _text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _sorted(rows: Sequence[TrialRow], *, maximize: bool) -> Trials:
    sign = -1.0 if maximize else 1.0

    def key(row: TrialRow) -> tuple[bool, float, int, str]:
        number = int(row.trial_id) if row.trial_id.isdigit() else 0
        return (row.objective is None, sign * (row.objective or 0.0), number, row.trial_id)

    return Trials(rows=tuple(sorted(rows, key=key)), maximize=maximize)


def _seconds(start: Any, end: Any) -> float | None:  # None: a time missing or unreadable
    try:
        (begin, b), (finish, f) = parse_timestamp(str(start)), parse_timestamp(str(end))
    except (ValueError, IndexError):
        return None
    return max(0.0, (finish - begin).total_seconds() + (f - b) / 1e9)


def trials_table(trials: Trials) -> str:
    """TRIAL, PARAMETERS, OBJECTIVE, STEP, STATE, TIME: one line per trial, best first."""
    rows = [("TRIAL", "PARAMETERS", "OBJECTIVE", "STEP", "STATE", "TIME")]
    for r in trials.rows:
        rows.append(
            (
                r.trial_id,
                " ".join(f"{k}={v}" for k, v in r.parameters),
                "" if r.objective is None else f"{r.objective:.6g}",
                r.step if r.objective is not None else "",
                "STOPPED_EARLY" if r.stopped_early and r.state == "SUCCEEDED" else r.state,
                "" if r.seconds is None else f"{r.seconds:.1f}s",
            )
        )
    cells = [[neutralize(str(cell)) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(f"{c:<{widths[i]}}" for i, c in enumerate(row)).rstrip() for row in cells)


def best_line(trials: Trials) -> str:
    """``Best trial: 3 (objective 0.95 at step 10): lr=0.1 units=64`` or why there is none."""
    best = trials.best
    if best is None:
        return "Best trial: none (no trial succeeded)."
    params = " ".join(f"{k}={v}" for k, v in best.parameters)
    return neutralize(
        f"Best trial: {best.trial_id} (objective {best.objective:.6g} at step {best.step}): {params}"
    )


def trials_text(job: Mapping[str, Any], *, table: bool = True) -> str | None:
    """The trials table (when ``table``) and the best trial of a tuning job, for text output; None otherwise."""
    if not is_tuning_job(job):
        return None
    trials = trials_of(job)
    if trials is None or not trials.rows:
        return "Trials: none yet."
    return f"{trials_table(trials)}\n{best_line(trials)}" if table else best_line(trials)
