"""How to reach the Google APIs (docs/ci.md): one :class:`Settings` per command, checked in ``from_flags`` before
anything is sent (docs/security.md); services made on first use and closed with the command."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mlsubmit.errors import UsageError
from mlsubmit.job.values import url_value_problem
from mlsubmit.services import connection
from mlsubmit.services.backends import TARGET_APIS, JobsBackend
from mlsubmit.services.retry import API_POLICY, STORAGE_POLICY, PollPolicy, RetryPolicy


class PlannedJob(Protocol):
    """What settings need from a plan (``submit.Plan``): the service it goes to and its merged region."""

    @property
    def service(self) -> str: ...

    @property
    def region(self) -> str | None: ...


@dataclass
class Settings:
    """Connection settings of one command: :meth:`for_job` (it sends a job) or :meth:`from_flags` (it reads)."""

    env: Mapping[str, str]
    target: str = "ml"  # a key of services.backends.TARGET_APIS
    project_flag: str | None = None
    region: str | None = None
    access_token_file: str | None = None
    api_endpoint: str | None = None
    retry: RetryPolicy = API_POLICY
    storage_retry: RetryPolicy = STORAGE_POLICY
    poll: PollPolicy = field(default_factory=PollPolicy)
    notify: Callable[[str], None] | None = None  # one line per retry (default: a log warning)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def for_job(
        cls,
        job: PlannedJob,
        env: Mapping[str, str],
        *,
        project: str | None = None,
        access_token_file: str | None = None,
        api_endpoint: str | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> Settings:
        """The settings of a command that sends ``job``: its service, and its region as the merge decided it."""
        return cls.from_flags(
            env,
            # a TFJob goes to no Google jobs service (service ""); its packages and image still go through
            # Cloud Storage and Cloud Build, which every target shares
            target=job.service or "ml",
            project=project,
            region=job.region,
            access_token_file=access_token_file,
            api_endpoint=api_endpoint,
            notify=notify,
            use_region_variable=False,
        )

    def in_region(self, region: str) -> Settings:
        """The settings in another Vertex AI region (failover), sharing the wire, token and credentials."""
        _check_region(region, "region")
        return self if region == self.region else dataclasses.replace(self, region=region, _cache=self._cache)

    def __enter__(self) -> Settings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the command's connections (the wire), if any were opened."""
        if (wire := self._cache.get("wire")) is not None:
            wire.close()

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
        notify: Callable[[str], None] | None = None,
        use_region_variable: bool = True,  # False: ``region`` is merged already (for_job)
    ) -> Settings:
        """The settings a command line asks for: flags first, then the environment (module docstring)."""
        name = target.lower()
        region_source = "--region" if use_region_variable else "region"
        if name not in TARGET_APIS:
            raise UsageError(f"--target {target}: expected {' or '.join(TARGET_APIS)}.")
        # Everything that reaches a host name or a URL path is checked before anything is built or sent.
        if not region and use_region_variable:
            region, region_source = env.get("CLOUDSDK_COMPUTE_REGION") or None, "CLOUDSDK_COMPUTE_REGION"
        if region and (name == "vertex" or not use_region_variable):
            _check_region(region, region_source)
        projects = {
            "--project": project,
            **{v: env.get(v) for v in ("CLOUDSDK_CORE_PROJECT", "GOOGLE_CLOUD_PROJECT")},
        }
        source, value = next(((s, v) for s, v in projects.items() if v), ("", None))  # the one that is used
        if value and (problem := url_value_problem("project", value)):
            raise UsageError(f"{source}: {problem}.")
        endpoints = {"--api-endpoint": api_endpoint, **{v: env.get(v) for v in connection.ENDPOINT_VARIABLES}}
        for variable, value in endpoints.items():
            if value and (problem := connection.endpoint_problem(variable, value)):
                raise UsageError(f"{problem}.")
        settings = cls(
            env=dict(env),
            target=name,
            project_flag=project or None,
            region=region or None,
            access_token_file=access_token_file or None,
            api_endpoint=api_endpoint or None,
            retry=RetryPolicy.from_env(env, API_POLICY),
            storage_retry=RetryPolicy.from_env(env, STORAGE_POLICY),
            poll=PollPolicy.from_env(env),
            notify=notify,
        )
        settings.access_token()  # a bad token is refused now, before anything is uploaded
        return settings

    @property
    def api(self) -> str:
        """The discovery name of the target's API."""
        return TARGET_APIS[self.target]

    @property
    def hint_flags(self) -> str:
        """Flags to repeat in the commands we suggest, e.g. `` --target vertex --region us-central1``."""
        if self.target == "ml":
            return ""
        return f" --target {self.target}" + (f" --region {self.region}" if self.region else "")

    def require_region(self) -> str:
        """The Vertex AI region, or a usage error saying how to give one."""
        if not self.region:
            raise UsageError("--target vertex needs a region: pass --region or set CLOUDSDK_COMPUTE_REGION.")
        _check_region(self.region, "region")
        return self.region

    def endpoint(self, api: str) -> str:
        """Root URL for ``api``: ``--api-endpoint`` (for the target's API), the override variable, the default."""
        variable, default = connection.APIS[api]
        override = self.api_endpoint if api == self.api else None
        region = self.require_region() if api == "aiplatform" and not override else self.region
        url = override or self.env.get(variable) or default.format(region=region)
        return url if url.endswith("/") else url + "/"

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def access_token(self) -> str | None:
        """The checked bearer token (read once), or None for ADC (:func:`read_access_token`)."""
        return self._once("token", lambda: connection.read_access_token(self.env, self.access_token_file))  # type: ignore[no-any-return]

    def credentials(self) -> tuple[Any, str | None]:
        """(credentials, ADC project or None), looked up once; only the checked token is passed on."""
        return self._once("creds", lambda: connection.credentials(self.access_token()))  # type: ignore[no-any-return]

    def project(self) -> str:
        """The project: the flag, the environment, then the ADC project; else a usage error."""
        return self._once(  # type: ignore[no-any-return]
            "project",
            lambda: connection.project_of(self.project_flag, self.env, lambda: self.credentials()[1]),
        )

    def wire(self) -> Any:
        """The command's :class:`mlsubmit.services.wire.Wire`: keep-alive connections, deadline, size bound."""
        from mlsubmit.services.wire import Wire, deadline_from_env

        return self._once("wire", lambda: Wire(deadline=deadline_from_env(self.env)))

    def token(self) -> Any:
        """A callable giving the bearer token (a bare token as it is; ADC refreshed when it expires)."""
        return self._once("token-source", lambda: connection.token_source(self.credentials()[0]))

    def client(self, api: str, wire: Any = None, token: Callable[[], str] | None = None) -> Any:
        """A ``services.rest`` Resource for ``api`` on ``wire`` with ``token`` (default: the command's ones)."""
        from mlsubmit.services import rest

        if api == "storage":
            root, anonymous = connection.storage_root_url(self.env)  # an emulator is called anonymously
        else:
            root, anonymous = self.endpoint(api.split(".")[0]), False
        return rest.client(api, root, wire or self.wire(), None if anonymous else token or self.token())

    def service(self, api: str) -> Any:
        """The command's Resource for ``api`` (ml, aiplatform, logging, storage), made once."""
        return self._once(f"service:{api}:{self.region}", lambda: self.client(api))

    def caller(self, *, poll_capped: bool = False) -> Any:
        """A retrying :class:`~mlsubmit.services.ml.Caller`; ``poll_capped``: no wait longer than a poll's."""
        from mlsubmit.services.ml import Caller

        policy = self.retry.capped(self.poll.cap) if poll_capped else self.retry
        return Caller(policy=policy, notify=self.notify)

    def jobs_backend(self, *, following: bool = False, collection: str | None = None) -> JobsBackend:
        """The target's JobsBackend: ``MlJobs``, ``VertexJobs`` of ``collection``, or (None) ``VertexAnyJobs``."""

        def make() -> Any:
            caller = self.caller(poll_capped=following)
            if self.target == "vertex":
                region = self.require_region()
                from mlsubmit.services.vertex import VertexAnyJobs, VertexJobs

                if collection is None:
                    return VertexAnyJobs(self.service("aiplatform"), self.project(), region, caller)
                return VertexJobs(self.service("aiplatform"), self.project(), region, caller, collection)
            from mlsubmit.services.ml import MlJobs

            return MlJobs(self.service("ml"), self.project(), caller)

        backend: JobsBackend = self._once(f"backend:{following}:{collection}:{self.region}", make)
        return backend

    def cloud_builds(self) -> Any:
        """The project's Cloud Build calls (``services.cloudbuild.CloudBuilds``), Cloud Storage for context and log."""
        from mlsubmit.services.cloudbuild import CloudBuilds

        return self._once(
            "cloudbuild",
            lambda: CloudBuilds(
                self.service("cloudbuild"), self.project(), self.caller(), storage=self.storage()
            ),
        )

    def logging(self) -> Any:
        """The Cloud Logging v2 service (for ``--stream-logs``)."""
        return self.service("logging")

    def storage(self) -> Any:
        """The Cloud Storage v1 Resource, signed like the API calls (anonymous for an emulator)."""
        return self.service("storage")


def _check_region(region: str, source: str) -> None:
    """A region becomes part of the Vertex AI host name ({region}-aiplatform.googleapis.com): check it whole."""
    if problem := url_value_problem("region", region):
        raise UsageError(f"{source}: {problem}.")
