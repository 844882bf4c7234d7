"""Which public image a training image is built on (docs/containers.md): a dated table.

The base: ``--base-image``; else, for a legacy ``runtimeVersion`` (and ``pythonVersion``), TensorFlow's public
image of that version; else the framework's public image for ``--framework`` (``--framework-version``); the GPU
variant when any pool has accelerators. Public images, because every Vertex prebuilt TensorFlow training image has
reached its end of availability (https://cloud.google.com/vertex-ai/docs/framework-support-policy), while
TensorFlow's own (https://hub.docker.com/r/tensorflow/tensorflow/tags, https://www.tensorflow.org/install/docker)
stay pullable. The other packages of a runtime version (https://cloud.google.com/ai-platform/training/docs/
runtime-version-list) could not be read on 2026-11-25, so none is pinned: a trainer lists them in its
``install_requires`` or passes them with ``--packages``. Every row says where it came from and how sure it is.

PEP 668 (https://peps.python.org/pep-0668/): Debian 12+ and Ubuntu 23.04+ system Pythons refuse ``pip install``
outside a virtual environment. The table's images need no override; for an image we do not know (``--base-image``)
the install alone runs with ``PIP_BREAK_SYSTEM_PACKAGES=1``, which older pips ignore.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mlsubmit.errors import UsageError

#: The day the table below was last written and checked.
TABLE_DATE = "2026-11-25"
TF_DOCKER_PAGE = "https://hub.docker.com/r/tensorflow/tensorflow/tags"
PYTORCH_DOCKER_PAGE = "https://hub.docker.com/r/pytorch/pytorch/tags"
PYTHON_DOCKER_PAGE = "https://hub.docker.com/_/python"
RUNTIME_LIST_PAGE = "https://cloud.google.com/ai-platform/training/docs/runtime-version-list"


@dataclass(frozen=True)
class Base:
    """The image a training image starts FROM, why, and how pip installs into it."""

    image: str
    reason: str
    #: ``None``: pip of this base installs system-wide as is; "env": an image we do not know, so the install
    #: runs with ``PIP_BREAK_SYSTEM_PACKAGES=1`` (see the module docstring).
    pip_break_system: str | None = None
    #: Requirements installed with the trainer (``--framework`` scikit-learn/xgboost on a plain Python image).
    requirements: tuple[str, ...] = ()


@dataclass(frozen=True)
class TfRow:
    """One legacy runtime: the TensorFlow image tag that reproduces its TensorFlow."""

    runtime: str  # AI Platform runtimeVersion, "2.11"
    tag: str  # tensorflow/tensorflow tag of the CPU image; the GPU image adds "-gpu" (before "-py3" if any)
    runtime_pythons: tuple[str, ...]  # the pythonVersion values mlsubmit accepts with it
    image_python: str  # the Python inside that image: 3.6 up to 2.1, 3.8 from 2.2 to 2.11


# Written 2026-11-25. Runtime → TensorFlow version: the runtime's own number (mlsubmit's legacy rules know 3.7
# as the pythonVersion of every runtime from 1.15 on). Tags: TensorFlow publishes X.Y.0 and X.Y.0-gpu; 1.15 and
# 2.1 carried "-py3" for their Python 3 images; 2.16's first release was 2.16.1. Docker Hub's tags page could
# not be read that day; every tag below (CPU and GPU) was instead seen in use in public Dockerfiles (GitHub code
# search, 2026-11-25). The Python inside each image is the image's own, not the runtime's 3.7 (no TensorFlow
# 2.x image ships 3.7); a trainer that needs 3.7 exactly passes --base-image.
TF_ROWS: tuple[TfRow, ...] = (
    TfRow("1.15", "1.15.5-py3", ("3.7",), "3.6"),
    TfRow("2.1", "2.1.0-py3", ("3.7",), "3.6"),
    *(TfRow(f"2.{m}", f"2.{m}.0", ("3.7",), "3.8") for m in range(2, 12)),
)
BY_RUNTIME = {row.runtime: row for row in TF_ROWS}
#: --framework tensorflow --framework-version X.Y → the tag (same evidence as TF_ROWS).
TF_FRAMEWORK_TAGS = {
    **{row.runtime: row.tag for row in TF_ROWS},
    **{f"2.{m}": f"2.{m}.0" for m in (12, 13, 14, 15, 17)},
    "2.16": "2.16.1",
}

# --framework without a runtime: the framework's own public image (PyTorch) or a Python image plus the
# framework from PyPI (scikit-learn, XGBoost). Versions are Vertex's prebuilt ones (targets/vertex_images.py),
# so a job that named a Vertex framework version gets that version.
PYTHON_IMAGE = "python:3.10-slim"  # Debian with Python under /usr/local: no PEP 668 marker
PYTORCH_TAGS = {  # version -> tag (seen in public Dockerfiles, 2026-11-25); CUDA images, which run on CPU too
    "2.1": "2.1.2-cuda12.1-cudnn8-runtime",
    "2.2": "2.2.2-cuda12.1-cudnn8-runtime",
    "2.3": "2.3.1-cuda12.1-cudnn8-runtime",
    "2.4": "2.4.1-cuda12.1-cudnn9-runtime",
}
DEFAULT_VERSIONS = {"tensorflow": "2.17", "pytorch": "2.4", "scikit-learn": "1.3", "xgboost": "1.7"}


def tf_image(tag: str, gpu: bool) -> str:
    """``tensorflow/tensorflow:TAG``, the GPU variant (``-gpu`` before a ``-py3`` suffix) when asked."""
    if gpu:
        tag = tag.replace("-py3", "-gpu-py3") if tag.endswith("-py3") else f"{tag}-gpu"
    return f"tensorflow/tensorflow:{tag}"


@dataclass(frozen=True)
class BaseWanted:
    """What decides the base: ``--base-image``, the job's runtime and Python versions, its framework, GPUs."""

    base_image: str | None = None
    runtime_version: str | None = None
    python_version: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    gpu: bool = False


def choose_base(wanted: BaseWanted) -> Base:
    """The base of the training image (module docstring); UsageError for a version the table lacks."""
    if wanted.base_image:
        return Base(wanted.base_image, "--base-image", pip_break_system="env")
    if wanted.framework:
        return _framework_base(wanted.framework, wanted.framework_version, wanted.gpu)
    if wanted.runtime_version:
        return _runtime_base(wanted.runtime_version, wanted.python_version, wanted.gpu)
    default = _framework_base("tensorflow", None, wanted.gpu)
    version = DEFAULT_VERSIONS["tensorflow"]
    return replace(
        default,
        reason=f"the job names no runtimeVersion or framework, so TensorFlow {version} (Keras 3: no tf.estimator, "
        f"no feature-column layers) on {default.reason.split(': ', 1)[1]}; pass --runtime-version or --base-image "
        "for another",
    )


def _runtime_base(runtime: str, python: str | None, gpu: bool) -> Base:
    row = BY_RUNTIME.get(runtime)
    if row is None:
        known = ", ".join(r.runtime for r in TF_ROWS)
        raise UsageError(
            f"runtimeVersion {runtime!r}: mlsubmit's image table knows {known} (written {TABLE_DATE}); "
            "pass --base-image IMAGE to build on an image of your choice"
        )
    if python and python not in row.runtime_pythons:
        raise UsageError(
            f"runtimeVersion {runtime} offered Python {', '.join(row.runtime_pythons)}, not {python}: "
            "fix pythonVersion, or pass --base-image IMAGE"
        )
    image = tf_image(row.tag, gpu)
    reason = (
        f"runtimeVersion {runtime}: TensorFlow's public image {image} with its own Python ({TF_DOCKER_PAGE}; "
        f"table of {TABLE_DATE}, tag seen in public Dockerfiles, the tags page not read); the runtime's other "
        f"packages are not pinned ({RUNTIME_LIST_PAGE} could not be read that day)"
    )
    return Base(image, reason)


def _framework_base(framework: str, version: str | None, gpu: bool) -> Base:
    wanted = version or DEFAULT_VERSIONS.get(framework)
    where = f"framework {framework} {wanted}"
    if framework == "tensorflow" and wanted in TF_FRAMEWORK_TAGS:
        image = tf_image(TF_FRAMEWORK_TAGS[wanted], gpu)
        return Base(image, f"{where}: TensorFlow's public image {image} ({TF_DOCKER_PAGE}, {TABLE_DATE})")
    if framework == "pytorch" and wanted in PYTORCH_TAGS:
        image = f"pytorch/pytorch:{PYTORCH_TAGS[wanted]}"
        return Base(image, f"{where}: PyTorch's public image {image} ({PYTORCH_DOCKER_PAGE}, {TABLE_DATE})")
    if framework in ("scikit-learn", "xgboost") and wanted:  # their PyPI names
        requirement = f"{framework}=={wanted}.*"
        return Base(
            PYTHON_IMAGE,
            f"{where}: {PYTHON_IMAGE} ({PYTHON_DOCKER_PAGE}) with {requirement} from PyPI ({TABLE_DATE})",
            requirements=(requirement,),
        )
    raise UsageError(
        f"--framework {framework} {version or ''}: mlsubmit's image table has no public image for it "
        f"(written {TABLE_DATE}); pass --base-image IMAGE"
    )
