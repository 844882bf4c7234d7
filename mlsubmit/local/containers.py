"""``local train --image IMAGE`` / ``--build-image``: the image the replicas run in (docs/containers.md), built
into the local engine's storage, or pushed to ``--output-image-uri`` (reused when the registry has its tag)."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlsubmit.console import current
from mlsubmit.errors import UsageError
from mlsubmit.images.engines import LocalEngine, select_builder
from mlsubmit.job.imageref import ImageOptions, check_image, check_repository
from mlsubmit.job.vocab import ENGINES
from mlsubmit.proc.processes import temporary_directory

if TYPE_CHECKING:
    from mlsubmit.images import ImageSpec
    from mlsubmit.local.request import LocalTrainRequest

# --build-image without --output-image-uri: the engine's storage
LOCAL_REPOSITORY = "localhost/mlsubmit/{name}"


@dataclass(frozen=True)
class ImageFlags(ImageOptions):
    """The container flags of ``local train``: the shared image flags, ``--image`` and ``--build-image``."""

    image: str | None = None
    build_image: bool = False


@dataclass(frozen=True)
class ContainerRun:
    """The engine that runs the replicas and the image it runs (pinned by digest when it came from a registry)."""

    engine: LocalEngine
    image: str


def check_image_flags(flags: ImageFlags, request: LocalTrainRequest) -> bool:
    """Refuse what no container run could do, offline; True when the replicas run in an image."""
    if flags.image and flags.build_image:
        raise UsageError(
            "--image and --build-image: give one (--image runs an image, --build-image builds one)"
        )
    if not flags.image and not flags.build_image:
        if flags.output_image_uri or flags.base_image:
            raise UsageError("--output-image-uri and --base-image go with --build-image")
        return False
    if request.from_package:
        raise UsageError(
            "--from-package runs the package from a local venv; the image already holds it: drop one"
        )
    # A bad name is refused before any engine is asked (and never reaches a command line as an option).
    if flags.image:
        check_image(flags.image, "--image")
    if flags.base_image:
        check_image(flags.base_image, "--base-image")
    if flags.output_image_uri:
        check_repository(flags.output_image_uri)
    # A local job dir is mounted at its own path: one that holds ':' (--volume reads SRC:DST:OPTIONS) or is, or
    # resolves to, a system folder is refused before anything is built or run.
    job_dir = request.job_dir
    if job_dir and "://" not in job_dir:
        if ":" in job_dir:
            raise UsageError(
                f"--job-dir {job_dir}: a job dir mounted into the replicas' containers cannot hold ':' (the engine "
                "reads --volume SRC:DST:OPTIONS); pick a folder without one"
            )
        real = os.path.realpath(job_dir)
        if real in _SYSTEM_FOLDERS or any(
            real == tree or real.startswith(tree + "/") for tree in _SYSTEM_TREES
        ):
            shown = job_dir if real == job_dir else f"{job_dir} (that is {real})"
            raise UsageError(
                f"--job-dir {shown}: the job dir is mounted into the replicas' containers at the same path, and "
                "this one would put this machine's system folder over the image's; use a folder of its own, e.g. "
                "--job-dir ./out"
            )
    return True


def prepare_image(
    flags: ImageFlags, request: LocalTrainRequest, env: Mapping[str, str]
) -> ContainerRun | None:
    """The image the replicas run in, built first with ``--build-image``; None without container flags."""
    if not check_image_flags(flags, request):
        return None
    if flags.builder == "cloud-build":
        raise UsageError(
            "--builder cloud-build: local train runs the replicas with a local engine (docker, podman or buildah); "
            "build with `training --build-image --builder cloud-build`, then pass the image with --image"
        )

    def none_answers() -> Any:
        raise UsageError(
            f"local train --image needs a local container engine and none answers ({', '.join(ENGINES)}); "
            "install one, or run the replicas as processes (without --image)"
        )

    notify = current().notify
    engine = select_builder(
        flags.builder,
        cloud_build=none_answers,
        output=lambda line: notify(f"[build] {line}"),
        log=notify,
        env=env,
        doing="Running the image",
    )
    assert isinstance(engine, LocalEngine)
    if flags.image:
        return ContainerRun(engine, flags.image)
    from mlsubmit.images import ensure_image
    from mlsubmit.services.connection import read_access_token
    from mlsubmit.services.registry import registry_lookup
    from mlsubmit.services.retry import RetryPolicy
    from mlsubmit.services.wire import Wire, deadline_from_env

    with temporary_directory("mlsubmit-build-") as tmp:
        spec, context = _plan(flags, request, Path(tmp))
        notify(f"Image {spec.tagged}\n  base: {spec.base} ({spec.base_reason})")
        if flags.output_image_uri is None:
            built = engine.build_local(spec, context)
            notify(f"Image {'built' if built else 'already built'} in {engine.name}'s storage: {spec.tagged}")
            return ContainerRun(engine, spec.tagged)
        token = read_access_token(env, None)  # sent only to Artifact Registry / gcr.io over https
        lookup = registry_lookup(
            Wire(deadline=deadline_from_env(env)),
            (lambda: token) if token else None,
            RetryPolicy.from_env(env),
        )
        ensured = ensure_image(spec, context, builder=engine, lookup=lookup)
        notify(
            f"Image {'built and pushed' if ensured.built else 'found in the registry, not rebuilt'}: {ensured.ref}"
        )
        # Just built here: the engine holds these very bytes under the tag, so nothing is pulled back.
        return ContainerRun(engine, spec.tagged if ensured.built else ensured.ref)


def _plan(flags: ImageFlags, request: LocalTrainRequest, tmp: Path) -> tuple[ImageSpec, Path]:
    """The trainer's image spec and context (sdist built into ``tmp``): offline, no engine."""
    from mlsubmit.images import plan_image
    from mlsubmit.images.planner import wanted_base
    from mlsubmit.sdist.build import build_sdist

    # The package folder's name made a repository name (`trainer_` -> `trainer`): a name the user never gave
    # must not be the one blamed (the sdist build names the folder's own problem, if it has one).
    name = re.sub(r"[^a-z0-9]+", "-", request.package_dir.name.lower()).strip("-") or "trainer"
    return plan_image(
        module=request.module_name,
        sdist=build_sdist(request.package_dir, tmp / "sdist"),
        packages=(),
        base=wanted_base({"trainingInput": request.training_input or {}}, flags.base_image),
        repository=flags.output_image_uri or LOCAL_REPOSITORY.format(name=name),
        workdir=tmp,
    )


def dry_run_image(flags: ImageFlags, request: LocalTrainRequest) -> dict[str, str] | None:
    """What ``--dry-run`` shows of the image: the one given, or the one ``--build-image`` would build (offline)."""
    if not check_image_flags(flags, request):
        return None
    if flags.image:
        return {"image": flags.image}
    with temporary_directory("mlsubmit-build-") as tmp:
        spec, _ = _plan(flags, request, Path(tmp))
    return {
        "image": spec.tagged,
        "base": spec.base,
        "baseReason": spec.base_reason,
        "platform": spec.platform,
        "dockerfile": spec.dockerfile,
    }


def container_env(
    replica_env: Mapping[str, str], environ: Mapping[str, str], given: Collection[str] = ()
) -> dict[str, str]:
    """What the runner adds to the caller's environment, and the variables ``given``: PATH and HOME stay the image's."""
    return {key: value for key, value in replica_env.items() if key in given or environ.get(key) != value}


#: Host folders a job dir may not be, nor be inside: mounted at the same path, they would put this machine's
#: programs, libraries, devices or the engine's own socket (``/run/docker.sock``) over the image's.
_SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var/run",
)  # fmt: skip
#: Folders a job dir may be inside but not be: the whole of them would cover too much of the image.
_SYSTEM_FOLDERS = ("/", "/home", "/mnt", "/media", "/opt", "/root", "/srv", "/tmp", "/var", "/var/lib")


def mounts_for(job_dir: str | None) -> list[str]:
    """The host folders a container sees at the same path: a local job dir (checked already; made if missing)."""
    if not job_dir or "://" in job_dir:
        return []
    Path(job_dir).mkdir(parents=True, exist_ok=True)
    return [job_dir]
