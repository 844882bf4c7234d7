"""The image step of a submit or an export: ``--build-image`` (docs/containers.md).

:func:`plan_job_image` turns a validated job whose ``vertex.buildImage`` is set into an image plan (Dockerfile,
content tag, image name, context), offline; :func:`dry_run_view` is what ``--dry-run`` shows of it, with the
Cloud Build request; :func:`ensure_job_image` asks the registry for the content tag and builds only when it is
missing, with the builder of ``--builder`` chosen only then (``auto``: a local engine that answers, else Cloud
Build), so an unchanged re-submit costs one ``HEAD``. The job then runs ``REPOSITORY@sha256:...``.

The base: ``--base-image``, else the job's own image (``masterConfig.imageUri`` / ``--master-image-uri``, or a
``--executor-image-uri`` that is not a Vertex AI prebuilt image: "run this package in this image"), else the
images table for the runtime or framework (:mod:`mlsubmit.images.bases`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import UsageError
from mlsubmit.job.imageref import ImageOptions
from mlsubmit.targets.pools import Findings, as_dict, expand_pools
from mlsubmit.targets.trainer_image import builds_image, has_package, is_prebuilt

if TYPE_CHECKING:  # the images package loads only when a job builds one
    from mlsubmit.images import EnsuredImage, ImageSpec

Notify = Callable[[str], None]


@dataclass(frozen=True)
class JobImage:
    """The planned image of a job: its spec (Dockerfile, content tag, name) and the context tar on disk."""

    spec: ImageSpec
    context: Path


def wants_image(body: Mapping[str, Any]) -> bool:
    """Whether the job asks for its image to be built (``vertex.buildImage`` with a package)."""
    return builds_image(as_dict(body.get("vertex"))) and has_package(as_dict(body.get("trainingInput")))


def check_options(body: Mapping[str, Any], options: ImageOptions) -> None:
    """The image flags go with ``--build-image``; say so rather than ignore them (exit 2)."""
    if not builds_image(as_dict(body.get("vertex"))) and (options.output_image_uri or options.base_image):
        raise UsageError("--output-image-uri and --base-image go with --build-image (or vertex.buildImage)")


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


def _package_name(files: Sequence[Path]) -> str:
    """The trainer's project name from its sdist file name (``trainer-0.1.tar.gz`` -> ``trainer``)."""
    return files[0].name.split("-", 1)[0] if files else "trainer"


def plan_job_image(
    body: Mapping[str, Any],
    options: ImageOptions,
    *,
    sdist: Path | None,
    packages: Sequence[Path],
    remote_packages: Sequence[str],
    project: str | None,
    workdir: Path,
) -> JobImage:
    """The image of a validated job with ``vertex.buildImage`` (no network): Dockerfile, tag, context."""
    from mlsubmit.images import BaseWanted, default_repository, plan_image  # only for a job that builds one

    ti, vertex = as_dict(body.get("trainingInput")), as_dict(body.get("vertex"))
    if remote_packages:
        raise UsageError(
            f"--build-image installs the packages into the image, but {remote_packages[0]} is in Cloud Storage: "
            "pass the package file itself (or --package-path)"
        )
    repository = options.output_image_uri
    if not repository:
        region = ti.get("region")
        if not project or not region:
            raise UsageError(
                "--build-image needs --output-image-uri REGISTRY/PATH/NAME, or a project and region for the "
                "default REGION-docker.pkg.dev/PROJECT/mlsubmit/NAME"
            )
        repository = default_repository(
            str(region), project, _package_name([*([sdist] if sdist else []), *packages])
        )
    gpu = any(pool.gpus for pool in expand_pools(ti, Findings()))
    spec, context = plan_image(
        module=str(ti.get("pythonModule") or ""),
        sdist=sdist,
        packages=list(packages),
        base=BaseWanted(
            base_image=base_of(body, options),
            runtime_version=_text(ti.get("runtimeVersion")),
            python_version=_text(ti.get("pythonVersion")),
            framework=_text(vertex.get("framework")),
            framework_version=_text(vertex.get("frameworkVersion")),
            gpu=gpu,
        ),
        repository=repository,
        workdir=workdir,
    )
    return JobImage(spec, context)


def dry_run_view(image: JobImage, staging_prefix: str | None, builder: str) -> dict[str, Any]:
    """What ``--dry-run`` shows of the image: base, Dockerfile, content tag, name, and the Cloud Build request
    (when the builder may be Cloud Build and there is a staging bucket for the context)."""
    view: dict[str, Any] = {
        "image": image.spec.tagged,
        "contentTag": image.spec.tag,
        "base": image.spec.base,
        "baseReason": image.spec.base_reason,
        "platform": image.spec.platform,
        "dockerfile": image.spec.dockerfile,
        "builder": builder,
        "runs": f"{image.spec.repository}@sha256:<the manifest digest the registry answers>",
    }
    if builder in ("auto", "cloud-build") and staging_prefix:
        from mlsubmit.proc.processes import temporary_directory
        from mlsubmit.services.cloudbuild import plan_build

        with temporary_directory("mlsubmit-build-") as tmp:
            plan = plan_build(image.spec.tagged, image.context, staging_prefix, Path(tmp))
        view["cloudBuild"] = {"context": plan.staged.uri, "build": plan.body}
    return view


class _ChosenWhenNeeded:
    """A Builder chosen only when the registry lacks the image: an unchanged re-submit probes no engine."""

    name = "auto"

    def __init__(self, choose: Callable[[], Any]) -> None:
        self.choose = choose

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        builder = self.choose()
        digest: str = builder.build(spec, context_tar)
        return digest


def ensure_job_image(
    image: JobImage,
    settings: Any,
    options: ImageOptions,
    *,
    staging_prefix: str | None,
    notify: Notify,
    emit: Notify,
    cancel_on_interrupt: bool,
) -> EnsuredImage:
    """The job's image pinned by digest: found under its content tag, or built once by ``--builder``."""
    from mlsubmit.follow.image_build import BUILD_POLL, CloudBuilder
    from mlsubmit.images.engines import select_builder
    from mlsubmit.services.registry import registry_lookup
    from mlsubmit.services.retry import PollPolicy

    def cloud_build() -> CloudBuilder:
        return CloudBuilder(
            settings.cloud_builds(),
            staging_bucket=staging_prefix,
            notify=notify,
            emit=emit,
            storage_retry=settings.storage_retry,
            cancel_on_interrupt=cancel_on_interrupt,
            poll=PollPolicy.from_env(settings.env, BUILD_POLL),
        )

    def choose() -> Any:
        return select_builder(
            options.builder, cloud_build=cloud_build, output=emit, log=notify, env=settings.env
        )

    # the token is made only when a Google registry is asked (never for a loopback one)
    lookup = registry_lookup(settings.wire(), lambda: str(settings.token()()), settings.retry)
    from mlsubmit.images import ensure_image

    ensured = ensure_image(image.spec, image.context, builder=_ChosenWhenNeeded(choose), lookup=lookup)
    notify(
        f"Image {ensured.ref} ({'built and pushed' if ensured.built else 'already in the registry, not rebuilt'})"
    )
    return ensured


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class JobImageStep:
    """``submit.ImageStep``: ``submit.plan`` plans the image offline, ``submit.run`` ensures it after staging."""

    def __init__(
        self, options: ImageOptions, *, notify: Notify, emit: Notify, cancel_on_interrupt: bool = False
    ) -> None:
        self.options = options
        self.notify = notify
        self.emit = emit
        self.cancel_on_interrupt = cancel_on_interrupt
        self.image: JobImage | None = None
        self.staging_prefix: str | None = None

    def plan(
        self,
        body: Mapping[str, Any],
        *,
        local: Sequence[Path],
        remote_packages: Sequence[str],
        staging_prefix: str | None,
        project: Callable[[], str],
        workdir: Path,
    ) -> str | None:
        """The image name with its content tag, or None when the job builds no image (no network)."""
        check_options(body, self.options)
        if not wants_image(body):
            return None
        *packages, last = local if local else [None]  # the trainer's sdist is staged last
        self.staging_prefix = staging_prefix
        self.image = plan_job_image(
            body,
            self.options,
            sdist=last,
            packages=[p for p in packages if p is not None],
            remote_packages=remote_packages,
            project=None if self.options.output_image_uri else project(),
            workdir=workdir,
        )
        self.notify(
            f"Image {self.image.spec.tagged}: on {self.image.spec.base} ({self.image.spec.base_reason})"
        )
        return self.image.spec.tagged

    def view(self) -> dict[str, Any]:
        """What ``--dry-run`` shows of the planned image (:func:`dry_run_view`); call while the context exists."""
        assert self.image is not None, "plan() first"
        return dry_run_view(self.image, self.staging_prefix, self.options.builder)

    def ensure(self, settings: Any) -> str:
        """The pinned image (``REPOSITORY@sha256:...``), built only when the registry lacks the content tag."""
        assert self.image is not None, "plan() first"
        return ensure_job_image(
            self.image,
            settings,
            self.options,
            staging_prefix=self.staging_prefix,
            notify=self.notify,
            emit=self.emit,
            cancel_on_interrupt=self.cancel_on_interrupt,
        ).ref
