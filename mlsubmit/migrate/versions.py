"""What the checkup knows about a job, as mlsubmit sends it: its image's versions (a prebuilt executor image's
framework, version and Python, else the legacy ``runtimeVersion`` / ``pythonVersion``; a custom container's are not
known) and what TF_CONFIG and the arguments will say (the primary is ``chief`` on Vertex AI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.job.vocab import MASTER, ROLE_BY_KEY, as_dict, primary_task_name, replica_counts
from mlsubmit.migrate.findings import ImageVersions, JobFacts
from mlsubmit.migrate.requirements import TF_IMAGE_MODULES

# PyPI names of the prebuilt images' frameworks (vertex_images.FRAMEWORKS spells them as Vertex AI does)
_PYPI = {"pytorch": "torch"}  # the others' names are their PyPI names


def _framework(source: str, framework: str, version: str, python: str | None) -> ImageVersions:
    pypi = _PYPI.get(framework, framework)
    if pypi == "tensorflow":
        return ImageVersions(source, python, version or None)
    return ImageVersions(source, python, None, {pypi: version} if version else {})


def image_versions(
    job_body: Mapping[str, Any], vertex_body: Mapping[str, Any] | None = None
) -> ImageVersions:
    """The versions of the image the job runs in, as far as mlsubmit knows them."""
    ti: Mapping[str, Any] = job_body.get("trainingInput") or {}
    if image := as_dict(ti.get("masterConfig")).get("imageUri"):
        return ImageVersions(source=f"custom container {image}")
    body = vertex_body or {}
    pools = (body.get("jobSpec") or body.get("trialJobSpec") or {}).get("workerPoolSpecs") or []
    for uri in [str(p["pythonPackageSpec"]["executorImageUri"]) for p in pools if "pythonPackageSpec" in p]:
        from mlsubmit.targets.vertex_images import BY_NAME, TRAINING_REPO  # the table: only when it is asked

        m = TRAINING_REPO.fullmatch(uri)
        image = BY_NAME.get(m.group(2)) if m else None
        if image is None:
            return ImageVersions(source=f"executor image {uri}")
        return _framework(f"prebuilt image {image.name}", image.framework, image.version, image.python)
    vertex: Mapping[str, Any] = job_body.get("vertex") or {}
    if vertex.get("executorImageUri"):
        return ImageVersions(source=f"executor image {vertex['executorImageUri']}")
    python = str(ti.get("pythonVersion") or "") or None
    if vertex.get("framework"):
        framework, version = str(vertex["framework"]), str(vertex.get("frameworkVersion") or "")
        return _framework(f"framework {framework} {version}".strip(), framework, version, python)
    runtime = str(ti.get("runtimeVersion") or "") or None
    if runtime and python is None:
        from mlsubmit.targets.vertex_images import PREBUILT_IMAGES

        pythons = {i.python for i in PREBUILT_IMAGES if i.framework == "tensorflow" and i.version == runtime}
        python = max(pythons, key=lambda p: tuple(int(x) for x in p.split(".")), default=None)
    return ImageVersions(f"runtimeVersion {runtime}" if runtime else "no runtime", python, runtime)


def job_facts(
    job_body: Mapping[str, Any], target: str, vertex_body: Mapping[str, Any] | None = None
) -> JobFacts:
    """What the job tells the trainer on ``target`` ("vertex" or "ml")."""
    ti: Mapping[str, Any] = job_body.get("trainingInput") or {}
    counts = replica_counts(ti)
    primary = "chief" if target == "vertex" else primary_task_name(ti)
    roles = frozenset(primary if key == MASTER.key else ROLE_BY_KEY[key].task for key in counts)
    container = bool(as_dict(ti.get("masterConfig")).get("imageUri"))
    tag, hp = None, ti.get("hyperparameters")
    if hp:  # the Vertex translation (targets.vertex and its tables): only for a tuning job
        from mlsubmit.targets.hptuning import DEFAULT_METRIC_TAG

        tag = str(hp.get("hyperparameterMetricTag") or DEFAULT_METRIC_TAG)
    versions = image_versions(job_body, vertex_body)
    jobdir = bool(ti.get("jobDir"))
    return JobFacts(target, primary, sum(counts.values()) > 1, jobdir, container, tag, versions, roles)


TF_PUBLIC_IMAGE = "tensorflow/tensorflow:"


def on_built_image(facts: JobFacts, base: str, python: str | None = None) -> JobFacts:
    """``facts`` for the job run in an image built on ``base`` (only TensorFlow's public image is known)."""
    tensorflow, contents = facts.versions.tensorflow, None
    if base.startswith(TF_PUBLIC_IMAGE):
        contents = TF_IMAGE_MODULES
        tag = base.removeprefix(TF_PUBLIC_IMAGE).split("-")[0]
        tensorflow = ".".join(tag.split(".")[:2]) or tensorflow
    python = python or facts.versions.python
    versions = facts.versions._replace(python=python, source=base, tensorflow=tensorflow, modules=contents)
    return facts._replace(versions=versions)
