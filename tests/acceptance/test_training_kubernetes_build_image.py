"""``training --target kubernetes`` with a local package: staged to Cloud Storage, built into an image by
``--build-image`` and run by the TFJob pinned by digest; a cluster that refuses the job gets nothing uploaded or
built (Cloud Build, Cloud Storage and the registry: one loopback fake; the cluster: kmock)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild
from tests.fakes.kube_api import TFJOBS, kube_server
from tests.fakes.kubeconfig import write_kubeconfig


@pytest.fixture
def cluster(legacy_project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with kube_server() as server:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(legacy_project / "kubeconfig", server.url)))
        yield server


def submit(cloud_build: FakeCloudBuild, *extra: str) -> Any:
    return run_cli(
        ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket", "gs://stage",
         "--target", "kubernetes", "--build-image", "--builder", "cloud-build",
         "--output-image-uri", f"127.0.0.1:{cloud_build.port}/p/mlsubmit/trainer", *extra]
    )  # fmt: skip


def test_the_built_image_runs_pinned_by_digest(cloud_build: FakeCloudBuild, cluster: Any) -> None:
    done = submit(cloud_build)
    assert done.exit_code == 0, done.stderr
    (build,) = cloud_build.stored_builds
    digest = build["results"]["images"][0]["digest"]
    [tfjob] = cluster.objects(TFJOBS)
    images = {
        r["template"]["spec"]["containers"][0]["image"] for r in tfjob["spec"]["tfReplicaSpecs"].values()
    }
    assert images == {f"127.0.0.1:{cloud_build.port}/p/mlsubmit/trainer@{digest}"}
    assert cloud_build.uploads  # the sdist went to the staging bucket first


def test_a_cluster_that_refuses_gets_nothing_uploaded_or_built(
    cloud_build: FakeCloudBuild, cluster: Any
) -> None:
    cluster.api.allow_create = False
    done = submit(cloud_build)
    assert done.exit_code == 2
    assert "RBAC does not allow creating tfjobs in default" in done.stderr
    assert cloud_build.uploads == [] and cloud_build.build_bodies == []
    assert cluster.objects(TFJOBS) == []
