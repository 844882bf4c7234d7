"""``mlsubmit.api.plan(..., flags={"target": "kubernetes"})``: the TFJob ``training --target kubernetes --dry-run``
prints, from the same config and flags (namespace from the flag, the file or the kubeconfig; Kueue's queue), and
creating one from Python is refused in one line, with nothing sent (docs/api.md, docs/kubernetes.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlsubmit import api
from mlsubmit.errors import UsageError
from tests.acceptance.test_training_kubernetes import JOB_YAML  # the same job as training's tests
from tests.fakes.cli import run_cli
from tests.fakes.jobs import assert_valid_tfjob
from tests.fakes.kubeconfig import write_kubeconfig


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(JOB_YAML.format(workers=2, epochs=3))
    return path


def cli_body(config: Path, *extra: str) -> dict[str, Any]:
    done = run_cli(
        ["training", "job_1", "--config", str(config), "--target", "kubernetes", "--dry-run", "--format", "json",
         *extra]
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    body: dict[str, Any] = json.loads(done.stdout)
    return body


def test_plan_is_the_tfjob_the_dry_run_prints(config: Path) -> None:
    planned = api.plan("job_1", config, {"target": "kubernetes", "namespace": "team-a", "queue": "q-1"})
    assert planned.target == "kubernetes"
    assert planned.body == cli_body(config, "--namespace", "team-a", "--queue", "q-1")
    assert planned.body["kind"] == "TFJob" and planned.body["metadata"]["namespace"] == "team-a"
    assert planned.body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q-1"
    assert planned.body["spec"]["runPolicy"]["suspend"] is True
    assert_valid_tfjob(dict(planned.body))


def test_the_namespace_comes_from_the_file_then_the_kubeconfig(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.plan("job_1", config, {"target": "kubernetes"}).body["metadata"]["namespace"] == "default"
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", namespace="from-context")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    planned = api.plan("job_1", config, {"target": "kubernetes"})
    assert planned.body["metadata"]["namespace"] == "from-context"
    assert planned.body == cli_body(config)
    with_block = tmp_path / "block.yaml"
    with_block.write_text(JOB_YAML.format(workers=2, epochs=3) + "kubernetes: {namespace: from-file}\n")
    assert (
        api.plan("job_1", with_block, {"target": "kubernetes"}).body["metadata"]["namespace"] == "from-file"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"namespace": "Team_A"}, "flags['namespace']: 'Team_A' is not a namespace name"),
        ({"queue": "no spaces"}, "flags['queue']: 'no spaces' is not a Kubernetes label value"),
        ({"context": "nope"}, "no kubeconfig found at "),
    ],
)
def test_bad_cluster_flags_are_refused_offline(config: Path, flags: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as err:
        api.plan("job_1", config, {"target": "kubernetes", **flags})
    assert message in str(err.value)


def test_a_local_package_that_cannot_reach_the_cluster_names_the_way_out(tmp_path: Path) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('hi')\n")
    flags = {"target": "kubernetes", "package_path": str(package), "module_name": "trainer.task",
             "region": "us-central1", "runtime_version": "2.11", "python_version": "3.7"}  # fmt: skip
    with pytest.raises(UsageError) as err:
        api.plan("job_1", flags=flags)
    assert "the local package cannot reach the cluster" in str(err.value)


def test_submit_and_attach_to_a_cluster_are_refused_before_any_call(config: Path) -> None:
    with pytest.raises(UsageError, match=r"plans TFJobs \(mlsubmit.api.plan\) but does not create or attach"):
        api.submit("job_1", config, {"target": "kubernetes"})
    with pytest.raises(UsageError, match="does not create or attach"):
        api.attach("job_1", target="kubernetes")
