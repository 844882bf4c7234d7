"""The pieces ``services.settings.Settings`` wires together: credentials, endpoints, the project.

Everything here follows gcloud's conventions so users' CI setups carry over: ``CLOUDSDK_AUTH_ACCESS_TOKEN``
(else Application Default Credentials) and ``CLOUDSDK_API_ENDPOINT_OVERRIDES_{ML,AIPLATFORM,LOGGING}``.
Every call, uploads included, goes through ``services.rest`` over the command's one ``services.wire.Wire``
(built from the static discovery documents, no discovery request). google-auth is imported only to refresh
Application Default Credentials: ``--dry-run`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mlsubmit import __version__
from mlsubmit.errors import UsageError
from mlsubmit.job.vocab import project_from_flags

USER_AGENT = f"mlsubmit/{__version__}"
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
HTTP_TIMEOUT_S = 60
STORAGE_ROOT_URL = "https://storage.googleapis.com/"

# api -> (discovery name, version, endpoint override variable, default root URL; {region} filled for Vertex)
APIS: dict[str, tuple[str, str, str, str]] = {
    "ml": ("ml", "v1", "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML", "https://ml.googleapis.com/"),
    "aiplatform": (
        "aiplatform",
        "v1",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
        "https://{region}-aiplatform.googleapis.com/",
    ),
    "logging": (
        "logging",
        "v2",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
        "https://logging.googleapis.com/",
    ),
    "cloudbuild": (
        "cloudbuild",
        "v1",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD",
        "https://cloudbuild.googleapis.com/",
    ),
    # read by the preflight (docs/getting-jobs-to-start.md); serviceusage v1beta1 shares v1's endpoint
    "serviceusage": (
        "serviceusage",
        "v1",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE",
        "https://serviceusage.googleapis.com/",
    ),
    "iam": ("iam", "v1", "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM", "https://iam.googleapis.com/"),
    "cloudkms": (
        "cloudkms",
        "v1",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS",
        "https://cloudkms.googleapis.com/",
    ),
}


def endpoint_for(
    api: str, env: Mapping[str, str], *, override: str | None = None, region: str | None = None
) -> str:
    """The root URL to call: an explicit override, else the gcloud override variable, else the default."""
    _name, _version, variable, default = APIS[api]
    url = override or env.get(variable) or ""
    if not url:
        if "{region}" in default:
            if not region:
                raise UsageError("Vertex AI needs a region: pass --region or set CLOUDSDK_COMPUTE_REGION.")
            url = default.format(region=region)
        else:
            url = default
    return url if url.endswith("/") else url + "/"


def access_token(env: Mapping[str, str], token_file: str | None = None) -> str | None:
    """A bearer token from --access-token-file or CLOUDSDK_AUTH_ACCESS_TOKEN (never printed anywhere)."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as err:
            raise UsageError(
                f"--access-token-file {token_file}: cannot read it ({err.strerror or err})."
            ) from None
        if not token:
            raise UsageError(f"--access-token-file {token_file}: the file is empty.")
        return token
    return env.get("CLOUDSDK_AUTH_ACCESS_TOKEN") or None


class AccessToken:
    """A bare OAuth access token (CLOUDSDK_AUTH_ACCESS_TOKEN, --access-token-file).

    It needs no google-auth machinery (which costs ~70 ms to import on every submit): it cannot be refreshed,
    so it is simply sent. Its repr never shows the token.
    """

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return "AccessToken(<hidden>)"


def token_source(creds: Any) -> Callable[[], str]:
    """The bearer token of ``creds`` for ``services.rest``: a bare token as it is; Application Default
    Credentials refreshed (google-auth, imported only then) whenever they are not valid."""
    if isinstance(creds, AccessToken):
        token = creds.token
        return lambda: token

    def adc() -> str:
        if not creds.valid:
            import google_auth_httplib2
            import httplib2

            creds.refresh(google_auth_httplib2.Request(httplib2.Http(timeout=HTTP_TIMEOUT_S)))
        return str(creds.token)

    return adc


def credentials(env: Mapping[str, str], token_file: str | None = None) -> tuple[Any, str | None]:
    """(credentials, ADC project or None). A token beats Application Default Credentials."""
    token = access_token(env, token_file)
    if token:
        return AccessToken(token), None
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        creds, project = google.auth.default(scopes=SCOPES)
    except DefaultCredentialsError:
        raise UsageError(
            "no credentials: set CLOUDSDK_AUTH_ACCESS_TOKEN (e.g. $(gcloud auth print-access-token)), pass "
            "--access-token-file, or set up Application Default Credentials (gcloud auth application-default login)."
        ) from None
    return creds, project


def resolve_project(flag: str | None, env: Mapping[str, str], adc_project: str | None = None) -> str:
    """--project, CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, then the ADC project; else a usage error."""
    project = project_from_flags(flag, env) or adc_project
    if not project:
        raise UsageError("no project: pass --project or set CLOUDSDK_CORE_PROJECT.")
    return project


def storage_root_url(env: Mapping[str, str]) -> tuple[str, bool]:
    """(root URL, anonymous?) of Cloud Storage.

    STORAGE_EMULATOR_HOST (e.g. `http://127.0.0.1:9023` or `localhost:9023`) is talked to anonymously, as
    google-cloud-storage does; else CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE (gcloud's, with or without its
    `storage/v1/` path) or API_ENDPOINT_OVERRIDE (google-cloud-storage's) with credentials; else the service.
    """
    emulator = env.get("STORAGE_EMULATOR_HOST")
    override = (
        emulator or env.get("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE") or env.get("API_ENDPOINT_OVERRIDE")
    )
    if not override:
        return STORAGE_ROOT_URL, False
    if "://" not in override:
        override = ("http://" if emulator else "https://") + override
    root = override.rstrip("/") + "/"
    return root.removesuffix("storage/v1/"), bool(emulator)
