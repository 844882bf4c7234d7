"""Local engines: a missing or silent engine is one line with the way out; a failed build shows its last lines;
and, with the real buildah and registry, the content tag means one build per change (docs/containers.md)."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from mlsubmit.errors import BuilderUnavailableError, ImageBuildError
from mlsubmit.images import BaseWanted, ImageSpec, ensure_image, plan_image
from mlsubmit.images.engines import answering, engine, select_builder
from mlsubmit.sdist.build import build_sdist
from mlsubmit.services.registry import manifest_digest, registry_lookup
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.wire import Wire
from tests.fakes.containers import Storage

TRAINER = Path(__file__).resolve().parents[3] / "examples" / "trainer_basic" / "trainer"


def fake_cli(folder: Path, name: str, script: str) -> dict[str, str]:
    """A PATH holding only ``name``, a shell script, and the tools a shell script needs."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{folder}:/usr/bin:/bin"}


def test_a_missing_engine_names_cloud_build(tmp_path: Path) -> None:
    with pytest.raises(BuilderUnavailableError) as caught:
        engine("podman", output=print, env={"PATH": str(tmp_path)})
    assert str(caught.value) == (
        "--builder podman: podman is not installed (not on PATH); "
        "pass --builder cloud-build to build on Google Cloud instead"
    )


def test_a_dead_docker_daemon_is_one_line_and_auto_falls_back_to_cloud_build(tmp_path: Path) -> None:
    env = fake_cli(
        tmp_path / "bin",
        "docker",
        'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2; exit 1',
    )
    env["PATH"] = str(tmp_path / "bin")  # no podman, no buildah
    with pytest.raises(BuilderUnavailableError) as caught:
        answering("docker", output=print, env=env)
    message = str(caught.value)
    assert "\n" not in message
    assert "Cannot connect to the Docker daemon" in message and "--builder cloud-build" in message
    told: list[str] = []
    cloud = object()
    chosen = select_builder("auto", cloud_build=lambda: cloud, output=print, log=told.append, env=env)  # type: ignore[arg-type,return-value]
    assert chosen is cloud
    assert told == [
        "Building the image with Cloud Build (--builder auto: no local engine answers: docker, podman, buildah)."
    ]


def plan(workdir: Path, package: Path, repository: str, base: str) -> tuple[ImageSpec, Path]:
    return plan_image(
        module="trainer.task",
        sdist=build_sdist(package, workdir / "sdist"),
        packages=(),
        base=BaseWanted(base_image=base),
        repository=repository,
        workdir=workdir,
    )


def test_a_failed_build_shows_its_last_lines_streamed(tmp_path: Path) -> None:
    env = fake_cli(
        tmp_path / "bin", "podman", 'echo "STEP 1/7: FROM base"; echo "pip: no such package" >&2; exit 3'
    )
    lines: list[str] = []
    podman = engine("podman", output=lines.append, env=env)
    spec, tar = plan(tmp_path, TRAINER, "127.0.0.1:5000/x/trainer", "python:3.11-slim")
    with pytest.raises(ImageBuildError) as caught:
        podman.build(spec, tar)
    assert lines == ["STEP 1/7: FROM base", "pip: no such package"]
    assert str(caught.value).endswith(
        "failed (exit 3); its last lines:\nSTEP 1/7: FROM base\npip: no such package"
    )


class Counting:
    """The real buildah, counting its builds."""

    name = "buildah"

    def __init__(self, storage: Storage) -> None:
        self.engine = storage.engine()
        self.builds = 0

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        self.builds += 1
        return self.engine.build(spec, context_tar)


@pytest.mark.containers
def test_buildah_builds_pushes_then_reuses_until_one_byte_changes(
    container_storage: Storage, base_image: str, loopback_registry: str, tmp_path: Path
) -> None:
    package = tmp_path / "src" / "trainer"
    shutil.copytree(TRAINER, package)
    repository = f"{loopback_registry}/mlsubmit/trainer-basic"
    lookup = registry_lookup(Wire(deadline=10), None, RetryPolicy(attempts=1))
    builder = Counting(container_storage)

    spec, tar = plan(tmp_path / "one", package, repository, base_image)
    first = ensure_image(spec, tar, builder=builder, lookup=lookup)
    assert first.built and builder.builds == 1
    assert manifest_digest(repository, spec.tag, wire=Wire(deadline=10), token=None) == first.digest
    assert first.ref == f"{repository}@{first.digest}"
    assert (
        builder.engine.build_local(spec, tar) is False
    )  # the engine's storage holds the tag: no second build

    again, again_tar = plan(tmp_path / "two", package, repository, base_image)  # another folder, same code
    second = ensure_image(again, again_tar, builder=builder, lookup=lookup)
    assert (second.built, second.ref, builder.builds) == (False, first.ref, 1)

    task = package / "task.py"
    task.write_bytes(task.read_bytes() + b"\n")
    changed, changed_tar = plan(tmp_path / "three", package, repository, base_image)
    third = ensure_image(changed, changed_tar, builder=builder, lookup=lookup)
    assert third.built and builder.builds == 2 and third.digest != first.digest


def test_a_daemon_that_never_answers_does_not_hang_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlsubmit.images import engines

    monkeypatch.setattr(engines, "PROBE_SECONDS", 0.5)
    env = fake_cli(tmp_path / "bin", "docker", f"echo $$ > {tmp_path / 'pid'}; exec sleep 60")
    started = time.monotonic()
    with pytest.raises(BuilderUnavailableError, match=r"docker does not answer: no answer within 0.5 s"):
        answering("docker", output=print, env=env)
    assert time.monotonic() - started < 10
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended with the probe, not left behind
