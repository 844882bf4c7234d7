"""Flags and config merged into a local run request (mlsubmit.local.request): precedence, defaults, refusals."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.job.vocab import primary_task_name
from mlsubmit.local.request import (
    LocalTrainFlags,
    parse_duration,
    resolve_python,
    resolve_request,
)


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    """tmp/src/trainer/{__init__,task}.py, the usual layout."""
    trainer = tmp_path / "src" / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("print('hi')\n")
    return trainer


def resolve(pkg: Path, job: dict[str, Any] | None = None, **flags: Any) -> Any:
    flags.setdefault("package_path", str(pkg))
    flags.setdefault("module_name", "trainer.task" if job is None else None)
    return resolve_request(LocalTrainFlags(**flags), job, cwd=pkg.parent.parent, environ={})


def test_single_process_by_default(pkg: Path) -> None:
    request = resolve(pkg)
    assert (request.distributed, request.workers, request.ps, request.evaluators) == (False, 0, 0, 0)
    assert request.package_dir == pkg
    assert request.app_args == ()
    assert request.primary_name == "chief"
    assert request.training_input is None


def test_distributed_without_counts_uses_gcloud_defaults(pkg: Path) -> None:
    request = resolve(pkg, distributed=True)
    assert (request.workers, request.ps, request.evaluators) == (2, 2, 0)


def test_distributed_counts_from_flags(pkg: Path) -> None:
    request = resolve(pkg, distributed=True, worker_count=1, parameter_server_count=0, evaluator_count=1)
    assert (request.workers, request.ps, request.evaluators) == (1, 0, 1)


def test_counts_without_distributed_are_ignored_with_a_warning(pkg: Path) -> None:
    request = resolve(pkg, worker_count=3)
    assert not request.distributed and request.workers == 0
    assert request.warnings == (
        "--worker-count is ignored without --distributed; add --distributed to run a cluster.",
    )


def test_config_counts_make_a_cluster_and_flags_override_them(pkg: Path) -> None:
    job = {
        "trainingInput": {
            "pythonModule": "trainer.task",
            "scaleTier": "CUSTOM",
            "workerCount": "3",
            "parameterServerCount": "1",
        }
    }
    request = resolve(pkg, job)
    assert (request.distributed, request.workers, request.ps, request.evaluators) == (True, 3, 1, 0)
    request = resolve(pkg, job, worker_count=1)
    assert (request.workers, request.ps) == (1, 1)
    assert request.training_input is not None
    assert request.training_input["workerCount"] == "1"  # TF_CONFIG's job describes what really runs


def test_config_without_counts_and_distributed_runs_chief_alone(pkg: Path) -> None:
    request = resolve(pkg, {"trainingInput": {"pythonModule": "trainer.task"}}, distributed=True)
    assert (request.distributed, request.workers, request.ps) == (True, 0, 0)


def test_args_after_dashes_replace_the_files_and_job_dir_is_appended(pkg: Path, tmp_path: Path) -> None:
    job = {
        "trainingInput": {"pythonModule": "trainer.task", "args": ["--epochs", "1"], "jobDir": "gs://b/out"}
    }
    assert resolve(pkg, job).app_args == ("--epochs", "1", "--job-dir", "gs://b/out")
    assert resolve(pkg, job, user_args=("--lr", "2")).app_args == ("--lr", "2", "--job-dir", "gs://b/out")
    assert resolve(pkg, job, user_args=()).app_args == (
        "--job-dir",
        "gs://b/out",
    )  # an empty `--` empties them
    # --job-dir wins over the file's jobDir; a relative local dir is made absolute against the caller's cwd
    request = resolve(pkg, job, job_dir="out")
    assert request.app_args == ("--epochs", "1", "--job-dir", str(tmp_path / "out"))
    assert request.training_input is not None and request.training_input["jobDir"] == str(tmp_path / "out")


def test_module_name_from_config(pkg: Path) -> None:
    assert resolve(pkg, {"trainingInput": {"pythonModule": "trainer.task"}}).module_name == "trainer.task"
    with pytest.raises(UsageError, match="--module-name is required"):
        resolve(pkg, {"trainingInput": {}})


@pytest.mark.parametrize(
    ("training_input", "expected"),
    [
        ({}, "chief"),
        ({"runtimeVersion": "2.11"}, "chief"),
        ({"runtimeVersion": "1.15"}, "master"),
        ({"runtimeVersion": "2.0"}, "master"),
        ({"masterConfig": {"imageUri": "gcr.io/p/i"}}, "master"),
        ({"masterConfig": {"imageUri": "gcr.io/p/i"}, "useChiefInTfConfig": True}, "chief"),
    ],
)
def test_primary_name_follows_the_service(training_input: dict[str, Any], expected: str) -> None:
    assert primary_task_name(training_input) == expected


def test_primary_name_flag_wins(pkg: Path) -> None:
    job = {"trainingInput": {"pythonModule": "trainer.task", "masterConfig": {"imageUri": "gcr.io/p/i"}}}
    assert resolve(pkg, job).primary_name == "master"
    assert resolve(pkg, job, primary_name="chief").primary_name == "chief"


def test_max_running_time_from_flag_or_config(pkg: Path) -> None:
    job = {"trainingInput": {"pythonModule": "trainer.task", "scheduling": {"maxRunningTime": "7200s"}}}
    assert resolve(pkg, job).max_running_time == 7200.0
    assert resolve(pkg, job, max_running_time="30s").max_running_time == 30.0
    assert resolve(pkg).max_running_time is None


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30.0), ("3600s", 3600.0), ("1.5s", 1.5), ("45", 45.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "10m", "-3s", "1.0000000001s", "s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(UsageError, match="positive duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"package_path": "nope"}, "--package-path nope: no such directory"),
        ({"module_name": "trainer..task"}, "has an empty part between dots"),
        ({"module_name": "trainer.taks"}, r"no trainer/taks\.py in .*; did you mean trainer\.task\?"),
    ],
)
def test_bad_input_is_refused_with_a_usage_error(pkg: Path, flags: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        resolve(pkg, **flags)
    assert info.value.exit_status == 2


def test_package_without_init_is_refused(pkg: Path) -> None:
    (pkg / "__init__.py").unlink()
    with pytest.raises(UsageError, match=r"has no __init__\.py"):
        resolve(pkg)


def test_package_path_that_is_a_file_is_refused(pkg: Path) -> None:
    with pytest.raises(UsageError, match="is a file"):
        resolve(pkg, package_path=str(pkg / "task.py"))


def test_module_outside_the_package_is_not_checked(pkg: Path) -> None:
    assert resolve(pkg, module_name="otherpkg.main").module_name == "otherpkg.main"


def test_subpackage_module_is_found(pkg: Path) -> None:
    (pkg / "sub").mkdir()
    (pkg / "sub" / "__init__.py").write_text("")
    assert resolve(pkg, module_name="trainer.sub").module_name == "trainer.sub"


def test_python_from_flag_then_environment(pkg: Path) -> None:
    request = resolve_request(
        LocalTrainFlags(package_path=str(pkg), module_name="trainer.task"),
        None,
        cwd=pkg,
        environ={"MLSUBMIT_LOCAL_PYTHON": "/opt/py/bin/python3"},
    )
    assert (request.python, request.python_option) == ("/opt/py/bin/python3", "MLSUBMIT_LOCAL_PYTHON")
    assert resolve(pkg, python="/x/python").python == "/x/python"


def test_resolve_python(tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "python3"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    assert resolve_python(None, {"PATH": str(exe.parent)}) == str(exe)
    assert resolve_python(str(exe), {}) == str(exe)
    with pytest.raises(UsageError, match="no 'python3' on PATH"):
        resolve_python(None, {"PATH": str(tmp_path)})
    with pytest.raises(UsageError, match="MLSUBMIT_LOCAL_PYTHON '/no/such/python' is not an executable"):
        resolve_python("/no/such/python", {}, "MLSUBMIT_LOCAL_PYTHON")
    assert os.path.isabs(resolve_python(os.path.relpath(exe), {}))


@pytest.mark.parametrize(
    ("job", "flags"),
    [
        (
            {
                "trainingInput": {
                    "pythonModule": "trainer.task",
                    "scaleTier": "CUSTOM",
                    "workerCount": str(2**70),
                }
            },
            {},
        ),
        (None, {"distributed": True, "worker_count": 10**6}),
    ],
)
def test_a_cloud_sized_cluster_is_refused_locally(pkg: Path, job: dict[str, Any] | None, flags: Any) -> None:
    with pytest.raises(UsageError, match="more than this machine should run"):
        resolve(pkg, job, **flags)


@pytest.mark.parametrize(
    ("tier", "counts"), [("STANDARD_1", (4, 3)), ("PREMIUM_1", (19, 11)), ("BASIC", (0, 0))]
)
def test_scale_tier_gives_the_replicas_of_the_service(pkg: Path, tier: str, counts: tuple[int, int]) -> None:
    request = resolve(pkg, {"trainingInput": {"pythonModule": "trainer.task", "scaleTier": tier}})
    assert (request.workers, request.ps) == counts and request.distributed == (counts != (0, 0))
