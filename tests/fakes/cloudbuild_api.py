"""``FakeCloudBuild``: :class:`FakeGoogleApis` plus Cloud Build v1 builds that push to its Docker registry (v2 HEAD).

Builds are checked against the ``Build`` schema of the cloudbuild v1 discovery document shipped in
google-api-python-client (an unknown field is 400 INVALID_ARGUMENT, as the service answers), answered with an
Operation whose ``metadata.build`` is the stored build, and move one status per ``builds.get`` along a script:
``script_build(tag, "SUCCESS" | "FAILURE", log_lines=[...])``. A SUCCESS pushes every ``images`` entry to the
registry of the same server (the preflight fake's: ``HEAD /v2/NAME/manifests/TAG`` then answers its digest), so
an image named ``127.0.0.1:PORT/...`` lives here. The log is the object ``log-ID.txt`` in the build's ``logsBucket``, written
line by line as the build advances, like the service's.

    with FakeCloudBuild() as server:
        server.script_build("ctx123", "FAILURE", log_lines=["Step 1/4 : FROM python", "pip: error"])
        server.inject_drop("POST", BUILDS_CREATE, after=True)    # the create happens; its answer is lost
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.filters import FilterError, compile_filter
from tests.fakes.schema_check import bad_request, check_body
from tests.fakes.wire import ApiError, RecordedRequest, Response, rfc3339, snapshot

BUILDS_CREATE = r"^/v1/projects/[^/]+/(?:locations/[^/]+/)?builds$"
_C = r"(?::|%3A)"
_LOC = r"projects/([^/]+)(?:/locations/([^/]+))?"
FAILURE_STEPS = ("QUEUED", "WORKING", "FAILURE")
SUCCESS_STEPS = ("QUEUED", "WORKING", "SUCCESS")


@dataclass
class Script:
    """What a build with a given tag does: its statuses and the log lines it writes along the way."""

    statuses: tuple[str, ...] = SUCCESS_STEPS
    log_lines: list[str] = field(default_factory=lambda: ["Step 1/3 : FROM base", "Successfully built"])
    failure_type: str = "USER_BUILD_STEP"
    failure_detail: str = 'Build step failure: build step 0 "gcr.io/cloud-builders/docker" failed: exit 1'


@dataclass
class StoredBuild:
    resource: dict[str, Any]
    script: Script
    pos: int = 0


def manifest_digest(image: str, source: Any) -> str:
    """The digest the fake registry gives an image built from ``source`` (the same inputs, the same digest)."""
    return "sha256:" + hashlib.sha256(repr((image, source)).encode()).hexdigest()


def build_env(fake: FakeGoogleApis) -> dict[str, str]:
    """The variables that point mlsubmit at ``fake`` (project ``fake.project``) for a build of the image, the
    Vertex AI job that runs it and the preflight of that submit (docs/containers.md, docs/getting-jobs-to-start.md)."""
    return {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake",
        "CLOUDSDK_CORE_PROJECT": fake.project,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": fake.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD": fake.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": fake.url + "storage/v1/",
        "MLSUBMIT_POLL_INTERVAL": "0",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE": fake.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM": fake.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS": fake.url,
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0",
    }


class FakeCloudBuild(FakeGoogleApis):
    """The Google APIs fake with Cloud Build v1 and a registry (module docstring)."""

    def __init__(self, *, project: str = "myproj") -> None:
        super().__init__(project=project)
        self.builds: dict[str, StoredBuild] = {}
        self.scripts: dict[str, Script] = {}
        self.default_script = Script()
        self._next = 1
        for method, regex, handler in (
            ("POST", rf"^/v1/{_LOC}/builds$", self.create),
            ("GET", rf"^/v1/{_LOC}/builds$", self.list_builds),
            ("GET", rf"^/v1/{_LOC}/builds/([^/:%]+)$", self.get_build),
            ("POST", rf"^/v1/{_LOC}/builds/([^/:%]+){_C}cancel$", self.cancel),
            ("GET", r"^/storage/v1/b$", self.list_buckets),
        ):
            self.add_route(method, regex, handler)

    # -- test helpers ---------------------------------------------------------------------------------
    def script_build(self, tag: str, outcome: str = "SUCCESS", log_lines: list[str] | None = None) -> None:
        """Builds tagged ``tag`` end in ``outcome`` (SUCCESS, FAILURE, TIMEOUT, ...) after QUEUED and WORKING."""
        with self._lock:
            script = Script(statuses=("QUEUED", "WORKING", outcome))
            if log_lines is not None:
                script.log_lines = list(log_lines)
            self.scripts[tag] = script

    def script_build_all(self, outcome: str, log_lines: list[str] | None = None) -> None:
        """Every build not scripted by tag ends in ``outcome`` (SUCCESS, FAILURE, ...)."""
        with self._lock:
            self.default_script = Script(statuses=("QUEUED", "WORKING", outcome))
            if log_lines is not None:
                self.default_script.log_lines = list(log_lines)

    def hold_builds(self, tag: str) -> None:
        """Builds tagged ``tag`` stay WORKING until cancelled (for Ctrl-C tests)."""
        with self._lock:
            self.scripts[tag] = Script(statuses=("QUEUED",) + ("WORKING",) * 10_000)

    def push(self, image: str, digest: str) -> None:
        """Put ``HOST/NAME:TAG`` in the server's registry v2 (the preflight fake's: ``HEAD /v2/NAME/manifests/TAG``
        answers its digest)."""
        name, _, tag = image.rpartition(":")
        with self._lock:
            self.preflight.images[f"{name.split('/', 1)[1] if '/' in name else name}:{tag}"] = digest

    @property
    def build_bodies(self) -> list[dict[str, Any]]:
        """Every ``builds.create`` body as sent (also refused or faulted ones)."""
        return [r.json for r in self.requests_matching("POST", BUILDS_CREATE)]

    @property
    def stored_builds(self) -> list[dict[str, Any]]:
        with self._lock:
            return [snapshot(b.resource) for b in self.builds.values()]

    # -- Cloud Build v1 -------------------------------------------------------------------------------
    def create(self, request: RecordedRequest, project: str, location: str | None) -> Response:
        """``builds.create``: schema-checked, steps required; answers the Operation."""
        errors, body = check_body("cloudbuild.v1", "Build", request.json, "build")
        if errors:
            return Response(400, bad_request(errors))
        if not body.get("steps"):
            raise ApiError(400, "invalid build: no steps")
        for index, step in enumerate(body["steps"]):
            if not step.get("name"):
                raise ApiError(400, f"invalid build: step {index} must specify name")
        for tag in body.get("tags") or []:
            if not re.fullmatch(r"[\w][\w.-]{0,127}", tag):
                raise ApiError(
                    400,
                    f'invalid build: invalid build tag "{tag}": must match format "^[\\w][\\w.-]{{0,127}}$"',
                )
        build_id = f"00000000-0000-4000-8000-{self._next:012d}"
        self._next += 1
        location = location or "global"
        tags = body.get("tags") or []
        script = next((self.scripts[t] for t in tags if t in self.scripts), self.default_script)
        resource = {
            **body,
            "id": build_id,
            "name": f"projects/{project}/locations/{location}/builds/{build_id}",
            "projectId": project,
            "status": script.statuses[0],
            "createTime": rfc3339(self.clock()),
            "logsBucket": f"gs://{project}_cloudbuild-logs",
            "logUrl": f"https://console.cloud.google.com/cloud-build/builds/{build_id}?project={project}",
            "steps": [{**s, "status": "QUEUED"} for s in body["steps"]],
        }
        self.builds[build_id] = StoredBuild(resource, script)
        self._enter(self.builds[build_id])
        operation = {
            "name": f"projects/{project}/locations/{location}/operations/op-{build_id}",
            "metadata": {
                "@type": "type.googleapis.com/google.devtools.cloudbuild.v1.BuildOperationMetadata",
                "build": snapshot(resource),
            },
        }
        return Response(200, operation)

    def _log(self, build: StoredBuild, upto: int) -> None:
        lines = build.script.log_lines[:upto]
        data = "".join(line + "\n" for line in lines).encode()
        bucket = str(build.resource["logsBucket"]).removeprefix("gs://")
        self.storage.put(bucket, f"log-{build.resource['id']}.txt", data, "text/plain")

    def _enter(self, build: StoredBuild) -> None:
        resource = build.resource
        status = build.script.statuses[build.pos]
        resource["status"] = status
        lines = build.script.log_lines
        if status == "WORKING":
            resource.setdefault("startTime", rfc3339(self.clock()))
            for step in resource["steps"]:
                step["status"] = "WORKING"
            self._log(build, max(1, len(lines) // 2))
        if status in ("SUCCESS", "FAILURE", "TIMEOUT", "INTERNAL_ERROR", "CANCELLED", "EXPIRED"):
            resource["finishTime"] = rfc3339(self.clock())
            self._log(build, len(lines))
            for step in resource["steps"]:
                step["status"] = status if status != "CANCELLED" else "CANCELLED"
        if status == "SUCCESS":
            images = []
            for image in resource.get("images") or []:
                digest = manifest_digest(image, resource.get("source"))
                images.append({"name": image, "digest": digest})
                self.push(image, digest)
            resource["results"] = {"images": images}
        elif status == "FAILURE":
            resource["failureInfo"] = {
                "type": build.script.failure_type,
                "detail": build.script.failure_detail,
            }
            resource["statusDetail"] = build.script.failure_detail

    def _build(self, project: str, build_id: str) -> StoredBuild:
        build = self.builds.get(build_id)
        if build is None or build.resource["projectId"] != project:
            raise ApiError(404, f"Build {build_id} not found.", "NOT_FOUND")
        return build

    def get_build(
        self, request: RecordedRequest, project: str, location: str | None, build_id: str
    ) -> Response:
        """``builds.get``: the current status, then one step along the script."""
        build = self._build(project, build_id)
        answer = snapshot(build.resource)
        if build.pos + 1 < len(build.script.statuses):
            build.pos += 1
            self._enter(build)
        return Response(200, answer)

    def list_builds(self, request: RecordedRequest, project: str, location: str | None) -> Response:
        """``builds.list`` with ``filter`` (e.g. ``tags="x"``), newest first as the service lists them."""
        try:
            matches = compile_filter(request.param("filter"))
        except FilterError as exc:
            raise ApiError(400, f"Invalid filter: {exc}") from exc
        found = [
            snapshot(b.resource)
            for b in reversed(self.builds.values())
            if b.resource["projectId"] == project and matches(b.resource)
        ]
        return Response(200, {"builds": found} if found else {})

    def cancel(self, request: RecordedRequest, project: str, location: str | None, build_id: str) -> Response:
        """``builds.cancel``: CANCELLED at once (the service answers the Build)."""
        build = self._build(project, build_id)
        if build.resource["status"] in ("QUEUED", "WORKING", "PENDING"):
            build.script = Script(
                statuses=(*build.script.statuses[: build.pos], "CANCELLED"), log_lines=build.script.log_lines
            )
            build.pos = len(build.script.statuses) - 1
            self._enter(build)
        return Response(200, snapshot(build.resource))

    # -- Cloud Storage bucket list (gcloud builds submit looks for its default bucket) -----------------
    def list_buckets(self, request: RecordedRequest) -> Response:
        prefix = request.param("prefix") or ""
        name = f"{request.param('project')}_cloudbuild"
        items = (
            [{"kind": "storage#bucket", "id": name, "name": name, "location": "US"}]
            if name.startswith(prefix)
            else []
        )
        return Response(200, {"kind": "storage#buckets", "items": items})
