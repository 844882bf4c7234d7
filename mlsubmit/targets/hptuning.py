"""Pure translation of a validated ml v1 tuning job into a Vertex AI ``HyperparameterTuningJob`` body.

Mapping (aiplatform v1 ``HyperparameterTuningJob`` and ``StudySpec``,
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs, checked
against the v1 discovery document in November 2026):

* ``hyperparameterMetricTag`` (default ``training/hptuning/metric``) and ``goal`` -> ``studySpec.metrics[0]``
  ``{metricId, goal}``; trainers keep reporting with ``cloudml-hypertune``;
* each ``params[]`` -> ``studySpec.parameters[]`` ``{parameterId, scaleType, doubleValueSpec |
  integerValueSpec (int64 as strings) | categoricalValueSpec | discreteValueSpec}``; ml v1's ``scaleType: NONE``
  is Vertex's ``SCALE_TYPE_UNSPECIFIED``;
* ``algorithm`` as named (the same three values); ``measurementSelectionType: LAST_MEASUREMENT``, the
  measurement the legacy service reported;
* ``enableTrialEarlyStopping`` -> ``medianAutomatedStoppingSpec`` (Vertex needs one stopping rule named; the
  median rule is the one ``local tune`` applies), with a warning naming that choice;
* ``maxTrials`` / ``maxParallelTrials`` / ``maxFailedTrials`` -> ``maxTrialCount`` / ``parallelTrialCount`` /
  ``maxFailedTrialCount``;
* ``trialJobSpec`` = the CustomJob's ``jobSpec`` from :func:`mlsubmit.targets.vertex.to_custom_job` (``tuning=True``:
  its :func:`~mlsubmit.targets.vertex.custom_job_spec` leaves the hyperparameters to this module), with the
  same ``displayName``, labels and ``encryptionSpec`` on the tuning job.

Refused: ``resumePreviousJobId`` (a Vertex study cannot continue another job's trials), and everything
``to_custom_job`` refuses. All problems are reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.errors import InvalidJobError, Problem
from mlsubmit.targets.vertex import to_custom_job

DEFAULT_METRIC_TAG = "training/hptuning/metric"
HP = "$.trainingInput.hyperparameters"
SCALE_TYPES = {
    "NONE": "SCALE_TYPE_UNSPECIFIED",
    "UNIT_LINEAR_SCALE": "UNIT_LINEAR_SCALE",
    "UNIT_LOG_SCALE": "UNIT_LOG_SCALE",
    "UNIT_REVERSE_LOG_SCALE": "UNIT_REVERSE_LOG_SCALE",
}
EARLY_STOPPING_WARNING = (
    "enableTrialEarlyStopping becomes Vertex AI's medianAutomatedStoppingSpec: a trial is stopped when its best "
    "objective is below the median of completed trials at the same step (Vertex AI also offers "
    "decayCurveStoppingSpec; edit the exported body to use it)"
)


def how_to_report(tag: str) -> str:
    """How a trainer reports the tuning metric so Vertex AI (and ``local tune``) can read it."""
    return (
        f"report it with cloudml-hypertune, hypertune.HyperTune().report_hyperparameter_tuning_metric("
        f"hyperparameter_metric_tag={tag!r}, metric_value=..., global_step=...)"
    )


def has_hyperparameters(job_body: Mapping[str, Any]) -> bool:
    """Whether the job is a tuning job (its trainingInput has a hyperparameters block)."""
    return bool((job_body.get("trainingInput") or {}).get("hyperparameters"))


def parameter_spec(param: Mapping[str, Any]) -> dict[str, Any]:
    """One ml v1 ``ParameterSpec`` as a Vertex ``StudySpec.ParameterSpec``."""
    kind = param.get("type")
    out: dict[str, Any] = {"parameterId": param["parameterName"]}
    if kind == "DOUBLE":
        out["doubleValueSpec"] = {"minValue": float(param["minValue"]), "maxValue": float(param["maxValue"])}
    elif kind == "INTEGER":
        out["integerValueSpec"] = {
            "minValue": str(int(param["minValue"])),
            "maxValue": str(int(param["maxValue"])),
        }
    elif kind == "CATEGORICAL":
        out["categoricalValueSpec"] = {"values": [str(v) for v in param["categoricalValues"]]}
    elif kind == "DISCRETE":
        out["discreteValueSpec"] = {"values": [float(v) for v in param["discreteValues"]]}
    scale = param.get("scaleType")
    if scale and kind != "CATEGORICAL":
        out["scaleType"] = SCALE_TYPES[str(scale)]
    return out


def to_hptuning_job(
    job_body: dict[str, Any],
    *,
    executor_image_uri: str | None = None,
    built_image: str | None = None,
    checked: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """The Vertex AI HyperparameterTuningJob body for a validated ml v1 tuning job, and warnings to show.

    Raises InvalidJobError listing everything Vertex AI cannot express. ``checked``: Vertex AI's rules already
    ran on this body (``submit.plan``), so the trial spec does not run them again.
    """
    ti = job_body.get("trainingInput") or {}
    hp: dict[str, Any] = dict(ti.get("hyperparameters") or {})
    problems: list[Problem] = []
    if not hp:
        problems.append(Problem("a tuning job needs a hyperparameters block", "$.trainingInput"))
    if hp.get("resumePreviousJobId"):
        problems.append(
            Problem(
                "Vertex AI has no equivalent of resumePreviousJobId (a study cannot continue another job's "
                "trials); remove it, or continue the study locally with `mlsubmit local tune --resume`",
                f"{HP}.resumePreviousJobId",
            )
        )
    custom: dict[str, Any] = {}
    warnings: list[str] = []
    try:
        # tuning=True: the hyperparameters are translated here, into the studySpec
        custom, warnings = to_custom_job(
            job_body,
            executor_image_uri=executor_image_uri,
            tuning=True,
            built_image=built_image,
            checked=checked,
        )
    except InvalidJobError as err:
        problems.extend(err.problems)
    if problems:
        raise InvalidJobError(problems)

    study: dict[str, Any] = {
        "metrics": [
            {"metricId": str(hp.get("hyperparameterMetricTag") or DEFAULT_METRIC_TAG), "goal": hp["goal"]}
        ],
        "parameters": [parameter_spec(p) for p in hp.get("params") or []],
        "algorithm": str(hp.get("algorithm") or "ALGORITHM_UNSPECIFIED"),
        "measurementSelectionType": "LAST_MEASUREMENT",
    }
    if hp.get("enableTrialEarlyStopping"):
        study["medianAutomatedStoppingSpec"] = {"useElapsedDuration": False}
        warnings = [*warnings, EARLY_STOPPING_WARNING]
    body: dict[str, Any] = {
        "displayName": custom["displayName"],
        "labels": custom["labels"],
        "studySpec": study,
        "maxTrialCount": int(hp.get("maxTrials") or 1),
        "parallelTrialCount": int(hp.get("maxParallelTrials") or 1),
    }
    if hp.get("maxFailedTrials"):
        body["maxFailedTrialCount"] = int(hp["maxFailedTrials"])
    body["trialJobSpec"] = custom["jobSpec"]
    if "encryptionSpec" in custom:
        body["encryptionSpec"] = custom["encryptionSpec"]
    return body, warnings
