"""How to reach the Google APIs, read from flags and environment in one place, with factories for the services.

One :class:`Settings` per command (as twine's ``Settings``): the cli builds it from its flags with
:meth:`Settings.from_flags`, core functions take it instead of long parameter lists, and ask it for what they
need: :meth:`Settings.jobs_backend` (ml or Vertex AI), :meth:`Settings.storage` and :meth:`Settings.logging`.
Everything follows gcloud's conventions so CI setups carry over (README "Credentials and endpoints"):

* project: ``--project``, ``CLOUDSDK_CORE_PROJECT``, ``GOOGLE_CLOUD_PROJECT``, then the ADC project;
* region (Vertex AI): ``--region`` (or the job's region for ``training``), then ``CLOUDSDK_COMPUTE_REGION``;
* token: ``--access-token-file``, ``CLOUDSDK_AUTH_ACCESS_TOKEN``, else Application Default Credentials;
* endpoints: ``--api-endpoint``, else ``CLOUDSDK_API_ENDPOINT_OVERRIDES_{ML,AIPLATFORM,LOGGING}``;
  ``STORAGE_EMULATOR_HOST`` / ``CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE`` for Cloud Storage;
* retries: ``MLSUBMIT_RETRY_INITIAL_DELAY``; polling: ``MLSUBMIT_POLL_INTERVAL`` (README "Retries and polling").

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

Target = Literal["ml", "vertex"]
TokenSource = Literal["file", "env", "adc"]
Notify = Callable[[str], None]


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
        return cls(
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

    def with_region(self, region: str | None) -> Settings:
        """The same settings for the job's own region (``training`` reads it from the merged job)."""
        if not region or region == self.region:
            return self
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

    def credentials(self) -> tuple[Any, str | None]:
        """(credentials, ADC project or None), looked up once."""
        from mlsubmit.services import connection

        return self._once("creds", lambda: connection.credentials(self.env, self.access_token_file))  # type: ignore[no-any-return]

    def project(self) -> str:
        """The project: the flag, the environment, then the ADC project; else a usage error."""
        from mlsubmit.services.connection import resolve_project

        def make() -> str:
            adc = None if self.http is not None else self.credentials()[1]
            return resolve_project(self.project_flag, self.env, adc)

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

        return self._once("token", lambda: token_source(self.credentials()[0]))

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
            return StorageClient(lean, heavy)

        return self._once("storage", make)
