"""The preflight's read-only calls, all sent at once, each thread on its own wire (the token still only to each
client's origin); a failure is kept as an :class:`Answer`, never raised: the checks decide what it means."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from mlsubmit.errors import ApiError, HostNotFoundError, MlsubmitError
from mlsubmit.services.retry import unresolved

MAX_WORKERS = 16  # a job needing every check makes 13 reads: one wave
VERTEX_API = "aiplatform.googleapis.com"
# Pages of the quota metric list read at most (a page holds up to 100 metrics; Vertex has a few hundred).
MAX_QUOTA_PAGES = 20


@dataclass(frozen=True)
class Answer:
    """What a read brought back: its ``value``, or the ``status`` (None: no HTTP answer) and ``error`` text."""

    value: Any = None
    status: int | None = None
    error: str | None = None
    reached: bool = True  # False: the host name did not resolve, nothing was sent

    @property
    def ok(self) -> bool:
        return self.error is None


Read = Callable[["Reader"], Any]


class Reader:
    """Project, region, caller and clients on this thread's ``wire``; made before any thread starts."""

    def __init__(self, settings: Any, *, region: str | None = None, wire: Any = None) -> None:
        if region is not None:  # a failover candidate's: the same credentials and project, its endpoint
            settings = settings.in_region(region)
        self.settings = settings
        self.project: str = settings.project()
        self.region: str = settings.require_region()
        self.caller = settings.caller()
        self.token = _locked(settings.token())  # services.registry decides which hosts see it
        self.wire = wire

    def client(self, api: str) -> Any:
        """A ``services.rest`` Resource for ``api`` on this thread's wire."""
        return self.settings.client(api, self.wire, self.token)

    def on(self, wire: Any) -> Reader:
        """The same reader on ``wire`` (one per thread)."""
        twin = copy.copy(self)
        twin.wire = wire
        return twin


def _locked(token: Callable[[], str]) -> Callable[[], str]:
    """The token source behind a lock: Application Default Credentials refresh once, not once per thread."""
    lock = threading.Lock()

    def get() -> str:
        with lock:
            return token()

    return get


def _answer(read: Read, reader: Reader) -> Answer:
    from googleapiclient.errors import HttpError

    from mlsubmit.services.ml import error_details

    try:
        return Answer(value=read(reader))
    except HttpError as err:
        status, gstatus, message = error_details(err)
        return Answer(status=status, error=f"HTTP {status} {gstatus}: {message}".replace(" :", ":"))
    except HostNotFoundError as err:
        return Answer(error=str(err), reached=False)
    except ApiError as err:
        return Answer(status=err.status, error=str(err))
    except (MlsubmitError, OSError, TimeoutError, ValueError) as err:
        return Answer(error=f"{type(err).__name__}: {err}", reached=not unresolved(err))


def fetch(reads: Mapping[str, Read], reader: Reader) -> dict[str, Answer]:
    """Run every read at once (each on its own wire, at most :data:`MAX_WORKERS` in flight); answers by key."""
    from mlsubmit.services.wire import Wire, deadline_from_env

    if not reads:
        return {}
    deadline = deadline_from_env(reader.settings.env)
    wires = [Wire(deadline=deadline) for _ in reads]

    def run(read: Read, wire: Wire) -> Answer:
        try:
            return _answer(read, reader.on(wire))
        finally:
            wire.close()

    pool = ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(reads)), thread_name_prefix="preflight")
    try:
        futures = {
            key: pool.submit(run, read, wire) for (key, read), wire in zip(reads.items(), wires, strict=True)
        }
        return {key: future.result() for key, future in futures.items()}
    except BaseException:
        # Ctrl-C (or a bug): nothing new starts, and the reads in flight end now, their sockets closed under
        # them, instead of at their deadline (the interpreter waits for the pool's threads before it exits).
        for wire in wires:
            wire.close()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _read(api: str, request: Callable[[Any], Any], what: str) -> Read:
    """A read: ``request(client of api)`` with the retry policy; an error answer is raised as it came."""

    def read(reader: Reader) -> Any:
        client = reader.client(api)
        return reader.caller.execute(lambda: request(client), what)

    return read


def api_service(reader: Reader) -> Any:
    """serviceusage v1 ``services.get`` of the Vertex AI API (its ``name`` carries the project number)."""
    name = f"projects/{reader.project}/services/{VERTEX_API}"
    return _read("serviceusage", lambda su: su.services().get(name=name), "serviceusage services.get")(reader)


def bucket(name: str) -> Read:
    """storage v1 ``buckets.get`` (its ``location``, ``locationType`` and ``customPlacementConfig``)."""
    return _read("storage", lambda gcs: gcs.buckets().get(bucket=name), f"storage buckets.get {name}")


def bucket_permissions(name: str, permissions: list[str]) -> Read:
    """storage v1 ``buckets.testIamPermissions``: which of ``permissions`` the caller has on the bucket."""
    return _read(
        "storage",
        lambda gcs: gcs.buckets().testIamPermissions(bucket=name, permissions=permissions),
        f"storage buckets.testIamPermissions {name}",
    )


def service_account_name(email: str) -> str:
    """``projects/P/serviceAccounts/EMAIL``, P from the domain, else ``-`` (which gets a 403 for a 404)."""
    _, _, domain = email.partition("@")
    suffix = ".iam.gserviceaccount.com"
    project = domain.removesuffix(suffix) if domain.endswith(suffix) else "-"
    return f"projects/{project}/serviceAccounts/{email}"


def service_account(email: str) -> Read:
    """iam v1 ``projects.serviceAccounts.get``."""
    name = service_account_name(email)
    return _read(
        "iam", lambda iam: iam.projects().serviceAccounts().get(name=name), "iam serviceAccounts.get"
    )


def service_account_permissions(email: str, permissions: list[str]) -> Read:
    """iam v1 ``projects.serviceAccounts.testIamPermissions`` (``iam.serviceAccounts.actAs``)."""
    name = service_account_name(email)
    return _read(
        "iam",
        lambda iam: (
            iam.projects()
            .serviceAccounts()
            .testIamPermissions(resource=name, body={"permissions": permissions})
        ),
        "iam serviceAccounts.testIamPermissions",
    )


def _keys(kms: Any) -> Any:
    return kms.projects().locations().keyRings().cryptoKeys()


def crypto_key(name: str) -> Read:
    """cloudkms v1 ``cryptoKeys.get`` (``primary.state``, ``purpose``)."""
    return _read("cloudkms", lambda kms: _keys(kms).get(name=name), "cloudkms cryptoKeys.get")


def crypto_key_policy(name: str) -> Read:
    """cloudkms v1 ``cryptoKeys.getIamPolicy`` (who may use the key)."""
    return _read(
        "cloudkms", lambda kms: _keys(kms).getIamPolicy(resource=name), "cloudkms cryptoKeys.getIamPolicy"
    )


def _list(reader: Reader, method: Callable[..., Any], params: dict[str, Any], items: str, **kw: Any) -> Any:
    from mlsubmit.services.ml import iter_pages

    return list(iter_pages(reader.caller, method, params, items=items, project=reader.project, **kw))


def quota_metrics(reader: Reader) -> Any:
    """serviceusage v1beta1 ``consumerQuotaMetrics.list`` of Vertex AI (FULL view), every page's ``metrics``."""
    return _list(
        reader,
        reader.client("serviceusage.v1beta1").services().consumerQuotaMetrics().list,
        {"parent": f"projects/{reader.project}/services/{VERTEX_API}", "view": "FULL"},
        "metrics",
        what="serviceusage consumerQuotaMetrics.list",
        permission="serviceusage.quotas.get",
        limit=100 * MAX_QUOTA_PAGES,
    )


def _running(collection: str) -> Read:
    def read(reader: Reader) -> Any:
        return _list(
            reader,
            getattr(reader.client("aiplatform").projects().locations(), collection)().list,
            {
                "parent": f"projects/{reader.project}/locations/{reader.region}",
                "filter": 'state="JOB_STATE_RUNNING"',
            },
            collection,
            what=f"aiplatform {collection}.list",
            permission=f"aiplatform.{collection}.list",
            limit=1000,
        )

    return read


# aiplatform v1 ``customJobs.list`` and ``hyperparameterTuningJobs.list`` of the region's running jobs: what
# holds quota now (a tuning job holds its parallel trials').
running_jobs = _running("customJobs")
running_tuning_jobs = _running("hyperparameterTuningJobs")


def image(uri: str) -> Read:
    """Registry v2 ``HEAD`` of an image's manifest (``services.registry``); a missing tag is a 404 answer."""

    def read(reader: Reader) -> Any:
        from mlsubmit.services.registry import registry_lookup

        if "@" in uri:
            raise ValueError("an image named by digest is not looked up here")
        repository, colon, tag = uri.rpartition(":")
        if not colon or "/" in tag:  # no tag: ``latest``, as docker pulls
            repository, tag = uri, "latest"
        digest = registry_lookup(reader.wire, reader.token, reader.settings.retry)(repository, tag)
        if digest is None:
            raise ApiError(f"{uri}: no such manifest", status=404)
        return digest

    return read
