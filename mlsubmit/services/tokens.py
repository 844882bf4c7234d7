"""The checks of what reaches a request before anything is sent: the bearer token (read from its file or
variable, bounded, never shown) and the endpoint overrides (docs/security.md, docs/ci.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.errors import UsageError

TOKEN_VARIABLE = "CLOUDSDK_AUTH_ACCESS_TOKEN"
# OAuth access tokens are a few hundred characters (self-signed JWTs a few thousand); far more is not a token.
MAX_TOKEN_CHARS = 16 * 1024
# Endpoint variables read here and in services.connection, each an http(s) URL with a host.
ENDPOINT_VARIABLES = (
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE",  # the preflight's reads (docs/getting-jobs-to-start.md)
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS",
    "API_ENDPOINT_OVERRIDE",
    "STORAGE_EMULATOR_HOST",  # may be host:port alone (google-cloud-storage's convention)
)


def _never_ship(_ctx: Any, _param: Any, value: str | None) -> str | None:
    """``--access-token-file``'s click callback: the file is a credential, so it never ships in a package or an
    image, even when it sits in the trainer's folder (:mod:`mlsubmit.sdist.never_ship`)."""
    if value:
        from mlsubmit.sdist.never_ship import add_credential_file

        add_credential_file(value)
    return value


# The connection options every command that calls a Google API takes: (flag, click keyword arguments).
# ``Settings.OPTIONS``; the cli's option table (``cli/options.py``) turns them into click options.
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
        {
            "default": None,
            "help": "API root URL (else CLOUDSDK_API_ENDPOINT_OVERRIDES_ML/_AIPLATFORM).",
        },
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
    """The checked token of ``--access-token-file``, else CLOUDSDK_AUTH_ACCESS_TOKEN; None without either (ADC).
    A bad token is a UsageError that never shows it (docs/security.md)."""
    if token_file:
        from mlsubmit.proc.files import read_bounded

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
        value = env.get(TOKEN_VARIABLE)
        if not value:
            return None
        source, token = TOKEN_VARIABLE, value.strip()
    problem = token_problem(token)
    if problem:
        raise UsageError(
            f"{source}: the access token {problem} (the token is not shown). Pass one token, e.g. from "
            "`gcloud auth print-access-token`."
        )
    return token


def endpoint_problem(name: str, url: str) -> str | None:
    """Why the endpoint ``url`` given as ``name`` is not an http(s) URL with a host, or None (never quoting the URL:
    it may carry a user name or password)."""
    from urllib.parse import urlsplit

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
