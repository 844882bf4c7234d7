"""One trial as a local run: its arguments, environment and ports (mlsubmit.local.tune.trials)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.local.cluster import plan_cluster
from mlsubmit.local.request import LocalTrainFlags, LocalTrainRequest, resolve_request
from mlsubmit.local.tune.trials import trial_environment, trial_request
from tests.fakes.ports import free_block


def request(tmp_path: Path, **flags: Any) -> LocalTrainRequest:
    pkg = tmp_path / "trainer"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    given = LocalTrainFlags(
        package_path=str(pkg),
        module_name="trainer.task",
        job_dir=str(tmp_path / "out"),
        user_args=("--epochs", "3"),
        **flags,
    )
    job = {"trainingInput": {"hyperparameters": {"goal": "MAXIMIZE"}}}
    return resolve_request(given, job, cwd=tmp_path, environ={})


def test_trial_args_job_dir_and_task_trial(tmp_path: Path) -> None:
    base = request(tmp_path)
    trial = trial_request(base, "7", {"lr": 0.01, "opt": "adam"})
    out = str(tmp_path / "out" / "7")
    assert trial.app_args == ("--epochs", "3", "--lr=0.01", "--opt=adam", "--job-dir", out)
    assert trial.trial == 7 and trial.job_dir == out
    assert trial.training_input is not None and trial.training_input["args"] == list(trial.app_args)


def test_trial_environment(tmp_path: Path) -> None:
    env = trial_environment({"PATH": "/bin"}, tmp_path, "3")
    assert env["PATH"] == "/bin" and env["CLOUD_ML_TRIAL_ID"] == "3"
    assert env["CLOUD_ML_HP_METRIC_FILE"] == str(tmp_path / "hypertune" / "3" / "output.metrics")
    assert env["AIP_MODEL_DIR"] == str(tmp_path / "3" / "model")


def test_parallel_trials_get_disjoint_ports(tmp_path: Path) -> None:
    base = request(tmp_path, distributed=True, worker_count=2, parameter_server_count=1)
    first = plan_cluster(base, 0, set())
    ports = {int(a.rsplit(":", 1)[1]) for addrs in (first.cluster or {}).values() for a in addrs}
    assert len(ports) == 4
    second = plan_cluster(base, 1, ports)
    again = {int(a.rsplit(":", 1)[1]) for addrs in (second.cluster or {}).values() for a in addrs}
    assert not ports & again


def test_start_port_blocks_are_offset_per_slot(tmp_path: Path) -> None:
    start = free_block(15)
    base = request(
        tmp_path, distributed=True, worker_count=1, parameter_server_count=0, start_port=start + 10
    )
    slot1 = plan_cluster(base, 1, set())
    assert slot1.cluster == {"chief": [f"localhost:{start + 12}"], "worker": [f"localhost:{start + 13}"]}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", start + 14))
        busy.listen()
        with pytest.raises(UsageError, match="already in use"):
            plan_cluster(base, 2, set())


def test_single_process_trials_need_no_ports(tmp_path: Path) -> None:
    plan = plan_cluster(request(tmp_path), 3, {1, 2})
    assert plan.cluster is None and [r.name for r in plan.replicas] == ["chief"]


def test_a_start_port_block_past_65535_is_refused(tmp_path: Path) -> None:
    base = request(tmp_path, distributed=True, worker_count=2, parameter_server_count=0, start_port=65534)
    with pytest.raises(UsageError, match="at most 65533"):
        plan_cluster(base)
