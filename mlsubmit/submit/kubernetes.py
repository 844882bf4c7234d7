"""A TFJob's submit (docs/kubernetes.md), one for the command line and the Python API: where it goes (checked
offline), the words for a local package that cannot reach the cluster, and the create: the cluster's checks,
then staging and the image, then the TFJob exactly once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import InvalidJobError, Problem, UsageError

if TYPE_CHECKING:
    from mlsubmit.services.backends import CreateResult
    from mlsubmit.services.kubernetes.tfjobs import KubeJobs
    from mlsubmit.submit.plan import Plan
    from mlsubmit.submit.run import RunOptions


@dataclass(frozen=True)
class Where:
    """``--context``, ``--namespace``, ``--queue`` over the config file's ``kubernetes:`` block."""

    context: str | None
    namespace: str | None
    queue: str | None

    @classmethod
    def of(cls, opts: Mapping[str, Any], block: Any = None, *, flag: str = "--{}") -> Where:
        """The flags over the file's block; values that reach a URL or a label are checked here, offline.
        ``flag``: how an error names the setting (``flags[{!r}]`` for the Python API)."""
        from mlsubmit.services.kubernetes.kubeconfig import namespace_problem
        from mlsubmit.targets.tfjob import label_value_problem

        file = block if isinstance(block, dict) else {}
        values = {k: opts.get(k) or file.get(k) for k in ("context", "namespace", "queue")}
        checks = {"namespace": namespace_problem, "queue": label_value_problem}
        for key, value in values.items():
            if value is not None and not isinstance(value, str):
                named = flag.format(key) if opts.get(key) else f"the config file's kubernetes.{key}"
                raise UsageError(f"{named}: expected a string, got {type(value).__name__}.")
            if value and key in checks and (problem := checks[key](value)):
                raise UsageError(f"{flag.format(key)}: {problem}.")
        return cls(**values)

    @property
    def hint_flags(self) -> str:
        given = [f" --{k} {v}" for k, v in (("context", self.context), ("namespace", self.namespace)) if v]
        return " --target kubernetes" + "".join(given)

    def namespace_offline(self, env: Mapping[str, str]) -> str:
        """A dry run's namespace: the flag or file's, the kubeconfig context's, else ``default``."""
        if self.namespace:
            return self.namespace
        from mlsubmit.services.kubernetes.kubeconfig import load_context

        try:
            return load_context(env, context=self.context).namespace
        except UsageError:
            if self.context:
                raise
            return "default"


UNREACHABLE = "local packages need a staging location"
STAGE_FOR_THE_CLUSTER = (
    "--target kubernetes: the local package cannot reach the cluster from this machine; pass --staging-bucket "
    "gs://BUCKET (the pods fetch it from there) and, to run it in an image of its own, --build-image"
)


def reachable(err: InvalidJobError) -> InvalidJobError:
    """A local package needs a place the cluster reads it from: say so in the words of this target."""
    said = (
        Problem(STAGE_FOR_THE_CLUSTER, p.path, p.file) if p.message.startswith(UNREACHABLE) else p
        for p in err.problems
    )
    return InvalidJobError(list(said))


def open_cluster(where: Where, env: Mapping[str, str], notify: Callable[[str], None]) -> KubeJobs:
    """The TFJobs backend of the kubeconfig's context (nothing sent yet); the caller closes its client."""
    from mlsubmit.services.kubernetes.client import KubeClient
    from mlsubmit.services.kubernetes.kubeconfig import load_context
    from mlsubmit.services.kubernetes.tfjobs import KubeJobs
    from mlsubmit.targets.tfjob import k8s_name

    ctx = load_context(env, context=where.context, namespace=where.namespace)
    return KubeJobs(KubeClient(ctx, env, notify=notify), k8s_name)


@dataclass(frozen=True)
class Created:
    """What :func:`create_on_cluster` did: the plan realized, the manifest sent, the answer, the preflight's report."""

    plan: Plan
    body: dict[str, Any]
    result: CreateResult
    checked: dict[str, Any] | None


def create_on_cluster(
    plan: Plan,
    where: Where,
    backend: KubeJobs,
    *,
    preflight: bool,
    connection: Mapping[str, Any],
    options: RunOptions,
    notify: Callable[[str], None],
) -> Created:
    """The cluster's checks, then staging and the image, then the TFJob created exactly once."""
    from mlsubmit.targets.tfjob import for_cluster

    checked: dict[str, Any] | None = None
    if preflight:
        from mlsubmit.services.kubernetes.preflight import ClusterReport, check_cluster
        from mlsubmit.services.kubernetes.tfjobs import PLURALS
        from mlsubmit.submit.preflight import judged, tell

        report = check_cluster(
            backend, ClusterReport(), queue=where.queue, plural=PLURALS[str(plan.body["kind"])]
        )
        tell(report.checks)  # ok lines with --verbosity info only
        checked = judged(report.checks)  # beside the job in --format json/yaml, as Vertex AI's; or refused
    if plan.uploads or plan.image is not None:  # packages to Cloud Storage, the image through a builder
        from mlsubmit.services.settings import Settings
        from mlsubmit.submit.run import realize

        with Settings.for_job(plan, backend.client.env, **connection, notify=notify) as settings:
            plan, _sent = realize(plan, settings, options)  # stage, then the image pinned by digest
    body = for_cluster(plan.body, namespace=backend.namespace, queue=where.queue)
    return Created(plan, body, backend.create(body, plan.job_id), checked)
