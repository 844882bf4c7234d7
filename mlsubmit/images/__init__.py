"""The training image: the one planner (:mod:`.planner`: base, GPU from the pools, repository per region),
generated Dockerfile, reproducible context, content tag, the builders behind one small Protocol, and
:mod:`.ensure` (the registry asked, then a local engine or Cloud Build from :mod:`mlsubmit.services`).
docs/containers.md.

Entry points: :func:`~.planner.plan_job_image`, :func:`~.ensure.ensure_job_image`, :func:`~.context.plan_image`
(spec + context tar), :func:`~.image.ensure_image` (reuse or build once); builders: :mod:`.engines` (docker,
podman, buildah).
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
