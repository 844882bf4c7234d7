"""The generated Dockerfile, the reproducible context and its content tag, and ensure_image's one rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlsubmit.errors import PackagingError, UsageError
from mlsubmit.images import BaseWanted, ImageSpec, default_repository, ensure_image, plan_image
from mlsubmit.sdist.build import build_sdist

TRAINER = Path(__file__).resolve().parents[3] / "examples" / "trainer_basic" / "trainer"
REPO = "127.0.0.1:5000/mlsubmit/trainer"


def plan(workdir: Path, package: Path = TRAINER, **given: object) -> tuple[ImageSpec, Path]:
    sdist = build_sdist(package, workdir / "sdist")
    args: dict[str, object] = {"module": "trainer.task", "sdist": sdist, "packages": (), "repository": REPO}
    wanted: dict[str, object] = {"runtime_version": "2.11"}
    for key, value in given.items():
        (wanted if key in BaseWanted.__dataclass_fields__ else args)[key] = value
    return plan_image(base=BaseWanted(**wanted), workdir=workdir, **args)  # type: ignore[arg-type]


def test_dockerfile_installs_the_sdist_and_packages_and_runs_the_module(tmp_path: Path) -> None:
    extra = tmp_path / "extra-1.0-py3-none-any.whl"
    extra.write_bytes(b"not really a wheel")
    spec, _ = plan(tmp_path, packages=[extra])
    lines = spec.dockerfile.splitlines()
    assert lines[1] == "FROM tensorflow/tensorflow:2.11.0"
    assert "WORKDIR /usr/app" in lines
    assert "ENV HOME=/home PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1" in lines
    install = next(line for line in lines if "pip" in line)
    assert (
        '"/opt/mlsubmit/packages/trainer-0.0.0.tar.gz", "/opt/mlsubmit/packages/extra-1.0-py3-none-any.whl"'
        in install
    )
    assert "PIP_BREAK_SYSTEM_PACKAGES" not in install  # the TensorFlow image's pip installs as is
    assert lines[-1] == 'ENTRYPOINT ["python3", "-m", "trainer.task"]'
    assert spec.tagged == f"{REPO}:ctx-{spec.context_digest}"
    assert spec.base == "tensorflow/tensorflow:2.11.0" and "2.11" in spec.base_reason


def test_unknown_base_gets_pep668_override_only_for_the_install(tmp_path: Path) -> None:
    spec, _ = plan(tmp_path, base_image="debian:bookworm")
    install = next(line for line in spec.dockerfile.splitlines() if "pip" in line)
    assert install.startswith(
        'RUN ["env", "PIP_ROOT_USER_ACTION=ignore", "PIP_BREAK_SYSTEM_PACKAGES=1", "python3"'
    )
    assert "ENV PIP_BREAK_SYSTEM_PACKAGES" not in spec.dockerfile


def copy_trainer(into: Path) -> Path:
    shutil.copytree(TRAINER, into / "trainer")
    return into / "trainer"


def test_same_code_in_two_folders_gives_byte_identical_contexts(tmp_path: Path) -> None:
    first, first_tar = plan(tmp_path / "a", copy_trainer(tmp_path / "one"))
    second, second_tar = plan(tmp_path / "b", copy_trainer(tmp_path / "two"))
    assert first_tar.read_bytes() == second_tar.read_bytes()
    assert first.tag == second.tag


def test_one_changed_byte_changes_the_tag(tmp_path: Path) -> None:
    package = copy_trainer(tmp_path / "src")
    before, _ = plan(tmp_path / "a", package)
    task = package / "task.py"
    task.write_bytes(task.read_bytes() + b" ")
    after, _ = plan(tmp_path / "b", package)
    assert after.tag != before.tag


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"module": "trainer.task; rm -rf /"}, "not a Python module name"),
        ({"base_image": "python:3\nRUN curl evil"}, "not an image name"),
        ({"repository": "127.0.0.1:5000/mlsubmit/trainer:v1"}, "without a tag or digest"),
        ({"repository": "Not/Valid"}, "REGISTRY/PATH/NAME"),
    ],
)
def test_bad_names_are_refused_before_anything_is_written(
    tmp_path: Path, given: dict[str, object], words: str
) -> None:
    with pytest.raises(UsageError, match=words):
        plan(tmp_path, **given)
    assert not (tmp_path / "image-context.tar.gz").exists()


def test_two_packages_with_one_file_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    for folder in ("x", "y"):
        (tmp_path / folder / "dep.whl").write_bytes(folder.encode())
    with pytest.raises(PackagingError, match="same file name"):
        plan(tmp_path, packages=[tmp_path / "x" / "dep.whl", tmp_path / "y" / "dep.whl"])


class CountingBuilder:
    name = "counting"

    def __init__(self) -> None:
        self.built: list[str] = []

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        self.built.append(spec.tagged)
        return "sha256:" + "b" * 64


def test_ensure_image_reuses_a_tag_the_registry_holds_and_builds_once_otherwise(tmp_path: Path) -> None:
    spec, tar = plan(tmp_path)
    builder = CountingBuilder()
    found = ensure_image(spec, tar, builder=builder, lookup=lambda repo, tag: "sha256:" + "a" * 64)
    assert (found.built, builder.built) == (False, [])
    assert found.ref == f"{REPO}@sha256:{'a' * 64}"
    made = ensure_image(spec, tar, builder=builder, lookup=lambda repo, tag: None)
    assert made.built and builder.built == [spec.tagged]
    assert made.ref == f"{REPO}@sha256:{'b' * 64}"


def test_default_repository_is_artifact_registry() -> None:
    assert default_repository("us-central1", "my-proj", "My_Trainer") == (
        "us-central1-docker.pkg.dev/my-proj/mlsubmit/my-trainer"
    )
    assert default_repository("europe-west4", "example.com:p", "trainer") == (
        "europe-west4-docker.pkg.dev/example.com/p/mlsubmit/trainer"
    )
