"""How to reach the Google APIs, read from flags and environment in one place, with factories for the services.

One :class:`Settings` per command (as twine's ``Settings``): the cli builds it from its flags with
:meth:`Settings.from_flags`, core functions take it instead of long parameter lists, and ask it for what they
need: :meth:`Settings.jobs_backend` (ml or Vertex AI), :meth:`Settings.storage` and :meth:`Settings.logging`.
Everything follows gcloud's conventions so CI setups carry over (README "Credentials and endpoints"):

* project: ``--project``, ``CLOUDSDK_CORE_PROJECT``, ``GOOGLE_CLOUD_PROJECT``, then the ADC project;
* region (Vertex AI): ``--region`` (or the job's region for ``training``), then ``CLOUDSDK_COMPUTE_REGION``;
* token: ``--access-token-file``, ``CLOUDSDK_AUTH_ACCESS_TOKEN``, else Application Default Credentials; a token
  is checked when it is read (one line of visible ASCII, bounded) and never shown (README "Security");
* endpoints: ``--api-endpoint``, else ``CLOUDSDK_API_ENDPOINT_OVERRIDES_{ML,AIPLATFORM,LOGGING}`` (and
  ``_{SERVICEUSAGE,IAM,CLOUDKMS}`` for the preflight);
  ``STORAGE_EMULATOR_HOST`` / ``CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE`` for Cloud Storage;
* retries: ``MLSUBMIT_RETRY_INITIAL_DELAY``; polling: ``MLSUBMIT_POLL_INTERVAL`` (README "Retries and polling").

Every value that becomes part of a host name or a URL path (region, project, endpoint overrides) is checked in
:meth:`Settings.from_flags`, before anything is built, uploaded or sent (README "Security").

Credentials, the authorized http and each service are made once, on first use; nothing here is imported by a
dry run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mlsubmit.errors import UsageError
from mlsubmit.services.retry import API_POLICY, STORAGE_POLICY, PollPolicy, RetryPolicy
from mlsubmit.spec.values import url_value_problem

Target = Literal["ml", "vertex"]
TokenSource = Literal["file", "env", "adc"]
Notify = Callable[[str], None]

TOKEN_VARIABLE = "CLOUDSDK_AUTH_ACCESS_TOKEN"
# OAuth access tokens are a few hundred characters (self-signed JWTs a few thousand); far more is not a token.
MAX_TOKEN_CHARS = 16 * 1024
# Endpoint variables read here and in services.connection, each an http(s) URL with a host.
ENDPOINT_VARIABLES = (
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS",
    "API_ENDPOINT_OVERRIDE",
    "STORAGE_EMULATOR_HOST",  # may be host:port alone (google-cloud-storage's convention)
)


def token_problem(token: str) -> str | None:
    """Why ``token`` (surrounding whitespace already removed) cannot be a bearer token, or None.

    The reason never contains the token or any part of it: a position at most.
    """
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
    """The bearer token of ``--access-token-file``, else of CLOUDSDK_AUTH_ACCESS_TOKEN, checked; None when
    neither is given (Application Default Credentials are used). A bad token is a UsageError that never shows
    it (README "Security")."""
    if token_file:
        from mlsubmit.files import read_bounded

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
    """Why the endpoint ``url`` given as ``name`` (a flag or variable) is not an http(s) URL with a host, or None.

    The URL itself is not quoted: it may carry a user name or a password.
    """
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


@dataclass
class Settings:
    """Connection settings of one command (module docstring). Build it with :meth:`from_flags`."""

    env: Mapping[str, str]
    target: Target = "ml"
    project_flag: str | None = None
    region: str | None = None
    access_token_file: str | None = None
    api_endpoint: str | None = None
    retry: RetryPolicy = API_POLICY
    storage_retry: RetryPolicy = STORAGE_POLICY
    poll: PollPolicy = field(default_factory=PollPolicy)
    notify: Notify | None = None  # one line per retry (default: a log warning)
    http: Any = None  # an authorized httplib2 object: googleapiclient instead of services.rest (tests)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_flags(
        cls,
        env: Mapping[str, str],
        *,
        target: str = "ml",
        project: str | None = None,
        region: str | None = None,
        access_token_file: str | None = None,
        api_endpoint: str | None = None,
        notify: Notify | None = None,
    ) -> Settings:
        """The settings a command line asks for: flags first, then the environment (module docstring)."""
        name = target.lower()
        if name not in ("ml", "vertex"):
            raise UsageError(f"--target {target}: expected ml or vertex.")
        # Everything that reaches a host name or a URL path is checked before anything is built or sent.
        region_source = "--region" if region else "CLOUDSDK_COMPUTE_REGION"
        region = region or env.get("CLOUDSDK_COMPUTE_REGION") or None
        if region and name == "vertex":
            _check_region(region, region_source)
        for source, value in (
            ("--project", project),
            ("CLOUDSDK_CORE_PROJECT", env.get("CLOUDSDK_CORE_PROJECT")),
            ("GOOGLE_CLOUD_PROJECT", env.get("GOOGLE_CLOUD_PROJECT")),
        ):
            if value:
                problem = url_value_problem("project", value)
                if problem:
                    raise UsageError(f"{source}: {problem}.")
                break
        for variable, value in (
            ("--api-endpoint", api_endpoint),
            *((v, env.get(v)) for v in ENDPOINT_VARIABLES),
        ):
            if value:
                problem = endpoint_problem(variable, value)
                if problem:
                    raise UsageError(f"{problem}.")
        settings = cls(
            env=dict(env),
            target="vertex" if name == "vertex" else "ml",
            project_flag=project or None,
            region=region or env.get("CLOUDSDK_COMPUTE_REGION") or None,
            access_token_file=access_token_file or None,
            api_endpoint=api_endpoint or None,
            retry=RetryPolicy.from_env(env, API_POLICY),
            storage_retry=RetryPolicy.from_env(env, STORAGE_POLICY),
            poll=PollPolicy.from_env(env),
            notify=notify,
        )
        settings.access_token()  # a bad token is refused now, before anything is uploaded
        return settings

    def with_region(self, region: str | None) -> Settings:
        """The same settings for the job's own region (``training`` reads it from the merged job)."""
        if not region or region == self.region:
            return self
        _check_region(region, "region")
        return dataclasses.replace(self, region=region, _cache={})

    # --- what the settings resolve to ---------------------------------------------------------------------

    @property
    def api(self) -> str:
        """The discovery name of the target's API."""
        return "aiplatform" if self.target == "vertex" else "ml"

    @property
    def token_source(self) -> TokenSource:
        """Where the credentials come from (the token itself is never shown)."""
        if self.access_token_file:
            return "file"
        return "env" if self.env.get("CLOUDSDK_AUTH_ACCESS_TOKEN") else "adc"

    @property
    def hint_flags(self) -> str:
        """Flags to repeat in the commands we suggest, e.g. `` --target vertex --region us-central1``."""
        if self.target == "ml":
            return ""
        return f" --target vertex --region {self.region}" if self.region else " --target vertex"

    def require_region(self) -> str:
        """The Vertex AI region, or a usage error saying how to give one."""
        if not self.region:
            raise UsageError("--target vertex needs a region: pass --region or set CLOUDSDK_COMPUTE_REGION.")
        _check_region(self.region, "region")
        return self.region

    def endpoint(self, api: str) -> str:
        """Root URL for ``api``: ``--api-endpoint`` (for the target's API), the override variable, the default."""
        from mlsubmit.services.connection import endpoint_for

        override = self.api_endpoint if api == self.api else None
        region = self.require_region() if api == "aiplatform" and not override else self.region
        return endpoint_for(api, self.env, override=override, region=region)

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def access_token(self) -> str | None:
        """The checked bearer token of ``--access-token-file`` or CLOUDSDK_AUTH_ACCESS_TOKEN (read once), or None
        for Application Default Credentials (:func:`read_access_token`)."""
        return self._once("token", lambda: read_access_token(self.env, self.access_token_file))  # type: ignore[no-any-return]

    def credentials(self) -> tuple[Any, str | None]:
        """(credentials, ADC project or None), looked up once; only the checked token is passed on."""
        from mlsubmit.services import connection

        def make() -> tuple[Any, str | None]:
            token = self.access_token()
            env = {k: v for k, v in self.env.items() if k != TOKEN_VARIABLE}
            if token:
                env[TOKEN_VARIABLE] = token
            return connection.credentials(env, None)

        return self._once("creds", make)  # type: ignore[no-any-return]

    def project(self) -> str:
        """The project: the flag, the environment, then the ADC project; else a usage error."""
        from mlsubmit.services.connection import resolve_project

        def make() -> str:
            adc = None if self.http is not None else self.credentials()[1]
            project = resolve_project(self.project_flag, self.env, adc)
            problem = url_value_problem("project", project)
            if problem:  # the flag and the environment were checked in from_flags: this is the ADC project
                raise UsageError(f"Application Default Credentials: {problem}; pass --project.")
            return project

        return self._once("project", make)  # type: ignore[no-any-return]

    def authorized_http(self) -> Any:
        """An authorized httplib2 object for googleapiclient's media uploads (``storage``), made on first use."""
        from mlsubmit.services.connection import authorized_http

        if self.http is not None:
            return self.http
        return self._once("http", lambda: authorized_http(self.credentials()[0]))

    # --- factories ---------------------------------------------------------------------------------------

    def wire(self) -> Any:
        """The command's :class:`mlsubmit.services.wire.Wire`: keep-alive connections, deadline, size bound."""
        from mlsubmit.services.wire import Wire, deadline_from_env

        return self._once("wire", lambda: Wire(deadline=deadline_from_env(self.env)))

    def token(self) -> Any:
        """A callable giving the bearer token (a bare token as it is; ADC refreshed when it expires)."""
        from mlsubmit.services.connection import token_source

        return self._once("token-source", lambda: token_source(self.credentials()[0]))

    def service(self, api: str) -> Any:
        """A Resource for ``api`` (ml, aiplatform, logging) at its endpoint: the lean ``services.rest`` client,
        or googleapiclient's over ``http`` when one was injected (tests)."""

        def make() -> Any:
            if self.http is not None:
                from mlsubmit.services.connection import build_service

                return build_service(api, self.http, self.endpoint(api))
            from mlsubmit.services import rest

            return rest.client(api, self.endpoint(api), self.wire(), self.token())

        return self._once(f"service:{api}", make)

    def caller(self, *, poll_capped: bool = False, sleep: Callable[[float], None] | None = None) -> Any:
        """A :class:`mlsubmit.services.ml.Caller` with the retry policy; ``poll_capped``: no retry waits longer
        than the poll interval (while following a job)."""
        from mlsubmit.services.ml import Caller

        policy = self.retry.capped(self.poll.cap) if poll_capped else self.retry
        if sleep is None:
            return Caller(policy=policy, notify=self.notify)
        return Caller(policy=policy, notify=self.notify, sleep=sleep)

    def jobs_backend(self, *, following: bool = False, collection: str | None = None) -> Any:
        """The target's :class:`mlsubmit.services.backends.JobsBackend`: ``MlJobs``, or for Vertex AI the
        ``VertexJobs`` of ``collection`` (``customJobs``, ``hyperparameterTuningJobs``) or, when it is None,
        both collections as one (``VertexAnyJobs``: ``jobs`` commands find either kind)."""

        def make() -> Any:
            caller = self.caller(poll_capped=following)
            if self.target == "vertex":
                region = self.require_region()
                if collection is None:
                    from mlsubmit.services.vertex_tuning import VertexAnyJobs

                    return VertexAnyJobs(self.service("aiplatform"), self.project(), region, caller)
                from mlsubmit.services.vertex import VertexJobs

                return VertexJobs(self.service("aiplatform"), self.project(), region, caller, collection)
            from mlsubmit.services.ml import MlJobs

            return MlJobs(self.service("ml"), self.project(), caller)

        return self._once(f"backend:{following}:{collection}", make)

    def logging(self) -> Any:
        """The Cloud Logging v2 service (for ``--stream-logs``)."""
        return self.service("logging")

    def storage(self) -> Any:
        """The Cloud Storage v1 service for uploads (``services.media.StorageClient``), signed like the API calls
        (or anonymous for an emulator)."""
        from mlsubmit.services.connection import make_storage_service, storage_root_url

        def make() -> Any:
            root, anonymous = storage_root_url(self.env)

            def heavy() -> Any:
                return make_storage_service(self.env, http=None if anonymous else self.authorized_http())

            if self.http is not None:
                return heavy()
            from mlsubmit.services import rest
            from mlsubmit.services.media import StorageClient

            lean = rest.client("storage", root, self.wire(), None if anonymous else self.token())
            return StorageClient(lean)

        return self._once("storage", make)


def _check_region(region: str, source: str) -> None:
    """A region becomes part of the Vertex AI host name ({region}-aiplatform.googleapis.com): check it whole."""
    problem = url_value_problem("region", region)
    if problem:
        raise UsageError(f"{source}: {problem}.")
