"""The image a job builds with ``--build-image``, planned offline (docs/containers.md): its base (``--base-image``,
the job's own image, else :mod:`mlsubmit.images.bases`) and where it goes (``--output-image-uri``, else
``REGION-docker.pkg.dev/PROJECT/mlsubmit/PACKAGE``), in each failover candidate's regional registry."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.images.bases import BaseWanted
from mlsubmit.images.context import plan_image
from mlsubmit.images.image import ImageSpec, default_repository
from mlsubmit.job.imageref import ImageOptions, check_repository
from mlsubmit.targets.failover import REGION_FIELD
from mlsubmit.targets.pools import Findings, as_dict, expand_pools
from mlsubmit.targets.trainer_image import builds_image, has_package, is_prebuilt


@dataclass(frozen=True)
class JobImage:
    """A job's planned image: spec, context tar, builder, Cloud Build's staging, each region's repository."""

    spec: ImageSpec
    context: Path
    builder: str = "auto"
    staging_prefix: str | None = None
    by_region: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def tagged_for(self, region: str) -> str:
        """``REPOSITORY:TAG`` a pool in ``region`` runs until the image is pinned by digest."""
        return f"{self.by_region.get(region, self.spec.repository)}:{self.spec.tag}"

    @property
    def specs(self) -> list[ImageSpec]:
        """One spec per distinct repository (the job's first): what is looked up, and built when missing."""
        repositories = dict.fromkeys([self.spec.repository, *self.by_region.values()])
        return [dataclasses.replace(self.spec, repository=r) for r in repositories]

    def view(self) -> dict[str, Any]:
        """What ``--dry-run`` shows of the image, with the Cloud Build request when it may be used."""
        spec = self.spec
        view: dict[str, Any] = {
            "image": spec.tagged,
            "contentTag": spec.tag,
            "base": spec.base,
            "baseReason": spec.base_reason,
            "platform": spec.platform,
            "dockerfile": spec.dockerfile,
            "builder": self.builder,
            "runs": f"{spec.repository}@sha256:<the manifest digest the registry answers>",
        }
        if len(self.specs) > 1:
            view["images"] = [s.tagged for s in self.specs]
        if self.builder in ("auto", "cloud-build") and self.staging_prefix:
            from mlsubmit.proc.processes import temporary_directory
            from mlsubmit.services.cloudbuild import plan_build

            with temporary_directory("mlsubmit-build-") as tmp:
                plan = plan_build(spec.tagged, self.context, self.staging_prefix, Path(tmp))
            view["cloudBuild"] = {"context": plan.staged.uri, "build": plan.body}
        return view


def wants_image(body: Mapping[str, Any], options: ImageOptions) -> bool:
    """Whether the job builds its image; image flags without ``--build-image`` are a UsageError."""
    builds = builds_image(as_dict(body.get("vertex")))
    if not builds and (options.output_image_uri or options.base_image):
        raise UsageError("--output-image-uri and --base-image go with --build-image (or vertex.buildImage)")
    return builds and has_package(as_dict(body.get("trainingInput")))


def base_of(body: Mapping[str, Any], options: ImageOptions) -> str | None:
    """The image to build on, when the job names one (module docstring); None: the images table decides."""
    if options.base_image:
        return options.base_image
    ti, vertex = as_dict(body.get("trainingInput")), as_dict(body.get("vertex"))
    master = as_dict(ti.get("masterConfig")).get("imageUri")
    if master:
        return str(master)
    executor = vertex.get("executorImageUri")
    return str(executor) if executor and not is_prebuilt(str(executor)) else None


def has_gpu(ti: Mapping[str, Any]) -> bool:
    """Whether any pool of the job has GPUs (the pools' own reading of tiers, machine types, accelerators)."""
    return any(pool.gpus for pool in expand_pools(ti, Findings()))


def wanted_base(body: Mapping[str, Any], base_image: str | None = None, *, gpu: bool = False) -> BaseWanted:
    """What the base is chosen from, for any job body; ``gpu``: the GPU variant (a local run's replicas: never)."""
    ti, vertex = as_dict(body.get("trainingInput")), as_dict(body.get("vertex"))
    return BaseWanted(
        base_image=base_image,
        runtime_version=_text(ti.get("runtimeVersion")),
        python_version=_text(ti.get("pythonVersion")),
        framework=_text(vertex.get("framework")),
        framework_version=_text(vertex.get("frameworkVersion")),
        gpu=gpu,
    )


def repositories(
    options: ImageOptions, regions: Sequence[str], project: Callable[[], str | None], package: str
) -> dict[str, str]:
    """The image's repository for each region (module docstring); a UsageError when no name can be made."""
    out: dict[str, str] = {}
    for region in dict.fromkeys(regions):
        given = options.output_image_uri
        if given:
            out[region] = check_repository(given.replace(REGION_FIELD, region))
            continue
        name = project()
        if not name or not region:
            raise UsageError(
                "--build-image needs --output-image-uri REGISTRY/PATH/NAME, or a project and region for the "
                "default REGION-docker.pkg.dev/PROJECT/mlsubmit/NAME"
            )
        out[region] = default_repository(region, name, package)
    return out


def plan_job_image(
    body: Mapping[str, Any],
    options: ImageOptions,
    *,
    sdist: Path | None,
    packages: Sequence[Path],
    remote_packages: Sequence[str],
    regions: Sequence[str],
    project: Callable[[], str | None],
    candidates: Sequence[Mapping[str, Any]] = (),
    staging_prefix: str | None,
    workdir: Path,
) -> JobImage:
    """The image of a validated job with ``vertex.buildImage`` (no network), its repository in each of
    ``regions`` (the job's first). A GPU in any of the ``candidates``' bodies gives the GPU base (it runs on CPUs)."""
    if remote_packages:
        raise UsageError(
            f"--build-image installs the packages into the image, but {remote_packages[0]} is in Cloud Storage: "
            "pass the package file itself (or --package-path)"
        )
    if options.builder == "cloud-build" and not staging_prefix:
        raise UsageError(
            "--builder cloud-build takes the build context from Cloud Storage: pass --staging-bucket gs://BUCKET "
            "(or --job-dir gs://BUCKET/PATH), or build locally with --builder docker, podman or buildah"
        )
    files = [*packages, *([sdist] if sdist else [])]
    package = files[-1].name.split("-", 1)[0] if files else "trainer"  # trainer-0.1.tar.gz -> trainer
    by_region = repositories(options, regions, project, package)
    spec, context = plan_image(
        module=str(as_dict(body.get("trainingInput")).get("pythonModule") or ""),
        sdist=sdist,
        packages=list(packages),
        base=wanted_base(
            body,
            base_of(body, options),
            gpu=any(has_gpu(as_dict(b.get("trainingInput"))) for b in [body, *candidates]),
        ),
        repository=by_region[regions[0]],
        workdir=workdir,
    )
    return JobImage(spec, context, options.builder, staging_prefix, by_region)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
