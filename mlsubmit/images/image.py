"""The training image as data: what to build (:class:`ImageSpec`), who builds it (:class:`Builder`), and the
one rule that decides whether to build at all (:func:`ensure_image`). docs/containers.md.

The image's tag is the digest of its build context, so the same code always has the same tag: a registry that
already holds the tag already holds the image, and nothing is built or uploaded. A job never runs a tag,
though: it pins ``NAME@sha256:<manifest digest>``, which no later push can change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mlsubmit.errors import UsageError
from mlsubmit.job.imageref import check_repository

TAG_PREFIX = "ctx-"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ImageSpec:
    """What to build: the Dockerfile, the digest of the context that holds it, and where the image goes."""

    dockerfile: str  # the generated Dockerfile text (also inside the context)
    context_digest: str  # sha256 hex of the reproducible context tar (uncompressed stream)
    repository: str  # REGISTRY/PATH/NAME, no tag
    base: str  # the image built on
    base_reason: str  # why that base: the table row (page and date), --base-image or --framework
    module: str  # the entrypoint runs ``python3 -m MODULE``
    platform: str = "linux/amd64"  # Vertex AI and most clusters run amd64; a laptop may not be one

    @property
    def tag(self) -> str:
        """The content tag: ``ctx-`` and the context digest (a valid tag, and a valid Cloud Build tag)."""
        return TAG_PREFIX + self.context_digest

    @property
    def tagged(self) -> str:
        """``REPOSITORY:TAG``: what a builder builds and pushes."""
        return f"{self.repository}:{self.tag}"


@dataclass(frozen=True)
class EnsuredImage:
    """The image a job runs: ``ref`` is ``REPOSITORY@sha256:...``; ``built`` says whether this run built it."""

    ref: str
    digest: str
    built: bool


class Builder(Protocol):
    """Builds ``spec.tagged`` from the context tar (a .tar.gz), pushes it, and returns its manifest digest.

    Implementations: the local engines in :mod:`mlsubmit.images.engines` and Cloud Build (services).
    """

    name: str

    def build(self, spec: ImageSpec, context_tar: Path) -> str: ...


Lookup = Callable[[str, str], "str | None"]


def pinned(repository: str, digest: str) -> str:
    """``REPOSITORY@sha256:...``, after checking the digest's form (it comes from a registry or a builder)."""
    if not _DIGEST.fullmatch(digest):
        raise UsageError(f"{repository}: the manifest digest {digest[:80]!r} is not a sha256 digest")
    return f"{repository}@{digest}"


def ensure_image(spec: ImageSpec, context_tar: Path, *, builder: Builder, lookup: Lookup) -> EnsuredImage:
    """The image of ``spec`` pinned by digest: found in the registry under its content tag (no build), or
    built and pushed by ``builder`` (exactly one build). ``lookup(repository, tag)`` asks the registry."""
    found = lookup(spec.repository, spec.tag)
    if found is not None:
        return EnsuredImage(pinned(spec.repository, found), found, built=False)
    digest = builder.build(spec, context_tar)
    return EnsuredImage(pinned(spec.repository, digest), digest, built=True)


def default_repository(region: str, project: str, package_name: str) -> str:
    """``REGION-docker.pkg.dev/PROJECT/mlsubmit/<package name>`` (Artifact Registry; Container Registry's
    ``gcr.io`` stopped taking writes on 2025-03-18). A domain-scoped project ``example.com:p`` is
    ``example.com/p`` in Artifact Registry paths."""
    name = re.sub(r"[^a-z0-9]+", "-", package_name.lower()).strip("-") or "trainer"
    return check_repository(
        f"{region}-docker.pkg.dev/{project.replace(':', '/')}/mlsubmit/{name}", "the default image name"
    )


def is_content_digest(value: str) -> bool:
    """Whether ``value`` is a sha256 hex digest (a context digest)."""
    return _HEX64.fullmatch(value) is not None
