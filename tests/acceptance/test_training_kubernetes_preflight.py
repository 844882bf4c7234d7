"""``mlsubmit preflight JOB --target kubernetes`` against kmock's emulator (tests/fakes/kube_api.py): the cluster's
checks alone, one line each on stdout as Vertex AI's preflight prints them, exit 0 (all ran and passed), 2 (one
refused) or 1 (one could not run), and nothing created."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance import test_training_kubernetes as training_tests
from tests.fakes.cli import run_cli
from tests.fakes.kube_api import PYTORCHJOBS, TFJOBS
from tests.fakes.kubeconfig import write_kubeconfig

cluster = training_tests.cluster  # the same emulator and kubeconfig as training's tests


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(training_tests.JOB_YAML.format(workers=2, epochs=2))
    return str(path)


def preflight(config: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    return run_cli(["preflight", "job_1", "--config", config, "--target", "kubernetes", *extra], env=env)


def nothing_created(cluster: Any) -> bool:
    posts = [c.path for c in cluster.api.calls if c.method in ("POST", "PUT", "PATCH", "DELETE")]
    return all(p.endswith("/selfsubjectaccessreviews") for p in posts) and not cluster.objects(TFJOBS)


def test_every_check_passes_one_line_each_exit_0(cluster: Any, config: str) -> None:
    done = preflight(config)
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"preflight: ok: api server: {cluster.url} answers (Kubernetes ")
    assert lines[1:] == [
        "preflight: ok: tfjobs resource: kubeflow.org/v1 tfjobs is served",
        "preflight: ok: namespace: default exists",
        "preflight: ok: access: may create tfjobs in default",
    ]
    assert nothing_created(cluster)
    as_json = preflight(config, "--format", "json")
    assert as_json.exit_code == 0
    report = json.loads(as_json.stdout)
    assert report["ok"] is True and [c["status"] for c in report["checks"]] == ["ok"] * 4


@pytest.mark.parametrize(
    ("extra", "setup", "line"),
    [
        ([], "no-crd", "preflight: REFUSED: tfjobs resource: kubeflow.org/v1 tfjobs is not served"),
        ([], "rbac", "preflight: REFUSED: access: RBAC does not allow creating tfjobs in default"),
        (["--namespace", "absent"], None, "preflight: REFUSED: namespace: namespace absent does not exist"),
        (["--queue", "q1"], None, "preflight: REFUSED: queue: no Kueue LocalQueue q1 in default"),
    ],
)
def test_a_refusal_is_its_line_and_exit_2(
    cluster: Any, config: str, extra: list[str], setup: str | None, line: str
) -> None:
    if setup == "no-crd":
        cluster.api.served.clear()
    if setup == "rbac":
        cluster.api.allow_create = False
    done = preflight(config, *extra)
    assert done.exit_code == 2
    assert any(out.startswith(line) for out in done.stdout.splitlines()), done.stdout
    assert "Traceback" not in done.stderr
    assert nothing_created(cluster)


def test_a_check_that_cannot_run_is_could_not_check_exit_1(cluster: Any, config: str) -> None:
    cluster.api.faults.append(("POST", "/selfsubjectaccessreviews", 503))
    done = preflight(config)
    assert done.exit_code == 1
    last = done.stdout.splitlines()[-1]
    assert last.startswith("preflight: could not check: access: POST /apis/authorization.k8s.io/v1/")
    assert "HTTP 503" in last
    assert "1 of 4 check(s) could not run" in done.stderr and "Traceback" not in done.stderr
    assert nothing_created(cluster)


def test_an_api_server_that_does_not_answer_is_exit_1(tmp_path: Path, config: str) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    done = preflight(config, env={"KUBECONFIG": str(kubeconfig), "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01"})
    assert done.exit_code == 1, done.output
    assert done.stdout.startswith("preflight: could not check: api server:")
    assert "Traceback" not in done.stderr


def test_bad_kubeconfig_input_is_exit_2_before_any_call(cluster: Any, config: str) -> None:
    done = preflight(config, "--context", "nope")
    assert done.exit_code == 2 and "context 'nope' is in no kubeconfig" in done.stderr
    done = preflight(config, "--namespace", "Team_A")
    assert done.exit_code == 2 and "--namespace: 'Team_A' is not a namespace name" in done.stderr
    assert cluster.api.calls == []


def test_a_pytorch_job_checks_pytorchjobs_and_the_target_env_picks_the_cluster(
    cluster: Any, tmp_path: Path
) -> None:
    torch = tmp_path / "torch.yaml"
    torch.write_text(
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  workerType: n1-standard-4\n"
        "  workerCount: 1\n  packageUris: [gs://my-bucket/trainer-0.1.tar.gz]\n  pythonModule: trainer.task\n"
        "  region: us-central1\nvertex:\n  framework: pytorch\n"
    )
    done = run_cli(["preflight", "job_2", "--config", str(torch)], env={"MLSUBMIT_TARGET": "kubernetes"})
    assert done.exit_code == 0, done.stderr
    assert "preflight: ok: access: may create pytorchjobs in default" in done.stdout
    assert cluster.objects(PYTORCHJOBS) == []


def test_cluster_flags_without_the_kubernetes_target_are_refused(config: str) -> None:
    done = run_cli(["preflight", "job_1", "--config", config, "--queue", "q1"])
    assert (
        done.exit_code == 2
        and "--context, --namespace and --queue are for --target kubernetes" in done.stderr
    )
