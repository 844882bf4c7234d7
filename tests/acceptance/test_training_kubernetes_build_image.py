"""``training --target kubernetes`` with a local package: staged to Cloud Storage, built into an image by
``--build-image`` and run by the TFJob pinned by digest; a cluster that refuses the job gets nothing uploaded or
built (Cloud Build, Cloud Storage and the registry: one loopback fake; the cluster: kmock)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env
from tests.fakes.kube_api import TFJOBS, kube_server
from tests.fakes.kubeconfig import write_kubeconfig

LEGACY = """\
trainingInput:
  region: us-central1
  scaleTier: CUSTOM
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  masterType: n1-standard-8
  workerType: n1-standard-8
  workerCount: 1
"""


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCloudBuild]:
    with FakeCloudBuild(project="p") as fake:
        for name, value in build_env(fake).items():
            monkeypatch.setenv(name, value)
        yield fake


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text("print('training')\n")
    (tmp_path / "legacy.yaml").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    with kube_server() as server:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", server.url)))
        yield server


def submit(google: FakeCloudBuild, *extra: str) -> Any:
    return run_cli(
        ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket", "gs://stage",
         "--target", "kubernetes", "--build-image", "--builder", "cloud-build",
         "--output-image-uri", f"127.0.0.1:{google.port}/p/mlsubmit/trainer", *extra]
    )  # fmt: skip


def test_the_built_image_runs_pinned_by_digest(google: FakeCloudBuild, cluster: Any) -> None:
    done = submit(google)
    assert done.exit_code == 0, done.stderr
    (build,) = google.stored_builds
    digest = build["results"]["images"][0]["digest"]
    [tfjob] = cluster.objects(TFJOBS)
    images = {
        r["template"]["spec"]["containers"][0]["image"] for r in tfjob["spec"]["tfReplicaSpecs"].values()
    }
    assert images == {f"127.0.0.1:{google.port}/p/mlsubmit/trainer@{digest}"}
    assert google.uploads  # the sdist went to the staging bucket first


def test_a_cluster_that_refuses_gets_nothing_uploaded_or_built(google: FakeCloudBuild, cluster: Any) -> None:
    cluster.api.allow_create = False
    done = submit(google)
    assert done.exit_code == 2
    assert "RBAC does not allow creating tfjobs in default" in done.stderr
    assert google.uploads == [] and google.build_bodies == []
    assert cluster.objects(TFJOBS) == []
