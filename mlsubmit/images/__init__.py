"""The training image (docs/containers.md): the one planner (:mod:`.planner`), the Dockerfile and reproducible
context (:mod:`.context`), the builders behind one Protocol (:mod:`.engines`, Cloud Build), and :mod:`.ensure`."""

from __future__ import annotations

from mlsubmit.images.bases import BaseWanted
from mlsubmit.images.context import plan_image
from mlsubmit.images.image import ImageSpec, default_repository, ensure_image

__all__ = ["BaseWanted", "ImageSpec", "default_repository", "ensure_image", "plan_image"]
