"""``mlsubmit.api.plan(..., flags={"target": "kubernetes"})``: the TFJob ``training --target kubernetes --dry-run``
prints, from the same config and flags (namespace from the flag, the file or the kubeconfig; Kueue's queue); and
``submit``/``attach`` against kmock's emulator: created exactly once, a handle whose JSON names the context and
namespace (never a token) and whose ``status()`` is one GET on the TFJob (docs/api.md, docs/kubernetes.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlsubmit import api
from mlsubmit.errors import ApiError, PreflightRefused, UsageError
from tests.acceptance import test_training_kubernetes as training_tests
from tests.fakes.cli import run_cli
from tests.fakes.jobs import assert_valid_tfjob
from tests.fakes.kube_api import TFJOBS, operator
from tests.fakes.kubeconfig import write_kubeconfig

cluster = training_tests.cluster  # the same emulator and kubeconfig as training's tests


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(training_tests.JOB_YAML.format(workers=2, epochs=3))
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
    with_block.write_text(
        training_tests.JOB_YAML.format(workers=2, epochs=3) + "kubernetes: {namespace: from-file}\n"
    )
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


def tfjob_gets(server: Any) -> list[str]:
    return [c.path for c in server.api.calls if c.method == "GET" and "/tfjobs/" in c.path]


def test_submit_creates_once_and_the_handle_follows_from_json(cluster: Any, config: Path) -> None:
    handle = api.submit("job_1", config, {"target": "kubernetes"})
    again = api.submit("job_1", config, {"target": "kubernetes"})  # a retried task adopts, creates nothing
    assert again == handle
    assert len(cluster.objects(TFJOBS)) == 1  # the second create was answered 409 and adopted
    text = handle.to_json()
    assert json.loads(text) == {
        "mlsubmit_handle": 1, "job_id": "job_1", "target": "kubernetes", "context": "test",
        "namespace": "default", "name": "tfjobs/job-1",
    }  # fmt: skip
    assert "kube-secret-token" not in text and "127.0.0.1" not in text  # no token, no endpoint
    back = api.Handle.from_json(text)
    assert (back.context, back.namespace) == ("test", "default")
    before = len(cluster.api.calls)
    now = back.status()
    assert now.state == "QUEUED" and not now.done
    assert [(c.method, c.path) for c in cluster.api.calls[before:]] == [
        ("GET", "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job-1")
    ]  # one GET on the TFJob
    assert back.cancel().state in ("CANCELLING", "CANCELLED")
    assert cluster.objects(TFJOBS) == []


def test_wait_logs_and_attach_on_a_running_operator(cluster: Any, config: Path) -> None:
    operator(cluster, lines=2)
    handle = api.submit("job_2", config, {"target": "kubernetes", "preflight": False})
    assert api.attach("job_2", target="kubernetes", namespace="default") == handle
    lines: list[str] = []
    final = handle.logs(follow=True, emit=lines.append)
    assert final.succeeded, final
    assert "master-0: master 0 line 0" in lines and "worker-1: worker 1 line 1" in lines
    assert api.Handle.from_json(handle.to_json()).wait(timeout=5).state == "SUCCEEDED"


def test_a_refused_cluster_creates_nothing_and_attach_needs_the_job(cluster: Any, config: Path) -> None:
    cluster.api.allow_create = False
    with pytest.raises(PreflightRefused) as refused:  # a UsageError, as on the command line (exit 2)
        api.submit("job_3", config, {"target": "kubernetes"})
    assert refused.value.refusals == [
        "preflight refused: access: RBAC does not allow creating tfjobs in default (no RBAC rule)"
    ]
    assert cluster.objects(TFJOBS) == []
    with pytest.raises(ApiError, match="no TFJob or PyTorchJob job-3"):
        api.attach("job_3", target="kubernetes")
    with pytest.raises(UsageError, match="context and namespace are for target='kubernetes'"):
        api.attach("job_3", target="vertex", namespace="default")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "tfjobs/other-job"}, "name is not tfjobs/job-1 (or pytorchjobs/job-1)"),
        ({"name": "pods/job-1"}, "name is not tfjobs/job-1"),
        ({"namespace": "Bad_NS"}, "namespace 'Bad_NS' is not a namespace name"),
        ({"context": ""}, "context is not a kubeconfig context name"),
        ({"project": "p"}, "expected exactly the keys context, job_id"),
        ({"token": "x"}, "expected exactly the keys"),
    ],
)
def test_an_edited_cluster_handle_is_refused(change: dict[str, str], message: str) -> None:
    good = {"mlsubmit_handle": 1, "job_id": "job_1", "target": "kubernetes", "context": "test",
            "namespace": "default", "name": "tfjobs/job-1"}  # fmt: skip
    api.Handle.from_json(json.dumps(good))
    with pytest.raises(UsageError) as err:
        api.Handle.from_json(json.dumps({**good, **change}))
    assert message in str(err.value) and str(err.value).startswith("job handle: ")
