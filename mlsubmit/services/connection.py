"""The pieces ``services.settings.Settings`` wires together: credentials, endpoints, the project.

gcloud's conventions, so CI setups carry over: ``CLOUDSDK_AUTH_ACCESS_TOKEN`` (else Application Default
Credentials) and ``CLOUDSDK_API_ENDPOINT_OVERRIDES_*``. google-auth is imported only to refresh Application
Default Credentials: ``--dry-run`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.job.vocab import project_from_flags
from mlsubmit.services.tokens import read_access_token

HTTP_TIMEOUT_S = 60

# api -> (endpoint override variable, default root URL; {region} filled for Vertex)
APIS: dict[str, tuple[str, str]] = {
    api: (f"CLOUDSDK_API_ENDPOINT_OVERRIDES_{api.upper()}", f"https://{host}.googleapis.com/")
    for api, host in (
        ("ml", "ml"),
        ("aiplatform", "{region}-aiplatform"),
        ("logging", "logging"),
        ("cloudbuild", "cloudbuild"),
        # read by the preflight (docs/getting-jobs-to-start.md); serviceusage v1beta1 shares v1's endpoint
        ("serviceusage", "serviceusage"),
        ("iam", "iam"),
        ("cloudkms", "cloudkms"),
    )
}


def endpoint_for(
    api: str, env: Mapping[str, str], *, override: str | None = None, region: str | None = None
) -> str:
    """The root URL to call: an explicit override, else the gcloud override variable, else the default."""
    variable, default = APIS[api]
    url = override or env.get(variable) or ""
    if not url:
        if "{region}" in default and not region:
            raise UsageError("Vertex AI needs a region: pass --region or set CLOUDSDK_COMPUTE_REGION.")
        url = default.format(region=region)
    return url if url.endswith("/") else url + "/"


class AccessToken:
    """A bare OAuth access token (no google-auth, ~70 ms to import): never refreshed; its repr hides it."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return "AccessToken(<hidden>)"


def token_source(creds: Any) -> Callable[[], str]:
    """The bearer token of ``creds``: a bare token as it is; Application Default Credentials refreshed
    (google-auth, imported only then) whenever they are not valid."""
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


def credentials(token: str | None) -> tuple[Any, str | None]:
    """(credentials, ADC project or None) for a checked token (``tokens.read_access_token``), else ADC."""
    if token:
        return AccessToken(token), None
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        return google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except DefaultCredentialsError:
        raise UsageError(
            "no credentials: set CLOUDSDK_AUTH_ACCESS_TOKEN (e.g. $(gcloud auth print-access-token)), pass "
            "--access-token-file, or set up Application Default Credentials (gcloud auth application-default login)."
        ) from None


def project_of(
    flag: str | None,
    env: Mapping[str, str],
    adc: Callable[[], str | None] | None = None,
    *,
    token_file: str | None = None,
    required: bool = True,
) -> str | None:
    """The one project resolver: --project, CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, then the ADC project
    (``adc``, read here unless a token is given); None, or a usage error when ``required``, without one."""
    project = project_from_flags(flag, env)
    if not project:
        try:
            project = adc() if adc is not None else credentials(read_access_token(env, token_file))[1]
        except UsageError:  # no credentials at all: say so where they are needed, not while planning
            if required:
                raise
            project = None
        if project:
            from mlsubmit.job.values import url_value_problem

            problem = url_value_problem("project", project)
            if problem:  # the flag and the environment were checked with the job: this is the ADC project
                raise UsageError(f"Application Default Credentials: {problem}; pass --project.")
    if not project and required:
        raise UsageError("no project: pass --project or set CLOUDSDK_CORE_PROJECT.")
    return project or None


def storage_root_url(env: Mapping[str, str]) -> tuple[str, bool]:
    """(root URL, anonymous?) of Cloud Storage: STORAGE_EMULATOR_HOST anonymously (as google-cloud-storage), else
    CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE or API_ENDPOINT_OVERRIDE with credentials, else the service."""
    emulator = env.get("STORAGE_EMULATOR_HOST")
    override = (
        emulator or env.get("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE") or env.get("API_ENDPOINT_OVERRIDE")
    )
    if not override:
        return "https://storage.googleapis.com/", False
    if "://" not in override:
        override = ("http://" if emulator else "https://") + override
    return (override.rstrip("/") + "/").removesuffix("storage/v1/"), bool(emulator)
