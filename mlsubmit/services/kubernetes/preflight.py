"""Read-only checks before a TFJob is created (docs/kubernetes.md "What is checked"): the API server, the
resource, the namespace, RBAC (SelfSubjectAccessReview) and Kueue's LocalQueue. A refusal is exit 2."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlsubmit.errors import ApiError, KubeApiError
from mlsubmit.services.kubernetes.client import path_of
from mlsubmit.services.kubernetes.tfjobs import GROUP_VERSION, KubeJobs
from mlsubmit.services.preflight.check import OK, REFUSED, UNCHECKED, Check, Status

KUEUE = "apis/kueue.x-k8s.io/v1beta1"


@dataclass
class ClusterReport:
    """The checks in the order they ran, as Vertex AI's preflight reports them (``services.preflight.check``)."""

    checks: list[Check] = field(default_factory=list)
    # the check running now: what `mlsubmit preflight` could not check when a call fails
    step: str = "api server"

    def add(self, name: str, status: Status, message: str) -> bool:
        self.checks.append(Check(name, status, message))
        return status != REFUSED


def check_cluster(
    backend: KubeJobs, report: ClusterReport, *, queue: str | None, plural: str
) -> ClusterReport:
    """Run the checks in order for the job's kind, none after one it needs failed. A failed call raises
    :class:`ApiError`; ``report`` keeps the checks made until then and the one running (``step``)."""
    client, ns = backend.client, backend.namespace
    try:
        version = client.call("GET", "/version")
    except KubeApiError as err:
        if err.status in (401, 403):
            report.add("credentials", REFUSED, f"the API server refused our credentials ({err})")
            return report
        raise
    except OSError as err:
        raise ApiError(f"the API server {client.ctx.server} does not answer ({err}).") from None
    report.add("api server", OK, f"{client.ctx.server} answers (Kubernetes {version.get('gitVersion', '?')})")
    report.step = f"{plural} resource"
    served = backend.read("/" + GROUP_VERSION) or {}
    names = {r.get("name") for r in served.get("resources") or [] if isinstance(r, dict)}
    if not report.add(
        f"{plural} resource",
        OK if plural in names else REFUSED,
        f"kubeflow.org/v1 {plural} is served"
        if plural in names
        else f"kubeflow.org/v1 {plural} is not served: install the Kubeflow training operator (its CRDs) on the cluster",
    ):
        return report
    report.step = "namespace"
    try:
        client.call("GET", path_of("api/v1", "namespaces", ns))
        report.add("namespace", OK, f"{ns} exists")
    except KubeApiError as err:
        if err.status == 404:
            report.add(
                "namespace",
                REFUSED,
                f"namespace {ns} does not exist (kubectl create namespace {ns}, or pass --namespace)",
            )
            return report
        if err.status != 403:  # a user may be allowed to create TFJobs without reading namespaces
            raise
        report.add("namespace", UNCHECKED, f"{ns} is not readable by this user; the access review decides")
    report.step = "access"
    attributes = {"group": "kubeflow.org", "resource": plural, "verb": "create", "namespace": ns}
    review = client.call(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        },
    )
    status = review.get("status") or {}
    allowed = status.get("allowed") is True
    reason = f" ({str(status.get('reason'))[:200]})" if status.get("reason") else ""
    if not report.add(
        "access",
        OK if allowed else REFUSED,
        f"may create {plural} in {ns}"
        if allowed
        else f"RBAC does not allow creating {plural} in {ns}{reason}",
    ):
        return report
    if queue:
        report.step = "queue"
        if backend.read(path_of(KUEUE, "namespaces", ns, "localqueues", queue)) is not None:
            report.add("queue", OK, f"Kueue LocalQueue {queue} exists in {ns}")
        else:
            report.add(
                "queue", REFUSED, f"no Kueue LocalQueue {queue} in {ns} (kubectl get localqueues -n {ns})"
            )
    return report
