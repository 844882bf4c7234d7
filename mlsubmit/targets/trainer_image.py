"""What each pool runs on Vertex AI, its trials and a TFJob, never dropping the trainer (docs/containers.md):
a built image, or an image without a package, runs as a container; a prebuilt image, runtime or framework with
a package runs as ``pythonPackageSpec``; another image with a package is refused (pass --build-image)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Vertex AI runs a package only in its prebuilt training images (aiplatform v1 PythonPackageSpec.
# executorImageUri: "You must use an image from this list", discovery revision 20261106, checked 2026-11-25).
#: A Vertex AI prebuilt training image, by tag or by digest (the three regional copies of vertex-ai/training).
PREBUILT = re.compile(
    r"(us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/[a-z0-9][a-z0-9._-]*(:[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?"
)
BUILD_HINT = (
    "pass --build-image (or vertex: {buildImage: true}) to build an image on it with the package installed"
)


def is_prebuilt(image: str) -> bool:
    """Whether ``image`` is one of Vertex AI's prebuilt training images (the only executor images it takes)."""
    return PREBUILT.fullmatch(image) is not None


def has_package(ti: Mapping[str, Any]) -> bool:
    """Whether the job runs a Python package (it has package URIs; a module alone may name one in an image)."""
    return bool(ti.get("packageUris"))


def builds_image(vertex: Mapping[str, Any]) -> bool:
    """Whether the job asks for its image to be built (``--build-image`` / ``vertex.buildImage``)."""
    return vertex.get("buildImage") is True


def image_problem(
    ti: Mapping[str, Any], vertex: Mapping[str, Any], container: str | None, override: str | None = None
) -> tuple[str, str] | None:
    """(JSON path, message) when the table above refuses the job, else None. ``container``: the master's image;
    ``override``: ``--executor-image-uri`` when it is not merged into ``vertex`` already."""
    package = has_package(ti)
    if builds_image(vertex) and not package:
        return (
            "$.vertex.buildImage",
            "buildImage builds the trainer package into an image, but this job has none: pass "
            "--package-path (or --packages), or drop --build-image to run the image as it is",
        )
    if builds_image(vertex):
        return None
    if container and package and not is_prebuilt(container):
        return (
            "$.trainingInput.masterConfig.imageUri",
            f"image {container} with a Python package: Vertex AI runs a package only in its prebuilt training "
            f"images (aiplatform v1 PythonPackageSpec.executorImageUri), so the package would not run; "
            f"{BUILD_HINT}, or drop the package flags to run the image as it is",
        )
    explicit = override or vertex.get("executorImageUri")
    if explicit and not container and not is_prebuilt(str(explicit)):
        return (
            "$.vertex.executorImageUri",
            f"executor image {explicit} is not a Vertex AI prebuilt training image, and the API takes only those "
            f"for a Python package (aiplatform v1 PythonPackageSpec.executorImageUri); {BUILD_HINT}, or choose "
            "a prebuilt one with --framework/--framework-version",
        )
    return None
