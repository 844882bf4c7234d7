"""Turn ``local train`` flags and an optional Job config into one resolved, checked request.

Precedence is the one ``training`` uses (docs/gcloud.md): defaults < the
config file < flags the user actually gave. Flags arrive as ``None`` when not given.

Deliberate differences from gcloud's ``local train``, each because gcloud's choice hides a mistake:

* a relative local ``--job-dir`` is made absolute against the directory the command was run from (gcloud passes it
  unchanged and the app resolves it against the package's parent, or, with ``--from-package``, a temporary dir);
* the package directory must exist and hold ``__init__.py``, the module name must be a dotted Python name and,
  when it lives in that package, its file must exist; all refused up front with exit status 2;
* the config file is checked by the rules ``training`` applies (same messages, same file lines), and a config
  whose scale tier or counts describe a cluster runs distributed without ``--distributed``, with the replica
  counts the service (and the TFJob export) would use: ``STANDARD_1`` runs a chief, 4 workers and 3 parameter
  servers;
* the primary replica is ``chief`` unless the config (custom container without ``useChiefInTfConfig``, runtime
  before 2.1) or ``--primary-name`` says ``master`` (``mlsubmit.job.vocab.primary_task_name``, which the TFJob
  export and the Vertex AI translation ask too); gcloud instead imports TensorFlow in a subprocess, several
  times per run, to guess from its version.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.job.rules import module_name_problem
from mlsubmit.job.values import api_duration_seconds, int64_value
from mlsubmit.job.vocab import (
    EVALUATOR,
    PARAMETER_SERVER,
    WORKER,
    package_dir_problem,
    primary_task_name,
    replica_counts,
)
from mlsubmit.local.cluster import MAX_PORT, PRIMARY_NAMES
from mlsubmit.local.interpreter import HOW_TO_CHOOSE, choose_python
from mlsubmit.proc.files import expand_user

# gcloud's defaults for `local train --distributed` without counts (surface/ai_platform/local/train.py).
GCLOUD_DEFAULT_WORKERS = 2
GCLOUD_DEFAULT_PS = 2
# Seconds between TERM and KILL; small so that a failed replica stops the whole run within 2 s.
DEFAULT_GRACE_PERIOD = 1.0
# Every replica is a process with its own port: a count meant for the cloud (or 2**70) must not fork-bomb the
# machine. PREMIUM_1 (1 + 19 + 11 replicas) still runs.
MAX_LOCAL_REPLICAS = 64

# local name -> the replica role whose count it is
_COUNT_ROLES = {"workers": WORKER, "ps": PARAMETER_SERVER, "evaluators": EVALUATOR}


@dataclass(frozen=True)
class LocalTrainFlags:
    """What the user typed; ``None`` (or empty) means the flag was not given."""

    package_path: str | None = None
    module_name: str | None = None
    distributed: bool = False
    worker_count: int | None = None
    parameter_server_count: int | None = None
    evaluator_count: int | None = None
    start_port: int | None = None
    job_dir: str | None = None
    user_args: tuple[str, ...] | None = None  # None: no `--` on the command line
    python: str | None = None
    trial: int | None = None
    primary_name: str | None = None
    evaluators_in_cluster: bool = False
    max_running_time: str | None = None
    from_package: bool = False
    grace_period: float | None = None
    target: str | None = None  # "vertex": each replica gets Vertex AI's environment (also implied by vertex:)
    env: tuple[tuple[str, str], ...] = ()  # --env KEY=VALUE, over the config's vertex.env


@dataclass(frozen=True)
class LocalTrainRequest:
    """Everything a local run needs, checked. ``app_args`` already ends with ``--job-dir DIR`` when one is set."""

    package_dir: Path
    module_name: str
    app_args: tuple[str, ...]
    distributed: bool = False
    workers: int = 0
    ps: int = 0
    evaluators: int = 0
    start_port: int | None = None
    python: str | None = None  # as given by --python, the environment or gcloud; resolved when the run starts
    python_option: str = "--python"  # where `python` came from, for messages
    trial: int | None = None
    primary_name: str = "chief"
    evaluators_in_cluster: bool = False
    max_running_time: float | None = None
    from_package: bool = False
    grace_period: float = DEFAULT_GRACE_PERIOD
    job_dir: str | None = None
    training_input: dict[str, Any] | None = None  # the effective trainingInput, for TF_CONFIG's "job"
    warnings: tuple[str, ...] = field(default=())
    vertex_env: dict[str, str] | None = (
        None  # None: ml v1's environment; else Vertex AI's, plus these variables
    )
    operator_env: bool = False  # --target kubernetes: TF_CONFIG as the training operator writes it (no "job")


def parse_duration(text: str, what: str = "--max-running-time") -> float:
    """Seconds from an API duration such as ``30s``, ``3600s`` or ``1.5s`` (a bare number is accepted)."""
    value = text.strip(" ")
    seconds = api_duration_seconds(value if value.endswith("s") else value + "s")
    if seconds is None or seconds <= 0:
        raise UsageError(
            f"{what} must be a positive duration in seconds such as 30s or 3600s, not {text[:40]!r}."
        )
    return float(seconds)


def resolve_request(
    flags: LocalTrainFlags,
    job: Mapping[str, Any] | None = None,
    *,
    cwd: Path,
    environ: Mapping[str, str] | None = None,
) -> LocalTrainRequest:
    """Merge ``flags`` over the Job resource ``job`` (from ``--config``) and check the result.

    Raises UsageError (exit status 2) naming the flag or field at fault and what to do instead.
    """
    environ = os.environ if environ is None else environ
    given = job.get("trainingInput") if isinstance(job, Mapping) else None
    training_input: dict[str, Any] = dict(given) if isinstance(given, Mapping) else {}  # the file's
    # The module, job dir, args and --env come from the merge `training` uses (flags over the file).
    merged = merged_job(flags, job)
    merged_input: dict[str, Any] = merged["trainingInput"]

    package_dir = _check_package_dir(flags.package_path, cwd)
    module_name = merged_input.get("pythonModule")
    if not module_name:
        raise UsageError(
            "--module-name is required (or pythonModule in the --config file), e.g. trainer.task."
        )
    _check_module(module_name, package_dir)

    distributed, counts, warnings = _replicas(flags, training_input, has_config=job is not None)
    _check_local_flags(flags)
    max_running_time = None
    if flags.max_running_time is not None:
        max_running_time = parse_duration(flags.max_running_time)
    elif (training_input.get("scheduling") or {}).get("maxRunningTime"):
        max_running_time = parse_duration(
            str(training_input["scheduling"]["maxRunningTime"]), "scheduling.maxRunningTime"
        )

    job_dir = merged_input.get("jobDir") or None
    if job_dir is not None:
        job_dir = _absolute_job_dir(str(job_dir), cwd)
    # Args after `--` replace the file's args; without `--` the file's stay (the merge, as `training` does).
    app_args = [str(a) for a in merged_input.get("args") or []]
    if job_dir is not None:
        app_args += ["--job-dir", job_dir]  # what gcloud and the service do

    effective_input: dict[str, Any] | None = None
    if job is not None:
        effective_input = dict(merged_input)
        effective_input["pythonModule"] = module_name
        effective_input["args"] = list(app_args)
        if job_dir is not None:
            effective_input["jobDir"] = job_dir
        for (name, role), value in zip(_COUNT_ROLES.items(), _flag_counts(flags).values(), strict=True):
            key = str(role.count_field)
            if key in training_input or (distributed and value is not None):
                effective_input[key] = str(counts[name])  # int64 fields are strings in the API
            else:
                effective_input.pop(key, None)  # a count flag without --distributed runs no cluster

    python, python_option = choose_python(flags.python, environ)
    vertex_env: dict[str, str] | None = None
    if flags.target == "vertex" or (flags.target is None and isinstance((job or {}).get("vertex"), dict)):
        # docs/vertex.md: Vertex AI always names the primary `chief`. The merge put
        # --env over the file's vertex.env.
        vertex_env = {str(k): str(v) for k, v in ((merged.get("vertex") or {}).get("env") or {}).items()}
        primary = flags.primary_name or "chief"
    else:
        if flags.env:
            raise UsageError("--env sets the trainer's environment on Vertex AI: add --target vertex.")
        primary = flags.primary_name or primary_task_name(training_input)
    return LocalTrainRequest(
        package_dir=package_dir,
        module_name=module_name,
        app_args=tuple(app_args),
        distributed=distributed,
        workers=counts["workers"],
        ps=counts["ps"],
        evaluators=counts["evaluators"],
        start_port=flags.start_port,
        python=python,
        python_option=python_option,
        trial=flags.trial,
        primary_name=primary,
        evaluators_in_cluster=flags.evaluators_in_cluster,
        max_running_time=max_running_time,
        from_package=flags.from_package,
        grace_period=DEFAULT_GRACE_PERIOD if flags.grace_period is None else flags.grace_period,
        job_dir=job_dir,
        training_input=effective_input,
        warnings=tuple(warnings),
        vertex_env=vertex_env,
        operator_env=flags.target == "kubernetes",
    )


def _flag_counts(flags: LocalTrainFlags) -> dict[str, int | None]:
    return {
        "workers": flags.worker_count,
        "ps": flags.parameter_server_count,
        "evaluators": flags.evaluator_count,
    }


def _replicas(
    flags: LocalTrainFlags, training_input: Mapping[str, Any], *, has_config: bool
) -> tuple[bool, dict[str, int], list[str]]:
    """(distributed, replica counts by local name, warnings): the config file's cluster (its scale tier
    expanded as the service and the TFJob export do: STANDARD_1 is 4 workers and 3 ps), then the count flags,
    which only count with a cluster; gcloud's defaults when neither gave a count."""
    warnings: list[str] = []
    _check_config_counts(training_input)
    planned = replica_counts(training_input)
    counts = {name: planned.get(role.key, 0) for name, role in _COUNT_ROLES.items()}
    config_is_cluster = any(counts.values())
    flag_counts = _flag_counts(flags)
    for (name, value), flag in zip(flag_counts.items(), _count_flag_names(), strict=True):
        if value is not None and value < 0:
            raise UsageError(f"{flag} must be 0 or more, not {value}.")
        if value is not None:
            counts[name] = value
    distributed = flags.distributed or config_is_cluster
    if distributed and not has_config:
        # gcloud's defaults, only for counts neither flag nor file gave.
        if flags.worker_count is None:
            counts["workers"] = GCLOUD_DEFAULT_WORKERS
        if flags.parameter_server_count is None:
            counts["ps"] = GCLOUD_DEFAULT_PS
    if not distributed:
        for value, flag in zip(flag_counts.values(), _count_flag_names(), strict=True):
            if value:
                warnings.append(
                    f"{flag} is ignored without --distributed; add --distributed to run a cluster."
                )
        counts = {name: 0 for name in counts}
    total = 1 + sum(counts.values())
    if total > MAX_LOCAL_REPLICAS:
        raise UsageError(
            f"{total} replicas is more than this machine should run (at most {MAX_LOCAL_REPLICAS}); "
            "lower the counts with --worker-count / --parameter-server-count / --evaluator-count."
        )
    return distributed, counts, warnings


def _check_local_flags(flags: LocalTrainFlags) -> None:
    """The local-only flags' ranges (click checks them too; a direct caller may not have)."""
    if flags.start_port is not None and not 1 <= flags.start_port <= MAX_PORT:
        raise UsageError(f"--start-port must be between 1 and {MAX_PORT}, not {flags.start_port}.")
    if flags.trial is not None and flags.trial < 1:
        raise UsageError(f"--trial must be 1 or more (the service numbers trials from 1), not {flags.trial}.")
    if flags.grace_period is not None and flags.grace_period < 0:
        raise UsageError(f"--grace-period must be 0 or more seconds, not {flags.grace_period}.")
    if flags.primary_name is not None and flags.primary_name not in PRIMARY_NAMES:
        raise UsageError(f"--primary-name must be chief or master, not {flags.primary_name!r}.")


def merged_job(flags: LocalTrainFlags, job: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Job ``training`` would merge from the same file and flags (``job.merge``: a given flag replaces the
    file's field, args after ``--`` replace the file's args, ``--env`` goes over ``vertex.env``).

    The environment's region is left out: a local run has none, and TF_CONFIG's ``job`` shows the file's fields.
    """
    from mlsubmit.job.merge import TrainingFlags, merge

    given: dict[str, Any] = {}
    for name, value in (("module_name", flags.module_name), ("job_dir", flags.job_dir)):
        if value:
            given[name] = value
    for name, count in (
        ("worker_count", flags.worker_count),
        ("parameter_server_count", flags.parameter_server_count),
    ):
        if count is not None:
            given[name] = count
    if flags.env:
        given["env"] = tuple(flags.env)
    job_id = str((job or {}).get("jobId") or "local")
    return merge(job, TrainingFlags(job_id=job_id, given=given, user_args=flags.user_args), env={}).body


def resolve_python(
    given: str | None, environ: Mapping[str, str] | None = None, option: str = "--python"
) -> str:
    """The interpreter replicas run with: ``--python`` / MLSUBMIT_LOCAL_PYTHON, else ``python3`` on PATH.

    A bare name is looked up on PATH; a path must be an executable file.
    """
    environ = os.environ if environ is None else environ
    name = given or "python3"
    source = option if given else "the default python3"
    if os.sep in name:
        if not (os.path.isfile(name) and os.access(name, os.X_OK)):
            raise UsageError(
                f"{source} {name!r} is not an executable file; give the path of a Python interpreter."
            )
        return os.path.abspath(name)
    found = shutil.which(name, path=environ.get("PATH"))
    if not found:
        raise UsageError(
            f"no {name!r} on PATH; install Python 3 or choose the interpreter with {HOW_TO_CHOOSE}."
        )
    return found


def _count_flag_names() -> Sequence[str]:
    return ("--worker-count", "--parameter-server-count", "--evaluator-count")


def _check_config_counts(training_input: Mapping[str, Any]) -> None:
    """Counts from a config dict that skipped the spec checks (the CLI runs those first, with file lines)."""
    for role in _COUNT_ROLES.values():
        key = str(role.count_field)
        value = training_input.get(key)
        count = int64_value(value)
        if value is not None and (count is None or count < 0):
            raise UsageError(f"$.trainingInput.{key}: must be a whole number 0 or more, not {value!r}.")


def _check_package_dir(package_path: str | None, cwd: Path) -> Path:
    # gcloud's local train defaults the package path to the working directory; so do we.
    raw = package_path if package_path is not None else str(cwd)
    path = expand_user(raw, "--package-path")
    path = (path if path.is_absolute() else cwd / path).resolve()
    problem = package_dir_problem(path, raw)
    if problem:
        raise UsageError(f"--package-path {problem}.")
    return path


def _check_module(module_name: str, package_dir: Path) -> None:
    problem = module_name_problem(module_name)
    if problem:
        raise UsageError(f"--module-name: {problem}.")
    parts = module_name.split(".")
    if parts[0] != package_dir.name:
        return  # a module from another package (e.g. a dependency): nothing to check here
    base = package_dir.joinpath(*parts[1:])
    if len(parts) == 1 or base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
        return
    known = sorted(
        ".".join((package_dir.name, *p.relative_to(package_dir).with_suffix("").parts))
        for p in package_dir.rglob("*.py")
        if p.name != "__init__.py"
    )
    hint = difflib.get_close_matches(module_name, known, n=1)
    suggestion = f"; did you mean {hint[0]}?" if hint else "."
    raise UsageError(
        f"--module-name {module_name}: no {base.relative_to(package_dir.parent)}.py in {package_dir.parent}"
        + suggestion
    )


def _absolute_job_dir(job_dir: str, cwd: Path) -> str:
    if "://" in job_dir:
        return job_dir  # gs:// and other remote paths go to the app unchanged
    path = expand_user(job_dir, "--job-dir")
    return str(path if path.is_absolute() else (cwd / path).resolve())
