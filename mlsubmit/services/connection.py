"""The pieces ``services.settings.Settings`` wires together: credentials, endpoints, googleapiclient clients.

Everything here follows gcloud's conventions so users' CI setups carry over: ``CLOUDSDK_AUTH_ACCESS_TOKEN``
(else Application Default Credentials) and ``CLOUDSDK_API_ENDPOINT_OVERRIDES_{ML,AIPLATFORM,LOGGING}``.
The API calls go through ``services.rest`` (built from the static discovery documents, no discovery request);
googleapiclient and httplib2 remain for media uploads to Cloud Storage and for an injected ``http`` (tests),
imported only then. Heavy imports happen inside functions: ``--dry-run`` never loads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mlsubmit import __version__
from mlsubmit.errors import UsageError
from mlsubmit.spec.vocab import project_from_flags

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
    # read by the preflight (README "Getting jobs to start"); serviceusage v1beta1 shares v1's endpoint
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


NOT_RESENT = frozenset({"POST", "PATCH"})


def _is_create(method: str, request_uri: str) -> bool:
    """A POST to a collection (AIP-133 create), not a custom method such as ``:cancel`` or ``entries:list``."""
    last = request_uri.split("?", 1)[0].rsplit("/", 1)[-1]
    return method in NOT_RESENT and ":" not in last and "%3a" not in last.lower()


def _http_class(bearer: str | None = None) -> Any:
    """httplib2.Http, except that a create goes on the wire at most once per call.

    httplib2 silently sends a request again when the connection drops before an answer (its stale
    keep-alive rule in ``Http._conn_request`` applies "regardless of the number of RETRIES", POST
    included). A create that landed and was re-sent that way comes back 409 on what looks like our first
    attempt, i.e. "id taken" for our own job, and the re-send is never logged. Refusing the hidden re-send
    turns the drop into a ConnectionError that ``services.retry`` retries and logs, and ml resolves a 409 after
    it by reading the job back. Idempotent
    calls (reads, ``:cancel``, ``entries:list``) keep httplib2's quiet retry of a stale keep-alive connection.
    """
    import httplib2

    class SingleSendHttp(httplib2.Http):  # type: ignore[misc]
        def _conn_request(self, conn: Any, request_uri: str, method: str, body: Any, headers: Any) -> Any:
            if not _is_create(method, request_uri):
                return super()._conn_request(conn, request_uri, method, body, headers)
            send = conn.request
            sent = False

            def send_once(*args: Any, **kwargs: Any) -> Any:
                nonlocal sent
                if sent:
                    raise ConnectionResetError(f"the connection dropped before {method} was answered")
                sent = True
                return send(*args, **kwargs)

            conn.request = send_once
            try:
                return super()._conn_request(conn, request_uri, method, body, headers)
            finally:
                del conn.request  # back to the class's method; the connection is reused

    if bearer is None:
        return SingleSendHttp
    authorization = f"Bearer {bearer}"

    class BearerHttp(SingleSendHttp):
        """Signs every request with a bare access token (a 401 reaches api_error, which explains it)."""

        def request(
            self,
            uri: str,
            method: str = "GET",
            body: Any = None,
            headers: Any = None,
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            headers = dict(headers or {})
            headers["authorization"] = authorization
            return super().request(uri, method, body, headers, *args, **kwargs)

    return BearerHttp


def authorized_http(creds: Any, timeout: float = HTTP_TIMEOUT_S) -> Any:
    """An httplib2 object that signs requests with ``creds`` and names mlsubmit in its User-Agent."""
    from googleapiclient.http import set_user_agent

    if isinstance(creds, AccessToken):
        bare = _http_class(bearer=creds.token)(timeout=timeout)
        set_user_agent(bare, USER_AGENT)
        return bare
    import google_auth_httplib2
    from google.oauth2.credentials import Credentials

    # A bare access token (CLOUDSDK_AUTH_ACCESS_TOKEN, --access-token-file) cannot be refreshed: on a 401
    # google-auth would raise RefreshError instead of letting api_error explain the expired token.
    static_token = isinstance(creds, Credentials) and not creds.refresh_token
    http = google_auth_httplib2.AuthorizedHttp(
        creds, http=_http_class()(timeout=timeout), refresh_status_codes=() if static_token else (401,)
    )
    set_user_agent(http, USER_AGENT)
    return http


def discovery_document(api: str) -> dict[str, Any]:
    """The static discovery document shipped inside google-api-python-client (read as a file)."""
    from mlsubmit.services.rest import document

    return document(api)


def build_service(api: str, http: Any, endpoint: str) -> Any:
    """A googleapiclient Resource for ``api`` talking to ``endpoint`` through ``http``."""
    from googleapiclient.discovery import build_from_document

    return build_from_document(discovery_document(api), http=http, client_options={"api_endpoint": endpoint})


def resolve_project(flag: str | None, env: Mapping[str, str], adc_project: str | None = None) -> str:
    """--project, CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, then the ADC project; else a usage error."""
    project = project_from_flags(flag, env) or adc_project
    if not project:
        raise UsageError("no project: pass --project or set CLOUDSDK_CORE_PROJECT.")
    return project


# --- Cloud Storage (uploads go through googleapiclient's static storage v1 document) -----------------


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


def storage_document(root_url: str = STORAGE_ROOT_URL) -> dict[str, Any]:
    """The static storage v1 discovery document shipped in google-api-python-client, rooted at `root_url`.

    googleapiclient builds media upload URLs from the document's rootUrl, not from client_options'
    api_endpoint (which would keep `https://` for an `http://` emulator), so every root is rewritten.
    """
    from googleapiclient.discovery_cache import get_static_doc

    text = get_static_doc("storage", "v1")
    if text is None:  # pragma: no cover - only with a broken google-api-python-client install
        raise RuntimeError("google-api-python-client lacks the static storage.v1 discovery document")
    import json

    doc: dict[str, Any] = json.loads(text)
    if root_url != doc["rootUrl"]:
        doc.update(rootUrl=root_url, mtlsRootUrl=root_url, baseUrl=root_url + doc["servicePath"])
    return doc


def make_storage_service(env: Mapping[str, str], http: Any = None) -> Any:
    """A googleapiclient storage v1 service for `upload`, with mlsubmit's user agent.

    With STORAGE_EMULATOR_HOST set it talks to the emulator anonymously (`http` is not used: the emulator
    never sees a token). Otherwise it signs with `http`, the ml API's authorized http (one credential for
    both, no second ADC lookup), or without one with CLOUDSDK_AUTH_ACCESS_TOKEN, else Application Default
    Credentials.
    """
    from googleapiclient.discovery import build_from_document

    root, anonymous = storage_root_url(env)
    if anonymous:
        from googleapiclient.http import build_http, set_user_agent

        http = set_user_agent(build_http(), USER_AGENT)  # build_http: 308 is no redirect
    else:
        if http is None:
            http = authorized_http(credentials(env)[0])
        # A resumable upload answers each chunk "308 Resume Incomplete" without a Location; httplib2 would
        # follow it as a redirect and fail. googleapiclient.http.build_http makes the same change.
        channel = getattr(http, "http", http)  # the httplib2.Http inside google_auth_httplib2.AuthorizedHttp
        channel.redirect_codes = frozenset(channel.redirect_codes) - {308}
    return build_from_document(storage_document(root), http=http)
