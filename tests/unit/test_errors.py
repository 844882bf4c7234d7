"""mlsubmit.errors: every error class lives here and words its own report."""

from __future__ import annotations

import inspect

import pytest

import mlsubmit.errors as errors
from mlsubmit.errors import ExitStatus, InvalidJobError, MlsubmitError, Problem


def test_report_lines_are_gcloud_style_one_per_problem() -> None:
    err = InvalidJobError(
        [Problem("must be > 0", "$.trainingInput.workerCount", "job.yaml", 4), Problem("x")]
    )
    assert err.report_lines() == [
        "ERROR: job.yaml:4: $.trainingInput.workerCount: must be > 0",
        "ERROR: $: x",
    ]
    assert MlsubmitError("no project").report_lines() == ["ERROR: no project"]


@pytest.mark.parametrize(
    ("name", "status", "old_home"),
    [
        ("FollowInterrupted", ExitStatus.INTERRUPTED, "mlsubmit.services.poll"),
        ("WaitTimeoutError", ExitStatus.FAILURE, "mlsubmit.services.poll"),
        ("ReplicaFailedError", ExitStatus.FAILURE, "mlsubmit.local.supervisor"),
        ("RunTimeoutError", ExitStatus.FAILURE, "mlsubmit.local.supervisor"),
        ("RunInterruptedError", ExitStatus.INTERRUPTED, "mlsubmit.local.supervisor"),
    ],
)
def test_moved_errors_keep_their_names_and_exit_statuses(
    name: str, status: ExitStatus, old_home: str
) -> None:
    import importlib

    cls = getattr(errors, name)
    assert cls.exit_status is status
    assert getattr(importlib.import_module(old_home), name) is cls  # old imports keep working


def test_no_error_class_is_defined_outside_errors_py() -> None:
    import pkgutil

    import mlsubmit

    outside = []
    for info in pkgutil.walk_packages(mlsubmit.__path__, "mlsubmit."):
        if info.name.endswith("__main__"):
            continue
        module = __import__(info.name, fromlist=["_"])
        for _name, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, MlsubmitError)
                and obj.__module__ == info.name
                and info.name != "mlsubmit.errors"
            ):
                outside.append(f"{info.name}.{obj.__name__}")
    assert outside == []
