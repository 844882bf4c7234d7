"""Make a planned image real (docs/containers.md): ask each registry for its content tag and build only when it is
missing, choosing the builder only then, so an unchanged re-submit costs one ``HEAD`` per registry."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlsubmit import console
from mlsubmit.errors import UsageError
from mlsubmit.images.image import Builder, ImageSpec, ensure_image
from mlsubmit.images.planner import JobImage


class _ChosenWhenNeeded:
    """A Builder chosen on the first build (none when the registries hold the image), once for all of them."""

    name = "auto"

    def __init__(self, choose: Callable[[], Builder]) -> None:
        self.choose = functools.cache(choose)

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        return self.choose().build(spec, context_tar)


def ensure_job_image(image: JobImage, settings: Any, *, cancel_on_interrupt: bool = False) -> dict[str, str]:
    """Every repository's image pinned by digest (``{REPOSITORY:TAG: REPOSITORY@sha256:...}``)."""
    from mlsubmit.images.engines import select_builder
    from mlsubmit.services.registry import registry_lookup

    out = console.current()

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
        return select_builder(
            image.builder,
            cloud_build=cloud_build,
            output=lambda line: out.notify(f"[build] {line}"),
            log=out.notify,
            env=settings.env,
        )

    # the token is made only when a Google registry is asked (never for a loopback one)
    lookup = registry_lookup(settings.wire(), lambda: str(settings.token()()), settings.retry)
    builder = _ChosenWhenNeeded(choose)
    pinned: dict[str, str] = {}
    for spec in image.specs:
        ensured = ensure_image(spec, image.context, builder=builder, lookup=lookup)
        how = "built and pushed" if ensured.built else "already in the registry, not rebuilt"
        out.notify(f"Image {ensured.ref} ({how})")
        pinned[spec.tagged] = ensured.ref
    return pinned
