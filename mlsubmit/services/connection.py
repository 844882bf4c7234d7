"""gcloud's conventions (docs/ci.md) for the token (bounded, never shown; google-auth only to refresh ADC), the
endpoint overrides and the project, checked before anything is sent (docs/security.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from mlsubmit.errors import UsageError
from mlsubmit.job.values import url_value_problem
from mlsubmit.job.vocab import project_from_flags
from mlsubmit.proc.files import read_bounded

TOKEN_VARIABLE = "CLOUDSDK_AUTH_ACCESS_TOKEN"
# OAuth access tokens are a few hundred characters (self-signed JWTs a few thousand); far more is not a token.
MAX_TOKEN_CHARS = 16 * 1024
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


# Every endpoint variable, each an http(s) URL with a host (STORAGE_EMULATOR_HOST may be host:port alone, as
# google-cloud-storage allows).
ENDPOINT_VARIABLES = (
    *(variable for variable, _ in APIS.values()),
    *("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE", "API_ENDPOINT_OVERRIDE", "STORAGE_EMULATOR_HOST"),
)


class AccessToken:
    """A bare OAuth access token (no google-auth, ~70 ms to import): never refreshed; its repr hides it."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return "AccessToken(<hidden>)"


def token_source(creds: Any) -> Callable[[], str]:
    """The bearer token of ``creds``: a bare token as it is; ADC refreshed whenever they are not valid."""
    if isinstance(creds, AccessToken):
        return lambda: creds.token

    def adc() -> str:
        if not creds.valid:
            import google_auth_httplib2
            import httplib2

            creds.refresh(google_auth_httplib2.Request(httplib2.Http(timeout=HTTP_TIMEOUT_S)))
        return str(creds.token)

    return adc


def credentials(token: str | None) -> tuple[Any, str | None]:
    """(credentials, ADC project or None) for a checked token (:func:`read_access_token`), else ADC."""
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
    """--project, CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, then the ADC project; else None or UsageError."""
    if not (project := project_from_flags(flag, env)):
        try:
            project = adc() if adc is not None else credentials(read_access_token(env, token_file))[1]
        except UsageError:  # no credentials at all: say so where they are needed, not while planning
            if required:
                raise
            project = None
        # the flag and the environment were checked with the job: this is the ADC project
        if project and (problem := url_value_problem("project", project)):
            raise UsageError(f"Application Default Credentials: {problem}; pass --project.")
    if not project and required:
        raise UsageError("no project: pass --project or set CLOUDSDK_CORE_PROJECT.")
    return project or None


def storage_root_url(env: Mapping[str, str]) -> tuple[str, bool]:
    """(root URL, anonymous?) of Cloud Storage: STORAGE_EMULATOR_HOST is anonymous, as google-cloud-storage."""
    emulator = env.get("STORAGE_EMULATOR_HOST")
    override = (
        emulator or env.get("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE") or env.get("API_ENDPOINT_OVERRIDE")
    )
    if not override:
        return "https://storage.googleapis.com/", False
    if "://" not in override:
        override = ("http://" if emulator else "https://") + override
    return (override.rstrip("/") + "/").removesuffix("storage/v1/"), bool(emulator)


def _never_ship(_ctx: Any, _param: Any, value: str | None) -> str | None:
    """``--access-token-file``'s click callback: a credential file never ships in a package or an image."""
    if value:
        from mlsubmit.sdist.never_ship import add_credential_file

        add_credential_file(value)
    return value


# The connection options every command that calls a Google API takes: (flag, click keyword arguments), which the
# cli's option table (``cli/options.py``) turns into click options.
CONNECTION_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--access-token-file",
        {
            "default": None,
            "help": "File holding an OAuth access token (else CLOUDSDK_AUTH_ACCESS_TOKEN, ADC).",
            "callback": _never_ship,
        },
    ),
    (
        "--api-endpoint",
        {"default": None, "help": "API root URL (else CLOUDSDK_API_ENDPOINT_OVERRIDES_ML/_AIPLATFORM)."},
    ),
)


def token_problem(token: str) -> str | None:
    """Why ``token`` (stripped) cannot be a bearer token, or None; never shows any part of the token."""
    if not token:
        return "is empty"
    if len(token) > MAX_TOKEN_CHARS:
        return f"is longer than {MAX_TOKEN_CHARS} characters; that is no access token"
    if "\n" in token or "\r" in token:
        return "spans more than one line; it must be one line"
    for position, char in enumerate(token, 1):
        if not "\x21" <= char <= "\x7e":
            return f"has a character that is not visible ASCII (a space, a control or a non-ASCII character) at position {position}"
    return None


def read_access_token(env: Mapping[str, str], token_file: str | None) -> str | None:
    """The checked token of ``--access-token-file``, else CLOUDSDK_AUTH_ACCESS_TOKEN, else None (ADC)."""
    if token_file:
        source = f"--access-token-file {token_file}"
        try:
            raw = read_bounded(
                token_file,
                what="a file holding one access token",
                max_bytes=MAX_TOKEN_CHARS + 2,
                error=UsageError,
            )
        except UsageError as err:  # names the file, never its content
            raise UsageError(f"--access-token-file {err}") from None
        try:
            token = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise UsageError(
                f"{source}: the access token has a character that is not visible ASCII; the file must hold "
                "one line, the token (e.g. from `gcloud auth print-access-token`)."
            ) from None
    else:
        if not (value := env.get(TOKEN_VARIABLE)):
            return None
        source, token = TOKEN_VARIABLE, value.strip()
    if problem := token_problem(token):
        raise UsageError(
            f"{source}: the access token {problem} (the token is not shown). Pass one token, e.g. from "
            "`gcloud auth print-access-token`."
        )
    return token


def endpoint_problem(name: str, url: str) -> str | None:
    """Why ``url`` is not an http(s) URL with a host, or None (never quoting it: it may carry a password)."""
    if name == "STORAGE_EMULATOR_HOST" and "://" not in url:
        url = "http://" + url
    if len(url) > 2048 or any(not "\x21" <= c <= "\x7e" for c in url):
        return f"{name} must be an http(s) URL of at most 2048 visible ASCII characters (no spaces)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number or out of range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{name} must be an http:// or https:// URL with a host, e.g. https://ml.googleapis.com/"
    if parts.username is not None or parts.password is not None:
        return f"{name} must not carry a user name or password"
    if parts.query or parts.fragment:
        return f"{name} must not have a query (?) or fragment (#)"
    return None
