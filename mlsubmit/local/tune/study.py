"""A local study's trials, as ml v1 ``trainingOutput`` (https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#TrainingOutput),
its file in the ``--job-dir`` (docs/local.md, docs/security.md: atomic, bounded, checked before a resume) and its
lock, one runner per study (https://man7.org/linux/man-pages/man2/flock.2.html, released however the holder dies)."""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.errors import MlsubmitError, UsageError
from mlsubmit.local.tune.space import StudySpec
from mlsubmit.proc.files import file_kind, parse_json, read_bounded

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

    def failure_reason(self, spec: StudySpec) -> str | None:
        """Why enough trials failed to end the study (maxFailedTrials, else the default rule); None if not."""
        failed = [t.trial_id for t in self.trials if t.state == "FAILED"]
        if spec.max_failed:
            if len(failed) < spec.max_failed:
                return None
            return f"maxFailedTrials ({spec.max_failed}) reached: trial(s) {', '.join(failed)} failed"
        if len(failed) < DEFAULT_FAILURE_LIMIT or any(t.state == "SUCCEEDED" for t in self.trials):
            return None
        return f"the first {len(failed)} trials failed and none succeeded (set maxFailedTrials to allow more)"

    def best(self, spec: StudySpec) -> TrialRecord | None:
        """The succeeded trial with the best objective (the first such on ties)."""
        done = [t for t in self.trials if t.state == "SUCCEEDED" and t.objective is not None]
        return (max if spec.maximize else min)(done, key=lambda t: t.objective or 0.0, default=None)

    def save(self, job_dir: Path) -> None:
        """Write the study's file in ``job_dir`` atomically."""
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

    @staticmethod
    def load(job_dir: Path, hyperparameters: Mapping[str, Any]) -> Study:
        """The study kept in ``job_dir``, checked to be the one ``hyperparameters`` describes; else a UsageError."""
        path = job_dir / STUDY_FILE
        recover = f"remove it to start afresh (or move {path} away), or pass the --job-dir of another study"
        try:
            raw = read_bounded(str(path), what="a study file", max_bytes=MAX_STUDY_BYTES, error=UsageError)
        except MlsubmitError as err:
            if not os.path.lexists(path):
                raise UsageError(
                    f"nothing to resume: {path} does not exist. Local studies are kept in their --job-dir; "
                    "give the job dir of the study to continue, or run without --resume / resumePreviousJobId."
                ) from None
            raise UsageError(f"cannot resume: {str(err).rstrip('.')}; {recover}.") from None
        try:
            data = parse_json(raw)
        except ValueError as err:
            raise UsageError(f"{path} cannot be read as a study ({str(err)[:120]}); {recover}.") from None
        if problem := _shape_problem(data):
            raise UsageError(f"{path} is not a study mlsubmit wrote ({problem}); {recover}.")
        if data.get("version") != FORMAT_VERSION:
            raise UsageError(f"{path} was written by another version of mlsubmit; remove it to start afresh.")
        changed = [k for k in SAME_STUDY_KEYS if data["hyperparameters"].get(k) != hyperparameters.get(k)]
        if changed:
            raise UsageError(
                f"$.trainingInput.hyperparameters: {', '.join(changed)} differ from the study in {path}; a resumed "
                "study keeps its search space, goal, metric and algorithm (maxTrials and the other budgets may change)."
            )
        names = [str(p["parameterName"]) for p in hyperparameters["params"]]  # schema-valid
        trials = [TrialRecord(**t) for t in data["trials"]]
        for trial in trials:
            if list(trial.point) != names:
                raise UsageError(
                    f"{path}: trial {trial.trial_id} has parameters {', '.join(list(trial.point)[:5])}, not the "
                    "study's; remove it to start afresh (or move it away)."
                )
        return Study(study_id=str(data.get("studyId")), hyperparameters=dict(hyperparameters), trials=trials)


def training_output(study: Study, spec: StudySpec) -> dict[str, Any]:
    """The study as ml v1 ``trainingOutput``: trials best first (as the service listed them), then the others."""
    sign = -1.0 if spec.maximize else 1.0
    trials = []
    for trial in sorted(
        study.trials, key=lambda t: (t.objective is None, sign * (t.objective or 0.0), int(t.trial_id))
    ):
        out: dict[str, Any] = {
            "trialId": trial.trial_id,
            "hyperparameters": {k: str(v) for k, v in trial.point.items()},
        }
        if trial.objective is not None:
            out["finalMetric"] = {"trainingStep": str(trial.step or 0), "objectiveValue": trial.objective}
        # errorMessage is not an ml v1 field: the reason a local trial failed
        times = (("startTime", trial.start_time), ("endTime", trial.end_time), ("errorMessage", trial.error))
        out |= {"isTrialStoppedEarly": trial.stopped_early, "state": trial.state}
        trials.append(out | {key: value for key, value in times if value})
    return {
        "completedTrialCount": str(sum(1 for t in study.trials if t.state == "SUCCEEDED")),
        "trials": trials,
        "isHyperparameterTuningJob": True,
        "hyperparameterMetricTag": spec.metric_tag,
    }


STUDY_FILE = "mlsubmit-study.json"
FORMAT_VERSION = 1
# What must match for --resume: a different space or objective is a different study.
SAME_STUDY_KEYS = ("params", "goal", "hyperparameterMetricTag", "algorithm")

LOCK_FILE = ".mlsubmit-study.lock"
# A trial is a few hundred bytes plus up to 100 intermediate reports (cloudml-hypertune keeps 100).
MAX_STUDY_BYTES = 64 * 1024 * 1024
STATES = ("QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
MAX_TRIALS_KEPT = 100_000

_TOP_LEVEL = (
    ("studyId", str, "a string"),
    ("hyperparameters", dict, "an object"),
    ("trials", list, "a list"),
)
# the optional fields of a trial: str, or a finite number (int: a whole one)
_OPTIONAL: dict[str, type] = {"step": int, "objective": float, "seconds": float}
_OPTIONAL |= dict.fromkeys(("start_time", "end_time", "error"), str)


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    for key, kind, name in _TOP_LEVEL:
        if not isinstance(data.get(key), kind):
            return f"$.{key} is not {name}"
    if len(data["trials"]) > MAX_TRIALS_KEPT:
        return f"$.trials holds more than {MAX_TRIALS_KEPT} trials"
    for index, trial in enumerate(data["trials"]):
        if problem := _trial_problem(trial, str(index + 1)):
            return f"$.trials[{index}]: {problem}"
    return None


def _trial_problem(trial: Any, expected_id: str) -> str | None:
    if not isinstance(trial, dict):
        return "not an object"
    unknown = sorted(str(k) for k in trial if k not in TrialRecord.__dataclass_fields__)
    if unknown:
        return f"unknown key {unknown[0][:40]!r}"
    # Trials are numbered 1, 2, ... in order: the id names the trial's folder and the next id follows the count.
    if trial.get("trial_id") != expected_id:
        return f"trial_id is not {expected_id!r}"
    point = trial.get("point")
    if not isinstance(point, dict) or not all(isinstance(v, str) or _is_number(v) for v in point.values()):
        return "point is not an object of numbers and strings"
    if trial.get("state", "QUEUED") not in STATES:
        return "state is not one of " + ", ".join(STATES)
    if not isinstance(trial.get("stopped_early", False), bool):
        return "stopped_early is not true or false"
    for key, kind in _OPTIONAL.items():
        value = trial.get(key)
        fits = isinstance(value, str) if kind is str else _is_number(value) and isinstance(value, kind | int)
        if value is not None and not fits:
            return f"{key} is not a {'string' if kind is str else 'finite number'}"
    intermediate = trial.get("intermediate", [])
    if not isinstance(intermediate, list) or not all(
        isinstance(r, list) and len(r) == 2 and type(r[0]) is int and _is_number(r[1]) for r in intermediate
    ):
        return "intermediate is not a list of [step, value] pairs"
    return None


def _is_number(value: Any) -> bool:
    finite = not isinstance(value, float) or math.isfinite(value)  # an int of any size is finite
    return isinstance(value, (int, float)) and not isinstance(value, bool) and finite


@contextlib.contextmanager
def study_lock(job_dir: Path) -> Iterator[None]:
    """Hold the study's lock for the block; UsageError (exit 2) naming the runner that holds it."""
    import fcntl

    job_dir.mkdir(parents=True, exist_ok=True)
    path = job_dir / LOCK_FILE
    # O_CLOEXEC: trials must not inherit it
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        raise UsageError(
            f"{path}: cannot open the study's lock file ({err.strerror or err}); remove it and run again."
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UsageError(
                f"{path} is {file_kind(mode)}, not the study's lock file; remove it and run again."
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                text = os.pread(fd, 32, 0).decode("ascii").strip()
            except (OSError, UnicodeDecodeError):
                text = ""
            holder = f" (pid {text})" if text.isdigit() else ""
            raise UsageError(
                f"another mlsubmit{holder} is running the study in {job_dir}; wait for it to end (or stop it), "
                "then continue with --resume."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
