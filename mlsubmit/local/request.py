"""``local train`` flags over an optional Job config (as ``training`` merges them) into one checked request.
Unlike gcloud (docs/gcloud.md): ``--job-dir`` made absolute, package and module checked up front, a config's
cluster run with the service's counts, the primary ``chief`` unless the config or ``--primary-name`` says."""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.job.rules import module_name_problem
from mlsubmit.job.values import api_duration_seconds
from mlsubmit.job.vocab import (
    EVALUATOR,
    PARAMETER_SERVER,
    WORKER,
    primary_task_name,
    replica_counts,
)
from mlsubmit.local.interpreter import HOW_TO_CHOOSE, choose_python
from mlsubmit.proc.files import expand_user, package_dir_problem

# gcloud's defaults for `local train --distributed` without counts (surface/ai_platform/local/train.py).
GCLOUD_DEFAULT_WORKERS = 2
GCLOUD_DEFAULT_PS = 2
# Seconds between TERM and KILL; small so that a failed replica stops the whole run within 2 s.
DEFAULT_GRACE_PERIOD = 1.0
# Every replica is a process with its own port: a count meant for the cloud (or 2**70) must not fork-bomb the
# machine. PREMIUM_1 (1 + 19 + 11 replicas) still runs.
MAX_LOCAL_REPLICAS = 64

# local name -> (the replica role whose count it is, the LocalTrainFlags field that gives it)
_COUNTS = {
    "workers": (WORKER, "worker_count"),
    "ps": (PARAMETER_SERVER, "parameter_server_count"),
    "evaluators": (EVALUATOR, "evaluator_count"),
}


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
    warnings: tuple[str, ...] = ()
    vertex_env: dict[str, str] | None = None  # None: ml v1's environment; else Vertex AI's, plus these
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
    """Merge ``flags`` over the checked Job ``job`` (``--config``); UsageError (exit 2) naming what is at fault."""
    from mlsubmit.job.merge import TrainingFlags, merge

    environ = os.environ if environ is None else environ
    given = job.get("trainingInput") if isinstance(job, Mapping) else None
    training_input: dict[str, Any] = dict(given) if isinstance(given, Mapping) else {}  # the file's
    # The module, job dir, args and --env come from the merge `training` uses (flags over the file; no region).
    merge_flags = {k: getattr(flags, k) for k in ("module_name", "job_dir") if getattr(flags, k)}
    counted = ("worker_count", "parameter_server_count")
    merge_flags |= {k: getattr(flags, k) for k in counted if getattr(flags, k) is not None}
    if flags.env:
        merge_flags["env"] = tuple(flags.env)
    job_id = str((job or {}).get("jobId") or "local")
    merged = merge(
        job, TrainingFlags(job_id=job_id, given=merge_flags, user_args=flags.user_args), env={}
    ).body
    merged_input: dict[str, Any] = merged["trainingInput"]

    # gcloud's local train defaults the package path to the working directory; so do we.
    raw = flags.package_path if flags.package_path is not None else str(cwd)
    package_dir = expand_user(raw, "--package-path")
    package_dir = (package_dir if package_dir.is_absolute() else cwd / package_dir).resolve()
    if problem := package_dir_problem(package_dir, raw):
        raise UsageError(f"--package-path {problem}.")
    module_name = merged_input.get("pythonModule")
    if not module_name:
        raise UsageError(
            "--module-name is required (or pythonModule in the --config file), e.g. trainer.task."
        )
    _check_module(module_name, package_dir)

    distributed, counts, warnings = _replicas(flags, training_input, has_config=job is not None)
    scheduled = (training_input.get("scheduling") or {}).get("maxRunningTime")
    max_running_time = None
    if flags.max_running_time is not None:
        max_running_time = parse_duration(flags.max_running_time)
    elif scheduled:
        max_running_time = parse_duration(str(scheduled), "scheduling.maxRunningTime")

    job_dir = str(merged_input.get("jobDir") or "") or None
    if job_dir and "://" not in job_dir:  # gs:// and other remote paths go to the app unchanged
        path = expand_user(job_dir, "--job-dir")
        job_dir = str(path if path.is_absolute() else (cwd / path).resolve())
    # Args after `--` replace the file's args; without `--` the file's stay (the merge, as `training` does);
    # then --job-dir, as gcloud and the service do.
    app_args = [str(a) for a in merged_input.get("args") or []] + (["--job-dir", job_dir] if job_dir else [])
    effective_input: dict[str, Any] | None = None
    if job is not None:
        effective_input = {**merged_input, "args": list(app_args)} | ({"jobDir": job_dir} if job_dir else {})
        for name, (role, attr) in _COUNTS.items():
            key = str(role.count_field)
            if key in training_input or (distributed and getattr(flags, attr) is not None):
                effective_input[key] = str(counts[name])  # int64 fields are strings in the API
            else:
                effective_input.pop(key, None)  # a count flag without --distributed runs no cluster

    python, python_option = choose_python(flags.python, environ)
    vertex_env: dict[str, str] | None = None
    if flags.target == "vertex" or (flags.target is None and isinstance((job or {}).get("vertex"), dict)):
        # docs/vertex.md: Vertex AI always names the primary `chief`. The merge put --env over vertex.env.
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


def _replicas(
    flags: LocalTrainFlags, training_input: Mapping[str, Any], *, has_config: bool
) -> tuple[bool, dict[str, int], list[str]]:
    """(distributed, counts by local name, warnings): the config's cluster, then the count flags, else gcloud's."""
    planned = replica_counts(training_input)
    counts = {name: planned.get(role.key, 0) for name, (role, _) in _COUNTS.items()}
    distributed = flags.distributed or any(counts.values())
    flag_counts = {name: getattr(flags, attr) for name, (_, attr) in _COUNTS.items()}
    counts |= {name: value for name, value in flag_counts.items() if value is not None}
    if distributed and not has_config:
        # gcloud's defaults, only for counts neither flag nor file gave.
        if flags.worker_count is None:
            counts["workers"] = GCLOUD_DEFAULT_WORKERS
        if flags.parameter_server_count is None:
            counts["ps"] = GCLOUD_DEFAULT_PS
    warnings = []
    if not distributed:
        warnings = [
            f"--{_COUNTS[name][1].replace('_', '-')} is ignored without --distributed; add --distributed to run "
            "a cluster."
            for name, value in flag_counts.items()
            if value
        ]
        counts = dict.fromkeys(counts, 0)
    total = 1 + sum(counts.values())
    if total > MAX_LOCAL_REPLICAS:
        raise UsageError(
            f"{total} replicas is more than this machine should run (at most {MAX_LOCAL_REPLICAS}); "
            "lower the counts with --worker-count / --parameter-server-count / --evaluator-count."
        )
    return distributed, counts, warnings


def resolve_python(
    given: str | None, environ: Mapping[str, str] | None = None, option: str = "--python"
) -> str:
    """The interpreter replicas run with: ``given`` (a name on PATH or an executable's path), else ``python3``."""
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
