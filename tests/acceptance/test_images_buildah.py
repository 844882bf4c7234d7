"""With the real buildah and a registry on 127.0.0.1, the content tag means one build per change
(docs/containers.md); skipped where the tools are absent (tests/fakes/containers.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlsubmit.images import ImageSpec, ensure_image
from mlsubmit.services.registry import manifest_digest, registry_lookup
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.wire import Wire
from tests.fakes.containers import Storage, plan_package_image

TRAINER = Path(__file__).resolve().parents[2] / "examples" / "trainer_basic" / "trainer"


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

    spec, tar = plan_package_image(tmp_path / "one", package, repository, base_image)
    first = ensure_image(spec, tar, builder=builder, lookup=lookup)
    assert first.built and builder.builds == 1
    pushed = manifest_digest(repository, spec.tag, wire=Wire(deadline=10), token=None)
    assert first.ref == f"{repository}@{pushed}"  # pinned by the digest the registry holds
    assert (
        builder.engine.build_local(spec, tar) is False
    )  # the engine's storage holds the tag: no second build

    again, again_tar = plan_package_image(
        tmp_path / "two", package, repository, base_image
    )  # another folder, same code
    second = ensure_image(again, again_tar, builder=builder, lookup=lookup)
    assert (second.built, second.ref, builder.builds) == (False, first.ref, 1)

    task = package / "task.py"
    task.write_bytes(task.read_bytes() + b"\n")
    changed, changed_tar = plan_package_image(tmp_path / "three", package, repository, base_image)
    third = ensure_image(changed, changed_tar, builder=builder, lookup=lookup)
    assert third.built and builder.builds == 2 and third.ref != first.ref
