"""The training image as data (docs/containers.md): what to build, who builds it, and whether to build at all.
The tag is the digest of the build context, so a registry that holds the tag holds the image; a job never runs
the tag but ``NAME@sha256:<manifest digest>``, which no later push can change."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mlsubmit.errors import UsageError
from mlsubmit.job.imageref import check_repository

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ImageSpec:
    """What to build: the Dockerfile, the digest of the context that holds it, and where the image goes."""

    dockerfile: str
    context_digest: str  # sha256 hex of the reproducible context tar (uncompressed stream)
    repository: str  # REGISTRY/PATH/NAME, no tag
    base: str
    base_reason: str  # the table row (page and date), --base-image or --framework
    module: str
    platform: str = "linux/amd64"  # Vertex AI and most clusters run amd64; a laptop may not be one

    @property
    def tag(self) -> str:
        """The content tag: ``ctx-`` and the context digest (a valid tag, and a valid Cloud Build tag)."""
        return "ctx-" + self.context_digest

    @property
    def tagged(self) -> str:
        """``REPOSITORY:TAG``: what a builder builds and pushes."""
        return f"{self.repository}:{self.tag}"


@dataclass(frozen=True)
class EnsuredImage:
    """The image a job runs: ``ref`` is ``REPOSITORY@sha256:...``; ``built`` says whether this run built it."""

    ref: str
    built: bool


class Builder(Protocol):
    """Builds ``spec.tagged`` from the context tar, pushes it, and returns its manifest digest."""

    name: str

    def build(self, spec: ImageSpec, context_tar: Path) -> str: ...


def ensure_image(
    spec: ImageSpec, context_tar: Path, *, builder: Builder, lookup: Callable[[str, str], str | None]
) -> EnsuredImage:
    """The image of ``spec`` pinned by digest: found in the registry under its content tag (no build), or
    built and pushed by ``builder`` (exactly one build). ``lookup(repository, tag)`` asks the registry."""
    found = lookup(spec.repository, spec.tag)
    digest = found if found is not None else builder.build(spec, context_tar)
    if not _DIGEST.fullmatch(digest):  # it comes from a registry or a builder
        raise UsageError(f"{spec.repository}: the manifest digest {digest[:80]!r} is not a sha256 digest")
    return EnsuredImage(f"{spec.repository}@{digest}", built=found is None)


def default_repository(region: str, project: str, package_name: str) -> str:
    """``REGION-docker.pkg.dev/PROJECT/mlsubmit/<package name>`` (Container Registry's ``gcr.io`` stopped taking
    writes on 2025-03-18); a domain-scoped project ``example.com:p`` is ``example.com/p`` there."""
    name = re.sub(r"[^a-z0-9]+", "-", package_name.lower()).strip("-") or "trainer"
    return check_repository(
        f"{region}-docker.pkg.dev/{project.replace(':', '/')}/mlsubmit/{name}", "the default image name"
    )
