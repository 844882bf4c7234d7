"""How a replica runs in a container: the engine's command line (the variables passed in and what is mounted are
in tests/unit/local/test_containers.py)."""

from __future__ import annotations

from mlsubmit.images.containers import ReplicaContainers
from mlsubmit.images.engines import LocalEngine


def test_docker_runs_the_images_entrypoint_on_the_host_network_with_the_added_variables() -> None:
    containers = ReplicaContainers(
        LocalEngine("docker", "/usr/bin/docker"), "reg.example/t@sha256:" + "a" * 64, "r1"
    )
    argv = containers.argv(
        "worker-0", {"TF_CONFIG": "{}", "AIP_MODEL_DIR": "/out"}, ["/out"], "trainer.task", ["--x", "1"]
    )
    assert argv == [
        "/usr/bin/docker",
        "run",
        "--rm",
        "--name",
        "mlsubmit-r1-worker-0",
        "--network",
        "host",
        "--env=AIP_MODEL_DIR=/out",
        "--env=TF_CONFIG={}",
        "--volume=/out:/out",
        "reg.example/t@sha256:" + "a" * 64,
        "--x",
        "1",
    ]
    assert containers.created == ["mlsubmit-r1-worker-0"]  # removed at the end even if --rm never ran


def test_podman_pulls_from_a_loopback_registry_without_tls() -> None:
    containers = ReplicaContainers(LocalEngine("podman", "podman"), "127.0.0.1:5000/t:ctx-1", "r2")
    assert "--tls-verify=false" in containers.argv("chief", {}, [], "m", [])
    remote = ReplicaContainers(LocalEngine("podman", "podman"), "us-docker.pkg.dev/p/r/t:ctx-1", "r3")
    assert "--tls-verify=false" not in remote.argv("chief", {}, [], "m", [])
