"""The one place a validated ml v1 Job becomes the body of the engine it goes to (docs/architecture.md):
``submit.plan`` calls :func:`translate` once, so a dry run, ``training`` and ``export`` show the same body.
:func:`rules_for` names the rules the job is checked by first; ``checked=True`` says they ran already."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mlsubmit.job.rules import TargetRules

Kind = Literal["ml", "vertex", "kubernetes", "customjob", "hptuningjob", "tfjob"]  # kubernetes: a TFJob too
CLUSTER_KINDS = ("kubernetes", "tfjob")


@dataclass(frozen=True)
class Translation:
    """The body, the service (``services.backends.TARGET_APIS``) and collection it is created in (none for a
    TFJob: a cluster takes it), and the warnings about what the target cannot express."""

    body: dict[str, Any]
    collection: str = "jobs"
    warnings: tuple[str, ...] = field(default=())
    service: str = "ml"


def rules_for(kind: str) -> TargetRules | None:
    """The target rules ``job.validate.prepare`` checks a job of ``kind`` by (None: ml v1's own)."""
    if kind == "ml":
        return None
    from mlsubmit.targets.vertex_rules import vertex_rules

    return vertex_rules(machines=kind not in CLUSTER_KINDS)


def rules_for_target(target: str | None) -> Callable[[Any], TargetRules | None]:
    """For a config file on its own: the rules of ``target``, else Vertex AI's when the file has a ``vertex:``
    block, else None (ml v1's). ``local train`` decides its environment the same way."""
    return lambda data: rules_for(
        target or ("vertex" if isinstance(data, dict) and "vertex" in data else "ml")
    )


def translate(
    job_body: dict[str, Any],
    kind: Kind,
    *,
    executor_image_uri: str | None = None,
    namespace: str | None = None,
    checked: bool = False,
    built_image: str | None = None,
) -> Translation:
    """The body of ``kind`` for a validated ml v1 Job body (``vertex``: a tuning job when the job has
    hyperparameters); InvalidJobError lists everything the target cannot express."""
    if kind == "ml":
        return Translation(job_body)
    if kind in CLUSTER_KINDS:
        from mlsubmit.targets.tfjob import to_tfjob

        warnings: list[str] = []
        body = to_tfjob(
            job_body,
            namespace=namespace,
            executor_image_uri=executor_image_uri,
            warn=warnings.append,
            built_image=built_image,
        )
        return Translation(body, "", tuple(warnings), service="")
    from mlsubmit.targets.hptuning import has_hyperparameters, to_hptuning_job
    from mlsubmit.targets.vertex import to_custom_job

    tuning = kind == "hptuningjob" or (kind == "vertex" and has_hyperparameters(job_body))
    body, found = to_custom_job(
        job_body,
        executor_image_uri=executor_image_uri,
        tuning=tuning,
        checked=checked,
        built_image=built_image,
    )
    if tuning:
        body, found = to_hptuning_job(job_body, body, found)
    return Translation(body, "hyperparameterTuningJobs" if tuning else "customJobs", tuple(found), "vertex")
