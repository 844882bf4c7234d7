"""Local engines: a missing or silent engine is one line with the way out; a failed build shows its last lines.
The real buildah and registry are in tests/acceptance/test_images_buildah.py."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from mlsubmit.errors import BuilderUnavailableError, ImageBuildError
from mlsubmit.images.engines import LocalEngine, answering, engine, select_builder
from tests.fakes.containers import plan_package_image

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


def test_a_failed_build_shows_its_last_lines_streamed(tmp_path: Path) -> None:
    env = fake_cli(
        tmp_path / "bin", "podman", 'echo "STEP 1/7: FROM base"; echo "pip: no such package" >&2; exit 3'
    )
    lines: list[str] = []
    podman = engine("podman", output=lines.append, env=env)
    spec, tar = plan_package_image(tmp_path, TRAINER, "127.0.0.1:5000/x/trainer", "python:3.11-slim")
    with pytest.raises(ImageBuildError) as caught:
        podman.build(spec, tar)
    assert lines == ["STEP 1/7: FROM base", "pip: no such package"]
    assert str(caught.value).endswith(
        "failed (exit 3); its last lines:\nSTEP 1/7: FROM base\npip: no such package"
    )


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


PODMAN_REFUSED = """\
case "$1" in
  version) echo "podman version 5.4.2";;
  run) echo 'Error: crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted: OCI permission denied' >&2; exit 126;;
esac
"""


def test_podman_that_cannot_start_containers_is_passed_over_for_buildah(tmp_path: Path) -> None:
    """issue 27, item 7: `podman version` answers where its runtime is refused; the probe runs nothing but an
    empty root file system, and auto takes the next engine."""
    env = fake_cli(tmp_path / "bin", "podman", PODMAN_REFUSED)
    fake_cli(tmp_path / "bin", "buildah", 'echo "buildah version 1.39"')
    env["PATH"] = str(tmp_path / "bin")  # no docker
    with pytest.raises(BuilderUnavailableError) as caught:
        answering("podman", output=print, env=env)
    assert str(caught.value) == (
        "--builder podman: podman does not answer: it cannot start containers here (Error: crun: setrlimit "
        "`RLIMIT_NOFILE`: Operation not permitted: OCI permission denied); try --builder buildah, or pass "
        "--builder cloud-build to build on Google Cloud instead"
    )
    told: list[str] = []
    chosen = select_builder("auto", cloud_build=object, output=print, log=told.append, env=env)  # type: ignore[arg-type]
    assert isinstance(chosen, LocalEngine) and chosen.name == "buildah"
    assert told == [
        "Building the image with buildah (--builder auto: the first local engine that answers; docker, podman "
        "did not)."
    ]


def test_podman_whose_runtime_reaches_exec_answers(tmp_path: Path) -> None:
    script = 'case "$1" in run) echo "executable file not found" >&2; exit 127;; *) echo ok;; esac'
    env = fake_cli(tmp_path / "bin", "podman", script)
    assert answering("podman", output=print, env=env).name == "podman"
