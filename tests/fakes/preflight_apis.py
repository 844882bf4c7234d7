"""The reads of the preflight, served by ``FakeGoogleApis``: serviceusage v1 and v1beta1, iam v1, cloudkms v1 and
Cloud Storage's bucket permission test, each checked against its discovery document.

``PreflightApis.install(server)`` adds the routes; the state is plain dictionaries a test edits (under the
server's lock through :meth:`PreflightApis.update`)::

    apis = PreflightApis.install(fake_apis)
    apis.update(lambda s: s.keys[KEY].update(primary={"state": "DISABLED"}))

Every request is checked the way the service parses it: the path must be the method's (discovery ``flatPath``),
every query parameter one the method (or the API) takes, a body the method's request schema
(``schema_check.check_body``); every answer is checked against the method's response schema too, so the fake
cannot drift from what the real service sends. A 403 is injected with the server's ``inject``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes.schema_check import bad_request, check_body, discovery_document
from tests.fakes.wire import ApiError, RecordedRequest, Response, int_param, page

if TYPE_CHECKING:
    from tests.fakes.api_server import FakeGoogleApis

PROJECT_NUMBER = "123456789012"
AGENT = f"serviceAccount:service-{PROJECT_NUMBER}@gcp-sa-aiplatform.iam.gserviceaccount.com"


def method_of(document: str, dotted: str) -> dict[str, Any]:
    """The discovery method ``resource.sub.method`` of ``document`` (e.g. ``serviceusage.v1``)."""
    node: dict[str, Any] = discovery_document(document)
    *resources, name = dotted.split(".")
    for resource in resources:
        node = node["resources"][resource]
    method: dict[str, Any] = node["methods"][name]
    return method


def _path_regex(flat: str) -> str:
    """A discovery ``flatPath`` as a regex: each ``{x}`` one path segment (``{+x}``: the rest)."""
    parts = re.split(r"(\{\+?[^}]+\})", flat)
    out = "".join(
        ("(.+)" if part.startswith("{+") else "([^/:]+)") if part.startswith("{") else re.escape(part)
        for part in parts
    )
    return out


class _Checked:
    """One discovery method's route: checks the request and the answer around ``handler``."""

    def __init__(self, document: str, dotted: str, prefix: str, handler: Callable[..., Any]) -> None:
        self.document, self.dotted, self.handler = document, dotted, handler
        self.method = method_of(document, dotted)
        self.regex = "^/" + prefix + _path_regex(self.method.get("flatPath", self.method["path"])) + "$"
        doc = discovery_document(document)
        self.params = set(self.method.get("parameters", {})) | set(doc.get("parameters", {}))

    def __call__(self, request: RecordedRequest, *groups: str) -> Response:
        unknown = set(request.query) - self.params
        if unknown:
            raise ApiError(
                400,
                f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r}: Cannot bind query parameter.",
            )
        request_ref = self.method.get("request", {}).get("$ref")
        if request_ref:
            errors, _ = check_body(self.document, request_ref, request.json, "request")
            if errors:
                raise _BadRequest(errors)
        elif request.body:
            raise ApiError(400, f"{self.dotted} takes no body")
        answer = self.handler(request, *groups)
        errors, _ = check_body(self.document, self.method["response"]["$ref"], answer, "response")
        assert not errors, f"the fake's {self.dotted} answer does not fit the discovery document: {errors}"
        return Response(200, answer)


class _BadRequest(ApiError):
    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__(400, "bad request")
        self.body = bad_request(errors)


@dataclass
class PreflightApis:
    """The state the preflight reads. By default everything is in order (the API enabled, every service account
    exists and may be acted as, every key is enabled and granted to the Vertex AI service agent, the caller has
    every bucket permission asked) so other tests' Vertex AI submits pass; a test takes away what it needs."""

    server: FakeGoogleApis
    services: dict[str, str] = field(default_factory=lambda: {"aiplatform.googleapis.com": "ENABLED"})
    missing_accounts: set[str] = field(default_factory=set)
    disabled_accounts: set[str] = field(default_factory=set)
    no_act_as: set[str] = field(default_factory=set)
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)  # default: ENCRYPT_DECRYPT, ENABLED
    missing_keys: set[str] = field(default_factory=set)
    key_policies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # default: the agent granted
    bucket_permissions: dict[str, set[str]] = field(default_factory=dict)  # default: every permission asked
    quota: list[dict[str, Any]] = field(default_factory=list)
    images: dict[str, str] = field(default_factory=dict)  # "NAME:TAG" -> digest: a registry v2 on the server

    @classmethod
    def install(cls, server: FakeGoogleApis) -> PreflightApis:
        """Add the preflight's routes to ``server`` (their state lives in the returned object)."""
        apis = cls(server)
        routes: list[tuple[str, str, str, str, Callable[..., Any]]] = [
            ("GET", "serviceusage.v1", "services.get", "", apis._service),
            (
                "GET",
                "serviceusage.v1beta1",
                "services.consumerQuotaMetrics.list",
                "",
                apis._quota_metrics,
            ),
            ("GET", "iam.v1", "projects.serviceAccounts.get", "", apis._account),
            ("POST", "iam.v1", "projects.serviceAccounts.testIamPermissions", "", apis._account_permissions),
            ("GET", "cloudkms.v1", "projects.locations.keyRings.cryptoKeys.get", "", apis._key),
            (
                "GET",
                "cloudkms.v1",
                "projects.locations.keyRings.cryptoKeys.getIamPolicy",
                "",
                apis._key_policy,
            ),
            ("GET", "storage.v1", "buckets.testIamPermissions", "storage/v1/", apis._bucket_permissions),
        ]
        for verb, document, dotted, prefix, handler in routes:
            checked = _Checked(document, dotted, prefix, handler)
            server.add_route(verb, checked.regex, checked)
        server.add_route("HEAD", r"^/v2/(.+)/manifests/([^/]+)$", apis._manifest)
        return apis

    def image(self, name: str, tag: str = "latest") -> str:
        """Push (the name of) an image: ``127.0.0.1:PORT/NAME:TAG`` on this server's registry v2."""
        with self.server._lock:
            self.images[f"{name}:{tag}"] = "sha256:" + f"{len(self.images):064x}"
        return f"127.0.0.1:{self.server.port}/{name}:{tag}"

    def update(self, change: Callable[[PreflightApis], Any]) -> None:
        """Change the state under the server's lock."""
        with self.server._lock:
            change(self)

    def set_bucket(self, bucket: str, location: str, location_type: str = "region", **fields: Any) -> None:
        """What ``buckets.get`` answers for ``bucket`` (``location`` as Cloud Storage spells it: US-CENTRAL1)."""
        with self.server._lock:
            self.server.storage.bucket_fields[bucket] = {
                "location": location,
                "locationType": location_type,
                **fields,
            }

    def add_quota(self, metric: str, limit: int, region: str = "us-central1") -> None:
        """A quota metric whose effective limit is ``limit`` in ``region`` (and 0 elsewhere); replaces the metric's
        earlier limit."""
        name = (
            f"projects/{PROJECT_NUMBER}/services/aiplatform.googleapis.com/consumerQuotaMetrics/"
            + metric.replace("/", "%2F")
        )
        entry = {
            "name": name,
            "metric": metric,
            "displayName": metric.rsplit("/", 1)[-1],
            "unit": "1/{project}/{region}",
            "consumerQuotaLimits": [
                {
                    "name": f"{name}/limits/%2Fproject%2Fregion",
                    "metric": metric,
                    "unit": "1/{project}/{region}",
                    "quotaBuckets": [
                        {"effectiveLimit": "0", "defaultLimit": "0"},
                        {
                            "effectiveLimit": str(limit),
                            "defaultLimit": str(limit),
                            "dimensions": {"region": region},
                        },
                    ],
                }
            ],
        }
        with self.server._lock:  # a metric added again replaces its limit
            self.quota[:] = [q for q in self.quota if q["metric"] != metric]
            self.quota.append(entry)

    # -- handlers (under the server's lock) ---------------------------------------------------------------------
    def _manifest(self, request: RecordedRequest, name: str, tag: str) -> Response:
        """Docker Registry HTTP API v2 ``HEAD /v2/NAME/manifests/TAG``: 200 with the digest, or 404."""
        digest = self.images.get(f"{name}:{tag}")
        if digest is None:
            return Response(404, raw=b"")
        return Response(200, raw=b"", headers={"Docker-Content-Digest": digest})

    def _service(self, request: RecordedRequest, _v1: str, project: str, service: str) -> dict[str, Any]:
        state = self.services.get(service, "DISABLED")
        return {
            "name": f"projects/{PROJECT_NUMBER}/services/{service}",
            "parent": f"projects/{PROJECT_NUMBER}",
            "state": state,
            "config": {"name": service, "title": "Vertex AI API"},
        }

    def _quota_metrics(self, request: RecordedRequest, *_parent: str) -> dict[str, Any]:
        if request.param("view") not in (None, "BASIC", "FULL", "QUOTA_VIEW_UNSPECIFIED"):
            raise ApiError(
                400, "Invalid value at 'view' (type.googleapis.com/google.api.serviceusage.v1beta1.QuotaView)"
            )
        size = int_param(request.param("pageSize"), "page_size")
        items, token = page(copy.deepcopy(self.quota), size, request.param("pageToken"), 50, 100)
        answer: dict[str, Any] = {"metrics": items}
        if token:
            answer["nextPageToken"] = token
        return answer

    def _account_of(self, email: str) -> None:
        if email in self.missing_accounts:
            raise ApiError(404, f"Unknown service account {email}", "NOT_FOUND")

    def _account(self, request: RecordedRequest, project: str, email: str) -> dict[str, Any]:
        self._account_of(email)
        owner = project if project != "-" else "p"
        found = {"name": f"projects/{owner}/serviceAccounts/{email}", "email": email, "projectId": owner}
        return {**found, "uniqueId": "104", "disabled": email in self.disabled_accounts}

    def _account_permissions(self, request: RecordedRequest, project: str, email: str) -> dict[str, Any]:
        self._account_of(email)
        asked = request.json.get("permissions", []) if isinstance(request.json, dict) else []
        granted = [p for p in asked if p != "iam.serviceAccounts.actAs" or email not in self.no_act_as]
        return {"permissions": granted} if granted else {}

    def _key_of(self, parts: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        project, location, ring, key = parts
        name = f"projects/{project}/locations/{location}/keyRings/{ring}/cryptoKeys/{key}"
        if name in self.missing_keys:
            raise ApiError(404, f"CryptoKey {name} not found.", "NOT_FOUND")
        return name, self.keys.get(name, {"purpose": "ENCRYPT_DECRYPT", "primary": {"state": "ENABLED"}})

    def _key(self, request: RecordedRequest, *parts: str) -> dict[str, Any]:
        name, fields = self._key_of(parts)
        primary = {"name": f"{name}/cryptoKeyVersions/1", **fields.get("primary", {})}
        return {"name": name, **copy.deepcopy(fields), "primary": primary}

    def _key_policy(self, request: RecordedRequest, *parts: str) -> dict[str, Any]:
        name, _ = self._key_of(parts)
        granted = [{"role": "roles/cloudkms.cryptoKeyEncrypterDecrypter", "members": [AGENT]}]
        return {"version": 1, "etag": "BwX=", "bindings": copy.deepcopy(self.key_policies.get(name, granted))}

    def _bucket_permissions(self, request: RecordedRequest, bucket: str) -> dict[str, Any]:
        self.server.storage._bucket(bucket)  # 404 for a missing bucket
        asked = request.query.get("permissions", [])
        if not asked:
            raise ApiError(400, "Required parameter: permissions")
        allowed = self.bucket_permissions.get(bucket)
        granted = [p for p in asked if allowed is None or p in allowed]
        answer: dict[str, Any] = {"kind": "storage#testIamPermissionsResponse"}
        if granted:
            answer["permissions"] = granted
        return answer
