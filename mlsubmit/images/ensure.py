"""Make a planned image real (docs/containers.md): ask the registry for its content tag, build only when it is
missing, with the builder chosen only then (``auto``: a local engine that answers, else Cloud Build), so an
unchanged re-submit costs one ``HEAD`` per registry and probes no engine. The job then runs
``REPOSITORY@sha256:...``.

Status lines go to the command's console (:func:`mlsubmit.console.current`); build log lines are marked
``[build]``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlsubmit import console
from mlsubmit.errors import UsageError
from mlsubmit.images.image import Builder, EnsuredImage, ImageSpec, ensure_image
from mlsubmit.images.planner import JobImage


class _ChosenWhenNeeded:
    """A Builder chosen only when the registry lacks the image (an unchanged re-submit probes no engine), once
    for every registry that lacks it."""

    name = "auto"

    def __init__(self, choose: Callable[[], Builder]) -> None:
        self.choose = functools.cache(choose)

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        return self.choose().build(spec, context_tar)


def job_builder(image: JobImage, settings: Any, *, cancel_on_interrupt: bool = False) -> Builder:
    """The builder of ``--builder`` for ``image`` with the command's ``settings`` (chosen on first build)."""
    from mlsubmit.images.engines import select_builder

    out = console.current()

    def emit(line: str) -> None:
        out.notify(f"[build] {line}")

    def cloud_build() -> Builder:
        from mlsubmit.services.cloudbuild_builder import BUILD_POLL, CloudBuilder
        from mlsubmit.services.retry import PollPolicy

        if not image.staging_prefix:
            raise UsageError(
                "no local engine answered, and Cloud Build takes the build context from Cloud Storage: pass "
                "--staging-bucket gs://BUCKET (or --job-dir gs://BUCKET/PATH)"
            )
        return CloudBuilder(
            settings.cloud_builds(),
            staging_bucket=image.staging_prefix,
            storage_retry=settings.storage_retry,
            cancel_on_interrupt=cancel_on_interrupt,
            poll=PollPolicy.from_env(settings.env, BUILD_POLL),
        )

    def choose() -> Builder:
        chosen: Builder = select_builder(
            image.builder, cloud_build=cloud_build, output=emit, log=out.notify, env=settings.env
        )
        return chosen

    return _ChosenWhenNeeded(choose)


def ensure_job_image(image: JobImage, settings: Any, *, cancel_on_interrupt: bool = False) -> dict[str, str]:
    """Every repository's image pinned by digest: ``{REPOSITORY:TAG: REPOSITORY@sha256:...}``, each found under
    its content tag or built once (one build per registry that lacks it)."""
    from mlsubmit.services.registry import registry_lookup

    # the token is made only when a Google registry is asked (never for a loopback one)
    lookup = registry_lookup(settings.wire(), lambda: str(settings.token()()), settings.retry)
    builder = job_builder(image, settings, cancel_on_interrupt=cancel_on_interrupt)
    pinned: dict[str, str] = {}
    for spec in image.specs:
        ensured: EnsuredImage = ensure_image(spec, image.context, builder=builder, lookup=lookup)
        how = "built and pushed" if ensured.built else "already in the registry, not rebuilt"
        console.current().notify(f"Image {ensured.ref} ({how})")
        pinned[spec.tagged] = ensured.ref
    return pinned
