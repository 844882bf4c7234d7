"""The training image: generated Dockerfile, reproducible context, content tag, and the builders behind one
small Protocol (docs/containers.md). Local bytes and local engines only; the registry check and Cloud Build
live in :mod:`mlsubmit.services`.

Entry points: :func:`~.context.plan_image` (spec + context tar), :func:`~.spec.ensure_image` (reuse or build
once), :func:`~.spec.default_repository`; builders: :mod:`.engines` (docker, podman, buildah).
"""

from __future__ import annotations

from mlsubmit.images.bases import BaseWanted
from mlsubmit.images.context import plan_image
from mlsubmit.images.image import (
    Builder,
    EnsuredImage,
    ImageSpec,
    default_repository,
    ensure_image,
)

__all__ = [
    "BaseWanted",
    "Builder",
    "EnsuredImage",
    "ImageSpec",
    "default_repository",
    "ensure_image",
    "plan_image",
]
