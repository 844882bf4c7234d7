"""What a replica's container gets: only the variables the runner adds, and a local job dir mounted."""

from __future__ import annotations

from pathlib import Path

from mlsubmit.local.containers import container_env, mounts_for


def test_only_what_the_runner_adds_goes_into_the_container() -> None:
    caller = {"PATH": "/host/bin", "HOME": "/root", "PYTHONUNBUFFERED": "1"}
    replica = {**caller, "TF_CONFIG": "{}", "CLUSTER_SPEC": "{}"}
    assert container_env(replica, caller) == {"TF_CONFIG": "{}", "CLUSTER_SPEC": "{}"}


def test_a_local_job_dir_is_mounted_and_made_a_remote_one_is_not(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    assert mounts_for(str(job_dir)) == [str(job_dir)] and job_dir.is_dir()
    assert mounts_for("gs://bucket/out") == [] and mounts_for(None) == []
