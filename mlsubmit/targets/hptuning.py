"""A validated ml v1 tuning job as a Vertex AI ``HyperparameterTuningJob`` (aiplatform v1
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs, checked
against the v1 discovery document in November 2026); ``trialJobSpec`` is the CustomJob's ``jobSpec``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_METRIC_TAG = "training/hptuning/metric"
SCALE_TYPES = {"NONE": "SCALE_TYPE_UNSPECIFIED"}  # the others are spelled alike
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
        lo, hi = int(param["minValue"]), int(param["maxValue"])
        out["integerValueSpec"] = {"minValue": str(lo), "maxValue": str(hi)}
    elif kind == "CATEGORICAL":
        out["categoricalValueSpec"] = {"values": [str(v) for v in param["categoricalValues"]]}
    elif kind == "DISCRETE":
        out["discreteValueSpec"] = {"values": [float(v) for v in param["discreteValues"]]}
    scale = param.get("scaleType")
    if scale and kind != "CATEGORICAL":
        out["scaleType"] = SCALE_TYPES.get(str(scale), str(scale))
    return out


def to_hptuning_job(
    job_body: Mapping[str, Any], custom: Mapping[str, Any], warnings: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """The HyperparameterTuningJob body around ``custom`` (``to_custom_job(tuning=True)``'s) and its warnings."""
    hp: dict[str, Any] = job_body["trainingInput"]["hyperparameters"]
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
