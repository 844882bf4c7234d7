"""``local train --target kubernetes`` rehearses a TFJob: each replica's TF_CONFIG is shaped as the training
operator writes it (cluster, task, environment; no ``job``), with the roles and counts of the TFJob that
``training --target kubernetes`` creates from the same config (docs/kubernetes.md "Rehearsing locally")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli

JOB = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 2
  parameterServerType: n1-standard-4
  parameterServerCount: 1
  runtimeVersion: "{runtime}"
  pythonVersion: "3.7"
  region: us-central1
"""


def _job_args(tmp_path: Path, task: str, name: str, config: str) -> list[str]:
    """Write ``tmp_path/trainer`` (its ``task.py`` holding ``task``) and the job file ``tmp_path/name`` holding
    ``config``: the arguments that name them."""
    (tmp_path / "trainer").mkdir(exist_ok=True)
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text(task)
    (tmp_path / name).write_text(config)
    return ["--config", str(tmp_path / name), "--package-path", str(tmp_path / "trainer"), "--module-name",
            "trainer.task"]  # fmt: skip


def _replica_specs(common: list[str]) -> dict[str, Any]:
    """The ``tfReplicaSpecs`` of the TFJob a ``training --target kubernetes --dry-run`` of ``common`` plans."""
    tfjob = run_cli(
        ["training", "job_1", *common, "--staging-bucket", "gs://stage", "--target", "kubernetes", "--dry-run",
         "--format", "json"]
    )  # fmt: skip
    assert tfjob.exit_code == 0, tfjob.stderr
    specs: dict[str, Any] = json.loads(tfjob.stdout)["spec"]["tfReplicaSpecs"]
    return specs


@pytest.mark.parametrize("runtime", ["2.11", "1.15"])  # the primary is `chief`, or `master` before 2.1
def test_each_replica_sees_the_operators_tf_config(tmp_path: Path, runtime: str) -> None:
    common = _job_args(tmp_path, "", "job.yaml", JOB.format(runtime=runtime))
    local = run_cli(["local", "train", *common, "--distributed", "--target", "kubernetes", "--dry-run"])
    assert local.exit_code == 0, local.stderr
    configs = [r["tf_config"] for r in json.loads(local.stdout)["replicas"]]
    assert all(
        set(c) == {"cluster", "task", "environment"} for c in configs
    )  # no "job": the operator sets none

    specs = _replica_specs(common)
    roles = {kind.lower(): spec["replicas"] for kind, spec in specs.items()}
    assert {role: len(addresses) for role, addresses in configs[0]["cluster"].items()} == roles
    assert sorted((c["task"]["type"], c["task"]["index"]) for c in configs) == sorted(
        (role, i) for role, count in roles.items() for i in range(count)
    )


SINGLE = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerCount: {workers}
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  region: us-central1
"""

PRINT_TF_CONFIG = "import os\nprint('TF_CONFIG=' + repr(os.environ.get('TF_CONFIG')))\n"


def _package(tmp_path: Path, workers: int = 0) -> list[str]:
    return _job_args(tmp_path, PRINT_TF_CONFIG, f"single-{workers}.yaml", SINGLE.format(workers=workers))


@pytest.mark.parametrize("distributed", [[], ["--distributed"]])
def test_a_tfjob_of_one_pod_gets_no_tf_config_as_on_the_cluster(
    tmp_path: Path, distributed: list[str]
) -> None:
    """The operator writes TF_CONFIG only for a distributed TFJob (more than one pod in all): a lone chief sees
    none, even when the shell that runs the rehearsal has one."""
    common = _package(tmp_path)
    specs = _replica_specs(common)
    assert sum(spec["replicas"] for spec in specs.values()) == 1
    local = ["local", "train", *common, *distributed, "--target", "kubernetes"]
    planned = run_cli([*local, "--dry-run"])
    assert planned.exit_code == 0, planned.stderr
    assert [r["tf_config"] for r in json.loads(planned.stdout)["replicas"]] == [None]
    ran = run_cli(local, env={"TF_CONFIG": '{"cluster": {"chief": ["elsewhere:1"]}}'})
    assert ran.exit_code == 0, ran.stderr
    assert "TF_CONFIG=None" in ran.stdout


# The chief waits (10 s at most) for the worker to have printed: the run stops the worker when the chief ends.
WAIT_FOR_WORKER = """\
import json, os, sys, time
print('TF_CONFIG=' + repr(os.environ.get('TF_CONFIG')), flush=True)
mark = {mark!r}
if json.loads(os.environ['TF_CONFIG'])['task']['type'] == 'worker':
    open(mark, 'w').close()
deadline = time.monotonic() + 10
while not os.path.exists(mark) and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def test_two_pods_get_the_operators_tf_config(tmp_path: Path) -> None:
    code = WAIT_FOR_WORKER.format(mark=str(tmp_path / "worker-printed"))
    common = _job_args(tmp_path, code, "single-1.yaml", SINGLE.format(workers=1))
    ran = run_cli(["local", "train", *common, "--distributed", "--target", "kubernetes"])
    assert ran.exit_code == 0, ran.stderr
    seen = [line.split("TF_CONFIG=", 1)[1] for line in ran.stdout.splitlines() if "TF_CONFIG=" in line]
    assert len(seen) == 2 and all("'task'" not in s and '"task"' in s for s in seen)
