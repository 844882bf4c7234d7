"""One trial as a full local run (docs/local.md): ``local train``'s, plus its parameters as ``--NAME=VALUE``,
``task.trial``, ``CLOUD_ML_TRIAL_ID``, its own ``CLOUD_ML_HP_METRIC_FILE`` and ``--job-dir JOB_DIR/TRIAL_ID``."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mlsubmit.errors import LocalRunError, RunStoppedError
from mlsubmit.local.request import LocalTrainRequest
from mlsubmit.local.runner import AIP_DIRS
from mlsubmit.local.supervisor import Launch, PrefixedOutput, supervise
from mlsubmit.local.tune.metrics import MetricLog
from mlsubmit.local.tune.space import StudySpec, trial_args
from mlsubmit.local.tune.study import TrialRecord

METRICS_DIR = "hypertune"
# maxParallelTrials beyond the machine's CPUs (and this floor) is cut down, with a warning: every running trial
# holds processes, ports and a thread.
MIN_PARALLEL_TRIALS = 4


def bound_parallel(spec: StudySpec) -> tuple[StudySpec, tuple[str, ...]]:
    """``spec`` with ``maxParallelTrials`` cut to the CPUs we may use (at least MIN_PARALLEL_TRIALS); a warning."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    slots = max(MIN_PARALLEL_TRIALS, cpus)
    if spec.max_parallel <= slots:
        return spec, ()
    note = (
        f"WARNING: maxParallelTrials {spec.max_parallel} is more trials than this machine runs side by side "
        f"({os.cpu_count() or 1} CPUs); running at most {slots} at a time."
    )
    return replace(spec, max_parallel=slots), (note,)


def trial_request(base: LocalTrainRequest, trial_id: str, point: Mapping[str, Any]) -> LocalTrainRequest:
    """``base`` as trial ``trial_id`` runs it: parameters appended, its own job dir, ``task.trial`` set."""
    assert base.job_dir is not None and base.app_args[-2:] == ("--job-dir", base.job_dir)
    trial_dir = str(Path(base.job_dir) / trial_id)
    args = [*base.app_args[:-2], *trial_args(point), "--job-dir", trial_dir]
    training_input = {**(base.training_input or {}), "args": list(args), "jobDir": trial_dir}
    return replace(
        base, app_args=tuple(args), trial=int(trial_id), job_dir=trial_dir, training_input=training_input
    )


def trial_environment(environ: Mapping[str, str], job_dir: Path, trial_id: str) -> dict[str, str]:
    """The caller's environment plus what the service sets for a trial; its metric file removed, its folders made."""
    out_dir = job_dir / trial_id
    metrics = job_dir / METRICS_DIR / trial_id / "output.metrics"
    metrics.parent.mkdir(parents=True, exist_ok=True)
    metrics.unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**environ, "CLOUD_ML_TRIAL_ID": trial_id, "CLOUD_ML_HP_METRIC_FILE": str(metrics)}
    return env | {variable: str(out_dir / folder) for variable, folder in AIP_DIRS.items()}


@dataclass
class RunningTrial:
    """A trial's replicas, supervised in a thread from :meth:`start`; :meth:`stop` ends them."""

    trial: TrialRecord
    slot: int
    ports: set[int]
    metrics: MetricLog
    started: float  # on the console's clock
    stop_requested: threading.Event = field(default_factory=threading.Event)
    stop_reason: str | None = None
    exit_status: int | None = None
    error: str | None = None
    stopped: bool = False
    crash: BaseException | None = None  # a bug: handed to the main thread, which re-raises it
    thread: threading.Thread = field(init=False)

    def start(
        self,
        request: LocalTrainRequest,
        launches: list[Launch],
        output: PrefixedOutput,
        ended: threading.Event,
    ) -> None:
        """Supervise ``launches``; ``ended`` is set when they all have ended, so the scheduler wakes at once."""
        launches = [replace(launch, name=f"trial-{self.trial.trial_id}/{launch.name}") for launch in launches]

        def run() -> None:
            try:
                self.exit_status = supervise(
                    launches,
                    output,
                    grace_period=request.grace_period,
                    max_running_time=request.max_running_time,
                    stop=self.stop_requested,
                )
            except RunStoppedError:
                self.stopped = True
            except LocalRunError as err:
                self.error = str(err)
            except BaseException as err:
                self.crash = err
            finally:
                ended.set()

        self.thread = threading.Thread(target=run, name=f"trial-{self.trial.trial_id}", daemon=True)
        self.thread.start()

    def stop(self, reason: str) -> None:
        """Ask the replicas to end (TERM, then KILL after the grace period)."""
        if not self.stop_requested.is_set():
            self.stop_reason = reason
            self.stop_requested.set()
