"""Vertex AI prebuilt training containers: which image a Python package job runs, and whether it is still served
(past its end of availability it is refused: https://cloud.google.com/vertex-ai/docs/framework-support-policy).
A ``runtimeVersion`` picks its own TensorFlow version only. The clock is injectable (``today``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

SUPPORTED_FRAMEWORKS_URL = "https://cloud.google.com/vertex-ai/docs/supported-frameworks-list"
TRAINING_REPO = re.compile(r"(us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/([^:/]+):latest")


@dataclass(frozen=True)
class PrebuiltImage:
    """One row of Vertex's "Supported frameworks for custom training" table (CPU or GPU variant)."""

    framework: str  # one of job.vocab.FRAMEWORKS
    version: str  # framework minor version, "2.17"
    python: str  # "3.10"
    gpu: bool
    name: str  # image name in REPO/vertex-ai/training/NAME:latest
    end_of_availability: date | None  # None: not confirmed when the table was last checked

    def served_on(self, today: date) -> bool:
        """Still usable on ``today`` (an unconfirmed date counts as served, with a warning)."""
        return self.end_of_availability is None or today <= self.end_of_availability


def _images(framework: str, prefix: str, version: str, python: str, eoa: date | None) -> list[PrebuiltImage]:
    """The CPU and GPU images of a version, ``{prefix}-cpu.2-17.py310`` (no suffix before Python 3.10)."""
    name = f"{prefix}-{{}}.{version.replace('.', '-')}{'.py310' if python == '3.10' else ''}"
    return [
        PrebuiltImage(framework, version, python, k == "gpu", name.format(k), eoa) for k in ("cpu", "gpu")
    ]


def _tf(version: str, python: str, eoa: date | None) -> list[PrebuiltImage]:
    return _images("tensorflow", "tf", version, python, eoa)


# Written 2026-11-24 from Vertex's "Supported frameworks list" (SUPPORTED_FRAMEWORKS_URL, custom training
# section) and "Framework support policy". Exact dates: TensorFlow 2.12 (2025-06-30), 2.13 (2025-07-05) and
# 2.14 (2025-09-26) as listed there. Month only on the page we could read: 2.11 ended November 2024, 2.17
# (the newest TensorFlow training image) July 2026; the last day of that month is used. 2.15 and 2.16 ended
# between 2.14 and 2.17: 2.17's date is used as their upper bound. Versions before 2.11 ended before it did.
# PyTorch, scikit-learn and XGBoost rows: image names as the page listed them when last read in full (not
# re-confirmed on 2026-11-24); their end-of-availability dates could not be confirmed that day, so they are None
# (accepted, with a warning to check the page).
_PAST_2_11 = date(2024, 11, 30)
PREBUILT_IMAGES: tuple[PrebuiltImage, ...] = (
    *_tf("1.15", "3.7", _PAST_2_11),
    *[img for minor in range(1, 8) for img in _tf(f"2.{minor}", "3.7", _PAST_2_11)],
    *[img for minor in (8, 9, 11) for py in ("3.7", "3.10") for img in _tf(f"2.{minor}", py, _PAST_2_11)],
    *_tf("2.12", "3.10", date(2025, 6, 30)),
    *_tf("2.13", "3.10", date(2025, 7, 5)),
    *_tf("2.14", "3.10", date(2025, 9, 26)),
    *[img for minor in (15, 16, 17) for img in _tf(f"2.{minor}", "3.10", date(2026, 7, 31))],
    *[img for v in ("2.1", "2.2", "2.3", "2.4") for img in _images("pytorch", "pytorch", v, "3.10", None)],
    _images("scikit-learn", "sklearn", "1.3", "3.10", None)[0],  # CPU only
    _images("xgboost", "xgboost", "1.7", "3.10", None)[0],
)
BY_NAME: dict[str, PrebuiltImage] = {img.name: img for img in PREBUILT_IMAGES}


CLOCK: Callable[[], date] = date.today  # the one production clock; tests replace it (or pass ``on=``)


def today() -> date:
    """Today by :data:`CLOCK`: the day each image's end of availability is checked against."""
    return CLOCK()


def how_to_choose(on: date) -> str:
    """The images still served and the three ways to pick one (for refusal messages)."""
    served = [img for img in PREBUILT_IMAGES if img.served_on(on)]
    confirmed = sorted({f"{i.framework} {i.version}" for i in served if i.end_of_availability is not None})
    unknown = sorted({f"{i.framework} {i.version}" for i in served if i.end_of_availability is None})
    listed = ", ".join(confirmed) if confirmed else "none with a confirmed date"
    if unknown:
        listed += f"; end of availability not confirmed: {', '.join(unknown)}"
    return (
        f"prebuilt images still served on {on.isoformat()}: {listed} (see {SUPPORTED_FRAMEWORKS_URL}); "
        "choose one with --framework/--framework-version (or vertex.framework/frameworkVersion in the "
        "config) or --executor-image-uri (vertex.executorImageUri), or pass --build-image (vertex.buildImage) "
        "to build the trainer into an image of its own"
    )


@dataclass(frozen=True)
class ImageChoice:
    """The executor image for one pool, or why Vertex AI cannot run it (``problem`` with the JSON path it belongs
    to; ``uri`` is still set when the only problem is the image's end of availability)."""

    uri: str = ""
    problem: tuple[str, str] | None = None
    warning: str | None = None


def _dated(image: PrebuiltImage, region: str | None, on: date, path: str, what: str) -> ImageChoice:
    # every prebuilt image is in three Artifact Registry hosts: the nearest to the region
    host = "europe" if (region or "").startswith("europe-") else "us"
    host = "asia" if (region or "").startswith(("asia-", "australia-")) else host
    uri = f"{host}-docker.pkg.dev/vertex-ai/training/{image.name}:latest"
    ended = image.end_of_availability
    if ended is not None and not image.served_on(on):  # still named: a cluster (TFJob) may run it
        message = (
            f"{what} needs the prebuilt {image.framework} {image.version} training image (Python {image.python}), "
            f"which reached its end of availability on {ended.isoformat()}: Vertex AI no longer runs it; "
            f"{how_to_choose(on)}"
        )
        return ImageChoice(uri=uri, problem=(path, message))
    if ended is None:
        warning = (
            f"the end of availability of {image.name} could not be confirmed when mlsubmit's table was "
            f"checked (2026-11-24); see {SUPPORTED_FRAMEWORKS_URL}"
        )
        return ImageChoice(uri=uri, warning=warning)
    return ImageChoice(uri=uri)


def choose_executor_image(
    ti: Mapping[str, Any], vertex: Mapping[str, Any], gpu: bool, on: date, override: str | None = None
) -> ImageChoice:
    """The prebuilt image a Python package pool runs: an explicit URI, else the framework, else the runtime."""
    region = ti.get("region")
    if explicit := override or vertex.get("executorImageUri"):
        m = TRAINING_REPO.fullmatch(str(explicit))
        known = BY_NAME.get(m.group(2)) if m else None
        if known is None:
            return ImageChoice(uri=str(explicit))
        return _dated(known, region, on, "$.vertex.executorImageUri", "executorImageUri")
    python = str(ti.get("pythonVersion") or "")
    if framework := vertex.get("framework"):
        version = str(vertex.get("frameworkVersion") or "")
        at = "$.vertex.frameworkVersion" if version else "$.vertex.framework"
        rows = [i for i in PREBUILT_IMAGES if i.framework == framework and version in ("", i.version)]
        rows = [i for i in rows if python in ("", i.python)]
        if not rows:
            for_python = f" for Python {python}" if python else ""
            message = f"Vertex AI has no prebuilt {framework} {version or ''} training image{for_python}; {how_to_choose(on)}"
            return ImageChoice(problem=(at, message))
        if not version:  # the newest still-served version of that framework
            served = [i for i in rows if i.served_on(on)] or rows
            newest = max(served, key=lambda i: tuple(int(p) for p in i.version.split(".")))
            rows = [i for i in rows if i.version == newest.version]
        pick = [i for i in rows if i.gpu == gpu] or rows
        return _dated(pick[0], region, on, at, f"framework {framework} {pick[0].version}")
    runtime = str(ti.get("runtimeVersion") or "")
    rows = [i for i in PREBUILT_IMAGES if i.framework == "tensorflow" and i.version == runtime]
    if not rows:
        message = (
            f"runtimeVersion {runtime!r} has no Vertex AI prebuilt TensorFlow image; {how_to_choose(on)}"
        )
        return ImageChoice(problem=("$.trainingInput.runtimeVersion", message))
    pythons = {i.python for i in rows}
    if python and python not in pythons:
        message = (
            f"runtimeVersion {runtime} has no Vertex AI image for Python {python} (it has "
            f"{', '.join(sorted(pythons))}); remove pythonVersion or choose another image: {how_to_choose(on)}"
        )
        return ImageChoice(problem=("$.trainingInput.pythonVersion", message))
    want = python or max(pythons, key=lambda p: tuple(int(x) for x in p.split(".")))
    chosen = next(i for i in rows if i.python == want and i.gpu == gpu)
    return _dated(chosen, region, on, "$.trainingInput.runtimeVersion", f"runtimeVersion {runtime}")
