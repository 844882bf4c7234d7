"""The image a migrated job needs when Vertex AI no longer serves its runtime's prebuilt image (as
:func:`mlsubmit.targets.vertex_images.choose_executor_image` answers for ``training --target vertex``): the one
``--build-image`` builds (docs/containers.md), and the job rewritten to run it as a custom container."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from mlsubmit.errors import UsageError
from mlsubmit.images import ImageSpec
from mlsubmit.images.bases import BY_RUNTIME
from mlsubmit.images.planner import has_gpu, plan_job_image
from mlsubmit.job.imageref import ImageOptions
from mlsubmit.job.vocab import primary_task_name
from mlsubmit.services.staging import StagedFile
from mlsubmit.targets.pools import as_dict
from mlsubmit.targets.vertex_images import choose_executor_image, today

# Package-job fields a container job does not take (the image holds the packages and runs the module).
PACKAGE_FIELDS = ("runtimeVersion", "pythonVersion", "packageUris", "pythonModule")


class BuiltImage(NamedTuple):
    """The image to build (the job runs ``spec.tagged``), its context and the Python inside it."""

    spec: ImageSpec
    context: Path
    python: str | None


def package_on_image(job_body: Mapping[str, Any]) -> str | None:
    """The ``masterConfig.imageUri`` a legacy job runs its packages on, else None."""
    ti = as_dict(job_body.get("trainingInput"))
    image = as_dict(ti.get("masterConfig")).get("imageUri")
    return str(image) if image and ti.get("packageUris") else None


def needs_built_image(job_body: Mapping[str, Any], executor_image_uri: str | None = None) -> bool:
    """Whether the job runs on Vertex AI only in an image built from its packages."""
    ti = as_dict(job_body.get("trainingInput"))
    if package_on_image(job_body):
        return True
    if as_dict(ti.get("masterConfig")).get("imageUri") or not ti.get("packageUris"):
        return False
    if (vertex := as_dict(job_body.get("vertex"))).get("buildImage") is True:
        return True
    choice = choose_executor_image(ti, vertex, has_gpu(ti), today(), executor_image_uri)
    ended = ("$.trainingInput.runtimeVersion", "$.trainingInput.pythonVersion")
    return choice.problem is not None and choice.problem[0] in ended


def plan_built_image(
    job_body: Mapping[str, Any],
    staged: Sequence[StagedFile],
    *,
    project: str | None,
    workdir: Path,
    options: ImageOptions,
) -> BuiltImage:
    """The image ``--build-image`` would build for this job, its context written into ``workdir``."""
    ti = as_dict(job_body.get("trainingInput"))
    local = [s.local if isinstance(s.local, Path) else s.local.write(workdir) for s in staged if s.local]
    if len(local) != len(staged):
        raise UsageError(
            "the job runs on Vertex AI only in an image built with its packages (its runtime's image has ended, "
            "or it runs them on an image of its own), and a gs:// package cannot be built in: pass them as local "
            "files (--packages FILE or --package-path DIR)"
        )
    region = str(ti.get("region") or "")
    planned = plan_job_image(
        job_body,
        options,
        sdist=None,
        packages=local,
        remote_packages=(),
        regions=[region],
        project=lambda: project,
        staging_prefix=None,
        workdir=workdir,
    )
    if package_on_image(job_body) and not options.base_image:
        why = "the job's masterConfig.imageUri, with the packages installed on it"
        return BuiltImage(replace(planned.spec, base_reason=why), planned.context, None)
    row = BY_RUNTIME.get(str(ti.get("runtimeVersion") or ""))
    return BuiltImage(planned.spec, planned.context, row.image_python if row else None)


def with_built_image(job_body: Mapping[str, Any], image: BuiltImage) -> dict[str, Any]:
    """The job as a custom container job running ``image`` (its module is the image's entrypoint)."""
    body = copy.deepcopy(dict(job_body))
    ti = body["trainingInput"]
    chief = primary_task_name(ti) == "chief"  # the legacy runtime's; a container says master unless told
    for key in PACKAGE_FIELDS:
        ti.pop(key, None)
    ti["masterConfig"] = {**as_dict(ti.get("masterConfig")), "imageUri": image.spec.tagged}
    if chief:
        ti["useChiefInTfConfig"] = True
    vertex = body.get("vertex")
    if isinstance(vertex, dict) and vertex.pop("buildImage", None) is not None and not vertex:
        body.pop("vertex")  # --build-image asked for this very image: it is built, the job now names it
    return body
