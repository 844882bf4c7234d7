"""TFJobs (and PyTorchJobs) on a cluster as a JobsBackend (docs/kubernetes.md): a 409 or a lost answer is read
back and adopted only with the same ``mlsubmit/submission`` digest; cancel is a Foreground DELETE."""

from __future__ import annotations

import builtins
import http.client
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from mlsubmit import console
from mlsubmit.errors import ApiError, KubeApiError
from mlsubmit.services import retry
from mlsubmit.services.backends import CreateResult
from mlsubmit.services.kubernetes.client import MAX_LOG_BYTES, KubeClient, path_of

GROUP_VERSION = "apis/kubeflow.org/v1"
PLURAL = "tfjobs"
# The kinds a job becomes (targets.tfjob: PyTorchJob for a PyTorch trainer), in the order `jobs` looks for one.
PLURALS = {"TFJob": "tfjobs", "PyTorchJob": "pytorchjobs"}
KINDS = {plural: kind for kind, plural in PLURALS.items()}
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "mlsubmit"
JOB_ID_ANNOTATION = "mlsubmit/job-id"
SUBMISSION_ANNOTATION = "mlsubmit/submission"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
# Who owns the fields it sets (server-side apply's field manager), as kubectl says "kubectl-create".
FIELD_MANAGER = {"fieldManager": "mlsubmit"}
PAGE_SIZE = 500
MAX_PAGES = 1000  # a continue token that never ends is a misbehaving server
# The operator's condition types -> the ml-style state every target shows (latest true condition wins).
CONDITION_STATES = {
    "Created": "QUEUED",
    "Suspended": "QUEUED",
    "Running": "RUNNING",
    "Restarting": "RUNNING",
    "Succeeded": "SUCCEEDED",
    "Failed": "FAILED",
}


def _why(err: Exception) -> str:
    """A failure in a retry line: the server's own words, or what broke the connection."""
    return str(err).rstrip(".") if isinstance(err, ApiError) else f"{type(err).__name__}: {err}"[:300]


def state_of_tfjob(obj: dict[str, Any]) -> str:
    """The ml-style state of a TFJob: the last condition whose status is True; CANCELLING once deleted."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    conditions = status.get("conditions") if isinstance(status, dict) else None
    state = "QUEUED"
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("status") == "True" and cond.get("type") in CONDITION_STATES:
            state = CONDITION_STATES[str(cond["type"])]
    if meta.get("deletionTimestamp") and state not in ("SUCCEEDED", "FAILED"):
        return "CANCELLING"
    return state


def replica_name(pod: dict[str, Any]) -> str:
    """``worker-1``: a TFJob pod's replica type (lower case) and index, from the operator's labels."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    kind = str(labels.get(REPLICA_TYPE_LABEL) or "replica").lower()
    return f"{kind[:40]}-{str(labels.get(REPLICA_INDEX_LABEL, '?'))[:12]}"


def pod_failure(pod: dict[str, Any]) -> str | None:
    """``worker-1 exited with code 1 (Error)`` for a pod whose container ended badly, else None."""
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        term = ((cs or {}).get("state") or {}).get("terminated") or {}
        if term and term.get("exitCode") not in (0, None):
            reason = f" ({term['reason']})" if term.get("reason") else ""
            return f"{replica_name(pod)} exited with code {str(term['exitCode'])[:12]}{reason[:80]}"
    if status.get("phase") == "Failed":
        return f"{replica_name(pod)} failed" + (
            f": {str(status['message'])[:300]}" if status.get("message") else ""
        )
    return None


class KubeJobs:
    """The TFJobs of one namespace (module docstring). ``name_of`` maps a JOB id to its TFJob name."""

    def __init__(self, client: KubeClient, name_of: Callable[[str], str]) -> None:
        self.client = client
        self.namespace = client.ctx.namespace
        self.project = f"{client.ctx.name}/{self.namespace}"  # where jobs live, for messages
        self.name_of = name_of
        self.seen: set[str] = set()  # names this command read or deleted: a 404 afterwards means CANCELLED
        self.plural_of: dict[str, str] = {}  # name -> tfjobs or pytorchjobs, once known

    def collection(self, plural: str) -> str:
        return path_of(GROUP_VERSION, "namespaces", self.namespace, plural)

    def item(self, name: str, plural: str | None = None) -> str:
        return path_of(
            GROUP_VERSION, "namespaces", self.namespace, plural or self.plural_of.get(name, PLURAL), name
        )

    def read(self, path: str) -> dict[str, Any] | None:
        """The object at ``path``, None for a 404."""
        try:
            return self.client.call("GET", path)
        except KubeApiError as err:
            if err.status == 404:
                return None
            raise

    def _find(self, name: str) -> dict[str, Any] | None:
        """The job named ``name`` of whichever kind it is (a kind known from this command is read directly)."""
        for plural in [self.plural_of[name]] if name in self.plural_of else PLURALS.values():
            if (found := self.read(self.item(name, plural))) is not None:
                self.plural_of[name] = plural
                return found
        return None

    def create(self, body: dict[str, Any], job_id: str) -> CreateResult:
        """Create ``body`` exactly once (module docstring)."""
        name = str(body["metadata"]["name"])
        plural = self.plural_of[name] = PLURALS[str(body["kind"])]
        attempt = 0
        while True:
            attempt += 1
            try:
                made = self.client.call("POST", self.collection(plural), body=body, query=FIELD_MANAGER)
                return CreateResult(self.view(made), recovered=False)  # made now, by this attempt
            except KubeApiError as err:  # 409: the name is taken; by this job's earlier attempt?
                if err.status != 409 and not retry.is_transient(err):
                    raise
                failure: Exception = err
            except (OSError, http.client.HTTPException) as err:  # the answer was lost: did the create happen?
                failure = err
            try:
                found = self.read(self.item(name))
            except (KubeApiError, OSError, http.client.HTTPException) as err:
                if isinstance(err, KubeApiError) and not retry.is_transient(err):
                    raise
                found = None  # unknown yet: the next create answers 409 if the last one was made
            if found is not None:
                if self._ours(found, body, job_id):
                    return CreateResult(self.view(found), recovered=True)
                raise self._taken(name, found)
            policy = self.client.policy
            if policy.attempts is not None and attempt >= policy.attempts:
                raise ApiError(
                    f"creating {body['kind']} {name} failed {attempt} times; last error: {_why(failure)}"
                ) from None
            delay = policy.wait(attempt, None)
            if self.client.notify is not None:
                self.client.notify(f"creating {body['kind']} {name}: {_why(failure)}; retrying in {delay:g}s")
            console.current().wait(delay)

    def _ours(self, found: dict[str, Any], body: dict[str, Any], job_id: str) -> bool:
        have = (found.get("metadata") or {}).get("annotations") or {}
        want = (body.get("metadata") or {}).get("annotations") or {}
        return (
            have.get(JOB_ID_ANNOTATION) == job_id
            and bool(want.get(SUBMISSION_ANNOTATION))
            and have.get(SUBMISSION_ANNOTATION) == want.get(SUBMISSION_ANNOTATION)
        )

    def _taken(self, name: str, found: dict[str, Any]) -> ApiError:
        other = ((found.get("metadata") or {}).get("annotations") or {}).get(JOB_ID_ANNOTATION)
        who = f"job {other!r} with another definition" if other else "an object mlsubmit did not make"
        return ApiError(
            f"TFJob name {name!r} is already taken in namespace {self.namespace} by {who}; choose another JOB "
            f"id (or delete it: kubectl delete tfjob {name} -n {self.namespace}).",
            status=409,
        )

    def get(self, job_id: str) -> dict[str, Any]:
        """The job as every target shows it (jobId, state, times, errorMessage) with the TFJob beside it."""
        name = self.name_of(job_id)
        obj = self._find(name)
        if obj is None and name in self.seen:  # deleted while we follow it
            return {
                "jobId": job_id,
                "state": "CANCELLED",
                "errorMessage": f"{KINDS.get(self.plural_of.get(name, PLURAL), 'TFJob')} {name} was deleted",
                "kubernetes": {"name": name, "namespace": self.namespace},
            }
        if obj is None:
            raise ApiError(
                f"no TFJob or PyTorchJob {name} (job {job_id}) in namespace {self.namespace}.", status=404
            )
        self.seen.add(name)
        view = self.view(obj)
        if view["state"] == "FAILED" and (failures := [f for f in map(pod_failure, self.pods(name)) if f]):
            view["errorMessage"] = "; ".join(failures[:4]) + (
                f" ({view['errorMessage']})" if view.get("errorMessage") else ""
            )
        return view

    def view(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A TFJob as the ml-style job dict (module docstring)."""
        meta = obj.get("metadata") or {}
        status = obj.get("status") or {}
        out: dict[str, Any] = {
            "jobId": (meta.get("annotations") or {}).get(JOB_ID_ANNOTATION) or meta.get("name"),
            "state": state_of_tfjob(obj),
        }
        times = (meta.get("creationTimestamp"), status.get("startTime"), status.get("completionTime"))
        out.update({k: v for k, v in zip(("createTime", "startTime", "endTime"), times, strict=True) if v})
        for cond in status.get("conditions") or []:  # the first true Failed condition says why
            if isinstance(cond, dict) and cond.get("type") == "Failed" and cond.get("status") == "True":
                if cond.get("message"):
                    out["errorMessage"] = str(cond["message"])[:1000]
                break
        out["kubernetes"] = {
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or self.namespace,
            "uid": meta.get("uid"),
            "conditions": status.get("conditions") or [],
            "replicaStatuses": status.get("replicaStatuses") or {},
        }
        return out

    def iter_list(self, filter_: str | None = None, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """The namespace's jobs made by mlsubmit, page by page; ``filter_``: a label selector added to ours."""
        return itertools.islice(self._every_kind(filter_), limit)

    def _every_kind(self, filter_: str | None) -> Iterator[dict[str, Any]]:
        served = 0
        for plural in PLURALS.values():
            try:
                yield from self._list(plural, filter_)
                served += 1
            except KubeApiError as err:
                if err.status != 404:  # 404: the cluster does not serve this kind (no PyTorchJob CRD)
                    raise
        if not served:
            raise ApiError(
                "listing jobs: the cluster serves neither tfjobs nor pytorchjobs (kubeflow.org/v1)."
            )

    def _list(self, plural: str, filter_: str | None) -> Iterator[dict[str, Any]]:
        selector = f"{MANAGED_BY}={MANAGED_BY_VALUE}" + (f",{filter_}" if filter_ else "")
        token: str | None = None
        for _ in range(MAX_PAGES):
            page = self.client.call(
                "GET",
                self.collection(plural),
                query={"labelSelector": selector, "limit": PAGE_SIZE, "continue": token},
            )
            items = page.get("items")
            if not isinstance(items, list):
                raise ApiError(f"listing {plural}: the answer has no items list (kind {page.get('kind')!r}).")
            yield from (self.view(obj) for obj in items)
            if not (token := (page.get("metadata") or {}).get("continue") or None):
                return
        raise ApiError(
            f"listing {plural}: more than {MAX_PAGES} pages; the server's continue token never ends."
        )

    def list(self, filter_: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """:meth:`iter_list` as a list."""
        return list(self.iter_list(filter_, limit))

    def cancel(self, job_id: str) -> None:
        """Delete the TFJob with Foreground propagation (its pods go first)."""
        name = self.name_of(job_id)
        body = {"propagationPolicy": "Foreground"}  # what `kubectl delete --cascade=foreground` sends
        if name not in self.plural_of:
            self._find(name)
        try:
            self.client.call("DELETE", self.item(name), body=body)
        except KubeApiError as err:
            if err.status != 404:
                raise
        self.seen.add(name)

    def pods(self, name: str) -> builtins.list[dict[str, Any]]:
        """The pods of TFJob ``name`` (the operator's job-name label), by replica type and index."""
        page = self.client.call(
            "GET",
            path_of("api/v1", "namespaces", self.namespace, "pods"),
            query={"labelSelector": f"{JOB_NAME_LABEL}={name}"},
        )
        return sorted((p for p in page.get("items") or [] if isinstance(p, dict)), key=replica_name)

    def log(
        self, pod: str, *, since: str | None = None, previous: bool = False, container: str = "tensorflow"
    ) -> str:
        """A pod's log with timestamps (``sinceTime``), bounded; ``previous``: the container before a restart."""
        query = {
            "container": container,
            "timestamps": "true",
            "sinceTime": since,
            "previous": "true" if previous else None,
            "limitBytes": MAX_LOG_BYTES,
        }
        raw = self.client.raw(
            "GET",
            path_of("api/v1", "namespaces", self.namespace, "pods", pod, "log"),
            query=query,
            accept="*/*",
            max_bytes=MAX_LOG_BYTES + 65536,
        )
        return raw.decode("utf-8", "replace")
