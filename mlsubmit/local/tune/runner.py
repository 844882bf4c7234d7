"""``local tune``: a study of local trials run side by side, each supervised in a thread of its own; Ctrl-C ends
every trial and saves the study (exit 130), ``--resume`` runs what had not finished."""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.console import current
from mlsubmit.errors import RunInterruptedError, UsageError
from mlsubmit.job.jobfile import JobFile
from mlsubmit.local.cluster import plan_cluster
from mlsubmit.local.request import LocalTrainRequest
from mlsubmit.local.runner import build_launches, import_note, trainer_python
from mlsubmit.local.supervisor import PrefixedOutput, signals_recorded
from mlsubmit.local.tune.metrics import MetricLog, should_stop
from mlsubmit.local.tune.samplers import make_sampler
from mlsubmit.local.tune.space import StudySpec, study_spec
from mlsubmit.local.tune.study import STUDY_FILE, Study, TrialRecord, now_rfc3339, study_lock
from mlsubmit.local.tune.trials import RunningTrial, bound_parallel, trial_environment, trial_request
from mlsubmit.targets.hptuning import how_to_report

# The scheduler wakes when a trial ends, and at least this often (seconds) to read metric files for early
# stopping and to notice Ctrl-C.
POLL_INTERVAL = 0.05


@dataclass(frozen=True)
class TuneRequest:
    """A checked ``local tune``: the local run each trial repeats and the study around it."""

    train: LocalTrainRequest
    spec: StudySpec
    hyperparameters: dict[str, Any]
    job_dir: Path
    resume: bool = False
    seed: int | None = None
    notes: tuple[str, ...] = ()  # warnings to print as the study starts


def prepare_tune(
    train: LocalTrainRequest, job_file: JobFile, *, resume: bool = False, seed: int | None = None
) -> TuneRequest:
    """Check the study the (checked) config describes and the job dir; the study file decides nothing yet."""
    hyperparameters = dict((job_file.data.get("trainingInput") or {}).get("hyperparameters") or {})
    spec, notes = bound_parallel(study_spec(hyperparameters))
    if train.job_dir is None or "://" in train.job_dir:
        given = f" (not {train.job_dir})" if train.job_dir else ""
        raise UsageError(
            f"local tune keeps the study and every trial's output in a local folder: pass --job-dir DIR{given}."
        )
    job_dir = Path(train.job_dir)
    resume = resume or spec.resume_job_id is not None
    if job_dir.is_dir():  # before anything runs: another runner of the study is named
        with study_lock(job_dir):
            pass
    if not resume and (job_dir / STUDY_FILE).exists():
        raise UsageError(
            f"--job-dir {job_dir} already holds a study; continue it with --resume, or choose another --job-dir."
        )
    return TuneRequest(train, spec, hyperparameters, job_dir, resume, seed, notes)


def run_study(request: TuneRequest, *, environ: Mapping[str, str]) -> tuple[Study, str | None]:
    """Run the study: it as it ended and why failures ended it (or None); trial output and progress to stderr."""
    environ = dict(environ)
    output = PrefixedOutput(current().stderr, current().stderr)
    for note in request.notes:
        output.note(note)
    with study_lock(request.job_dir):  # one runner per study, from before the study file is read
        study = Study(request.job_dir.name, request.hyperparameters)
        if request.resume:
            study = Study.load(request.job_dir, request.hyperparameters)
        with trainer_python(request.train, environ, output.note) as (python, cwd):
            loop = _StudyLoop(request, study, output, python, cwd, environ)
            if request.resume:
                done = sum(1 for t in study.trials if t.finished)
                output.note(f"Resuming study {study.study_id}: {done} trial(s) finished, not run again.")
            caught: list[int] = []
            with signals_recorded(caught):
                return study, loop.run(caught)


@dataclass
class _StudyLoop:
    request: TuneRequest
    study: Study
    output: PrefixedOutput
    python: str
    cwd: str
    environ: Mapping[str, str]
    running: list[RunningTrial] = field(default_factory=list)
    trial_ended: threading.Event = field(default_factory=threading.Event)
    exhausted: bool = False

    def __post_init__(self) -> None:
        self.spec = self.request.spec
        self.sampler = make_sampler(self.spec, self.request.seed)
        self.clock, self.progress = current().now, current().interactive
        # Trials that had not finished when the study last stopped run again first, with their parameters.
        self.pending = [t for t in self.study.trials if not t.finished]
        # A grid skips every point already given out; Optuna learns from the finished trials.
        for trial in self.study.trials:
            self.sampler.observe(trial)

    def run(self, caught: list[int]) -> str | None:
        try:
            while True:
                if caught:
                    self._stop_all("interrupted")
                    name = signal.Signals(caught[0]).name
                    raise RunInterruptedError(
                        f"interrupted ({name}); stopped every trial. Continue the study with --resume."
                    )
                for running in [r for r in self.running if not r.thread.is_alive()]:
                    self.running.remove(running)
                    self._finish(running)
                if reason := self.study.failure_reason(self.spec):
                    return reason + "; the study stopped."  # the trials still running are stopped below
                if self.spec.early_stopping:
                    self._stop_bad_trials()
                self._start_trials()
                if not self.running:
                    return None
                self.trial_ended.wait(POLL_INTERVAL)
                self.trial_ended.clear()
        finally:
            self._stop_all("the study ended")

    def _start_trials(self) -> None:
        while len(self.running) < self.spec.max_parallel:
            if self.pending:
                trial = self.pending.pop(0)
            elif self.exhausted or len(self.study.trials) >= self.spec.max_trials:
                return
            else:
                trial_id = str(len(self.study.trials) + 1)
                point = self.sampler.suggest(trial_id)
                if point is None:
                    self.exhausted = True
                    return
                trial = TrialRecord(trial_id=trial_id, point=point)
                self.study.trials.append(trial)
            self._start(trial)

    def _start(self, trial: TrialRecord) -> None:
        slot = min(set(range(self.spec.max_parallel)) - {r.slot for r in self.running})
        busy = {p for r in self.running for p in r.ports}
        request = trial_request(self.request.train, trial.trial_id, trial.point)
        plan = plan_cluster(request, slot, busy)
        environ = trial_environment(self.environ, self.request.job_dir, trial.trial_id)
        launches = build_launches(request, plan, self.python, self.cwd, environ)
        trial.state, trial.start_time = "RUNNING", now_rfc3339()
        trial.end_time = trial.error = trial.objective = trial.step = trial.seconds = None
        trial.stopped_early, trial.intermediate = False, []
        self.study.save(self.request.job_dir)
        params = " ".join(f"{k}={v}" for k, v in trial.point.items())
        self.output.note(f"Trial {trial.trial_id} started: {params}")
        metrics = MetricLog(environ["CLOUD_ML_HP_METRIC_FILE"], self.spec.metric_tag)
        ports = {int(r.address.rsplit(":", 1)[1]) for r in plan.replicas if r.address}
        running = RunningTrial(trial, slot, ports, metrics, self.clock())
        running.start(request, launches, self.output, self.trial_ended)
        self.running.append(running)

    def _finish(self, running: RunningTrial, cancelled: str | None = None) -> None:
        if running.crash is not None:
            raise running.crash
        trial, metrics = running.trial, running.metrics
        metrics.read(final=True)
        trial.end_time = now_rfc3339()
        trial.seconds = round(self.clock() - running.started, 3)
        trial.intermediate = [[s, v] for s, v in sorted(metrics.values.items())]
        final = metrics.final
        tag = self.spec.metric_tag
        if cancelled is not None or (running.stopped and running.stop_reason != "early"):
            trial.state, trial.error = "CANCELLED", f"stopped: {cancelled or running.stop_reason}"
        elif running.stopped:
            trial.stopped_early, trial.state = True, "SUCCEEDED" if final else "FAILED"
        elif running.error is not None:
            trial.state, trial.error = "FAILED", running.error
        elif running.exit_status:
            trial.state = "FAILED"
            trial.error = f"[{self.request.train.primary_name}] exited with status {running.exit_status}"
            prefix = f"trial-{trial.trial_id}/"
            if any(name.startswith(prefix) for name in self.output.import_failures):
                trial.error += "; " + import_note(self.request.train, self.python, self.output)
        elif metrics.problem is not None:
            trial.state, trial.error = "FAILED", metrics.problem
        elif final is None:
            trial.state, trial.error = "FAILED", f"it ended without reporting {tag}: {how_to_report(tag)}"
        else:
            trial.state = "SUCCEEDED"
        if trial.state == "SUCCEEDED" and final:
            trial.step, trial.objective = final
        self.study.save(self.request.job_dir)
        if trial.state != "CANCELLED":
            self.sampler.observe(trial)
        succeeded = trial.state == "SUCCEEDED"
        how = "stopped early" if trial.stopped_early and succeeded else trial.state
        said = f"objective {trial.objective:.6g} at step {trial.step}" if succeeded else trial.error
        self.output.note(f"Trial {trial.trial_id} {how} in {trial.seconds:.2f}s: {said}.")
        if self.progress and cancelled is None:
            done = sum(1 for t in self.study.trials if t.finished)
            best = self.study.best(self.spec)
            so_far = f"; best so far: trial {best.trial_id} ({best.objective:.6g})" if best else ""
            self.output.note(
                f"  [{done}/{self.spec.max_trials} trials finished, {len(self.running)} running{so_far}]"
            )

    def _stop_bad_trials(self) -> None:
        finished = [
            t.intermediate_values()
            for t in self.study.trials
            if t.state == "SUCCEEDED" and not t.stopped_early
        ]
        for running in self.running:
            running.metrics.read()
            if should_stop(running.metrics.values, finished, maximize=self.spec.maximize):
                running.stop("early")  # a trial already asked to stop keeps its first reason

    def _stop_all(self, reason: str) -> None:
        for running in self.running:
            running.stop(reason)
        while self.running:
            running = self.running.pop(0)
            running.thread.join()
            self._finish(running, cancelled=reason)
