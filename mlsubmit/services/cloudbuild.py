"""Cloud Build v1: as ``gcloud builds submit --tag IMAGE DIR`` (gcloud 528 ``builds/submit_util.py``) but
``--platform linux/amd64``, the archive at its content address, and ``tags: ["mlsubmit", CONTENT_TAG]`` so a
retried ``create`` follows the build it may have started (docs/containers.md)."""

from __future__ import annotations

import gzip
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mlsubmit.errors import ApiError, ServiceAnswerError, UsageError
from mlsubmit.job.vocab import split_gcs_uri
from mlsubmit.services.answers import excerpt, need_object
from mlsubmit.services.ml import Caller, Collection
from mlsubmit.services.staging import StagedFile, plan_staging

BUILDER = "gcr.io/cloud-builders/docker"
PLATFORM = "linux/amd64"
MARK = "mlsubmit"  # the tag every build of mlsubmit carries
CONTEXT_NAME = "context.tar.gz"
#: A build's own limit: the service's default is 10 minutes, short for a pip install of a framework.
TIMEOUT = "3600s"
# Cloud Build's rule for tags (Build.tags: "^[\w][\w.-]{0,127}$"), also Docker's rule for image tags.
TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
BUILD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
ACTIVE = frozenset({"PENDING", "QUEUED", "WORKING"})
#: Cloud Build status -> the ml-style state the poll engine (services.poll) understands.
STATES = {
    "PENDING": "QUEUED",
    "QUEUED": "QUEUED",
    "WORKING": "RUNNING",
    "SUCCESS": "SUCCEEDED",
    "FAILURE": "FAILED",
    "INTERNAL_ERROR": "FAILED",
    "TIMEOUT": "FAILED",
    "EXPIRED": "FAILED",
    "CANCELLED": "CANCELLED",
}
LOG_CHUNK = 256 * 1024  # bytes of build log read per poll
_T = TypeVar("_T", dict[str, Any], list[Any])


@dataclass(frozen=True)
class BuildPlan:
    """What a Cloud Build of one image sends: the context archive's place and the ``Build`` body (no network)."""

    image: str  # REPOSITORY:CONTENT_TAG
    tag: str
    staged: StagedFile
    body: dict[str, Any]


def _field(resource: Any, key: str, kind: type[_T]) -> _T:
    """``resource[key]`` when it is a ``kind`` (dict, list), else an empty one (answers are checked, never trusted)."""
    value = resource.get(key) if isinstance(resource, dict) else None
    return value if isinstance(value, kind) else kind()


def _gzipped(context_tar: Path, out: Path) -> Path:
    """The context as a gzipped tar at ``out`` (what storageSource takes), the same bytes for the same tar."""
    with open(context_tar, "rb") as handle:
        if handle.read(2) == b"\x1f\x8b":
            return Path(shutil.copyfile(context_tar, out))
    # mtime=0 and no file name in the header: the same tar gives the same archive, so the same address
    with (
        open(context_tar, "rb") as src,
        open(out, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as dst,
    ):
        shutil.copyfileobj(src, dst, 1024 * 1024)
    return out


def plan_build(image: str, context_tar: Path, staging_bucket: str | None, workdir: Path) -> BuildPlan:
    """Where the context goes and the Build body for ``image`` (``REPOSITORY:TAG``); local work only."""
    repository, _, tag = image.rpartition(":")
    if not repository or "/" in tag or not TAG.fullmatch(tag):
        raise UsageError(f"image {image!r}: expected REGISTRY/PATH/NAME:TAG with a Docker tag.")
    if not staging_bucket:
        raise UsageError(
            "--builder cloud-build uploads the build context to Cloud Storage: pass --staging-bucket "
            "gs://BUCKET (or --job-dir gs://BUCKET/PATH), or build locally with --builder docker|podman|buildah."
        )
    (staged,) = plan_staging([_gzipped(context_tar, workdir / CONTEXT_NAME)], staging_bucket)
    bucket, name = split_gcs_uri(staged.uri)
    args = ["build", "--network", "cloudbuild", "--platform", PLATFORM, "-t", image, "."]
    body = {
        "source": {"storageSource": {"bucket": bucket, "object": name}},
        "steps": [{"name": BUILDER, "args": args}],
        "images": [image],
        "tags": [MARK, tag],
        "timeout": TIMEOUT,
    }
    return BuildPlan(image, tag, staged, body)


def state_of(build: dict[str, Any]) -> str:
    """The ml-style state of a Build (``STATE_UNSPECIFIED`` for a status we do not know)."""
    return STATES.get(str(build.get("status") or ""), "STATE_UNSPECIFIED")


def image_digest(build: dict[str, Any], image: str) -> str:
    """The digest Cloud Build pushed ``image`` with (``results.images[].digest``)."""
    images = _field(_field(build, "results", dict), "images", list)
    for built in images:
        if (
            isinstance(built, dict)
            and built.get("name") == image
            and DIGEST.fullmatch(str(built.get("digest")))
        ):
            return str(built["digest"])
    raise ServiceAnswerError(
        f"Cloud Build {build.get('id')} succeeded but reports no sha256 digest for {image} in "
        f"results.images: {excerpt(images)}."
    )


def failure_text(build: dict[str, Any], tail: list[str]) -> str:
    """The one message of a failed build: id, status, failing step, the service's detail, the last log lines."""
    info = _field(build, "failureInfo", dict)
    parts = [f"Cloud Build {build.get('id')} ended {build.get('status')}"]
    # the first step that failed: step 0 (NAME ARG0)
    for index, step in enumerate(_field(build, "steps", list)):
        if isinstance(step, dict) and step.get("status") in ("FAILURE", "TIMEOUT", "INTERNAL_ERROR"):
            args = _field(step, "args", list)
            first = f" {args[0]}" if args else ""
            parts.append(f"step {index} ({step.get('name')}{first}) ended {step.get('status')}")
            break
    if detail := info.get("detail") or build.get("statusDetail"):
        parts.append(f"{info.get('type') or 'detail'}: {str(detail)[:500]}")
    text = "; ".join(parts) + "."
    if build.get("logUrl"):
        text += f" Full log: {build['logUrl']}"
    if tail:
        text += "\nLast log lines:\n" + "\n".join(f"  {line}" for line in tail)
    return text


def _recipe(build: Any) -> tuple[Any, ...]:
    """What a build builds (storageSource bucket, object, generation) and runs (each step's name, args)."""
    storage = _field(_field(build, "source", dict), "storageSource", dict)
    steps = [(s.get("name"), s.get("args")) for s in _field(build, "steps", list) if isinstance(s, dict)]
    return storage.get("bucket"), storage.get("object"), storage.get("generation"), steps


def builds_plan(build: dict[str, Any], plan: BuildPlan) -> bool:
    """``build`` builds ``plan``: our tags and image, this run's archive and steps (tags are no proof)."""
    tags = _field(build, "tags", list)
    images = _field(build, "images", list)
    return plan.tag in tags and MARK in tags and plan.image in images and _recipe(build) == _recipe(plan.body)


class CloudBuilds(Collection):
    """The Cloud Build calls of one project (location ``global``); ``storage`` takes the context, holds the log."""

    permission = "cloudbuild.builds"

    def __init__(
        self, service: Any, project: str, caller: Caller | None = None, *, storage: Any = None
    ) -> None:
        super().__init__(service, project, caller)
        self.storage = storage
        self.parent = f"projects/{project}/locations/global"
        self.started_elsewhere = False  # the last start() followed another run's build (not ours to cancel)

    @property
    def _resource(self) -> Any:
        return self.service.projects().locations().builds()

    def _name(self, build_id: str) -> str:
        if not BUILD_ID.fullmatch(build_id):
            raise ServiceAnswerError(f"Cloud Build answered a build id {excerpt(build_id)}; not using it.")
        return f"{self.parent}/builds/{build_id}"

    def find(self, plan: BuildPlan) -> list[dict[str, Any]]:
        """Builds of ``plan`` (its very context archive, :func:`builds_plan`), newest first."""
        what = f"listing Cloud Builds tagged {plan.tag}"
        found = self._pages("builds", what, 50, 50, parent=self.parent, filter=f'tags="{plan.tag}"')
        return [b for b in found if isinstance(b, dict) and builds_plan(b, plan)]

    def start(self, plan: BuildPlan, notify: Callable[[str], None]) -> dict[str, Any]:
        """Start the build of ``plan`` exactly once, or follow the one already running; returns the Build."""
        what = f"starting Cloud Build of {plan.image}"
        before = self.find(plan)
        running = [b for b in before if b.get("status") in ACTIVE]
        self.started_elsewhere = bool(running)
        if running:
            notify(f"Cloud Build {running[0].get('id')} is already building {plan.image}; following it")
            return running[0]
        known = {str(b.get("id")) for b in before}
        recovered: list[dict[str, Any]] = []

        def recover() -> dict[str, Any] | None:  # the earlier attempt may have started the build
            if not (new := [b for b in self.find(plan) if str(b.get("id")) not in known]):
                return None
            recovered.append(new[0])
            return {"metadata": {"build": new[0]}}

        answer = self._call("create", what, recover=recover, parent=self.parent, body=plan.body)
        metadata = _field(need_object(answer, what), "metadata", dict)
        build = need_object(metadata.get("build"), f"{what} (the operation's metadata.build)")
        self._name(str(build.get("id") or ""))
        if not builds_plan(build, plan):
            raise ServiceAnswerError(
                f"Cloud Build answered {what} with build {excerpt(build.get('id'))}, which builds another "
                f"image, source or steps ({excerpt(build.get('source'))}); not following it."
            )
        if recovered:
            notify(f"an earlier attempt started Cloud Build {build.get('id')}; not starting another")
        return build

    def get(self, job_id: str) -> dict[str, Any]:
        """The build ml-style (``jobId``, ``state``, ``errorMessage``, the Build's fields); a retried read."""
        what = f"reading Cloud Build {job_id}"
        build = need_object(self._call("get", what, name=self._name(job_id)), what)
        view: dict[str, Any] = {"jobId": job_id, "state": state_of(build)}
        if build.get("statusDetail"):
            view["errorMessage"] = str(build["statusDetail"])[:500]
        return {**build, **view}

    def cancel(self, job_id: str) -> None:
        """Ask Cloud Build to cancel the build (idempotent there, so retried)."""
        name = self._name(job_id)
        body = {"name": name, "projectId": self.project, "id": job_id}
        what = f"cancelling Cloud Build {job_id}"
        self._call("cancel", what, permission="cloudbuild.builds.update", name=name, body=body)

    def read_log(self, build: dict[str, Any], offset: int) -> bytes:
        """At most LOG_CHUNK bytes of the build's log from ``offset`` (b'' when there is none yet)."""
        bucket_uri = str(build.get("logsBucket") or "")
        client = getattr(self.storage, "_client", None)
        if not bucket_uri.startswith("gs://") or client is None:
            return b""
        bucket, folder = split_gcs_uri(bucket_uri.rstrip("/") + "/")
        name = f"{folder.rstrip('/')}/log-{build.get('id')}.txt".lstrip("/")
        request = self.storage.objects().get(bucket=bucket, object=name, alt="media")
        response, content = client.wire.send(
            "GET",
            request.uri,
            headers={"range": f"bytes={offset}-{offset + LOG_CHUNK - 1}", "accept": "*/*"},
            origin=client.origin,
            token=client.token,
            # a 206 holds one chunk; a server that ignores Range sends the whole log, accepted while small
            max_bytes=LOG_CHUNK + min(offset, 8 * LOG_CHUNK),
        )
        if response.status == 206:
            return bytes(content[:LOG_CHUNK])
        if response.status == 200:  # a server that ignores Range sends it all: skip what was shown
            return bytes(content[offset : offset + LOG_CHUNK])
        if response.status in (404, 416):
            return b""
        raise ApiError(f"reading the log of Cloud Build {build.get('id')}: HTTP {response.status}")
