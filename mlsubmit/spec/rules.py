"""TrainingInput rules the JSON Schema cannot say, checked on the merged Job body before any network call.

Each check returns ``(json_path, message)`` pairs; the caller locates them in the file or names the flag.
The rules are those of REFERENCE.md ("The Job body") and of the field docs in ml.v1.json.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

from mlsubmit.spec.ml_rules import check_ml_v1

Path = tuple[str | int, ...]
Found = Iterator[tuple[Path, str]]

JOB_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
DURATION = re.compile(r"^([0-9]+(?:\.[0-9]{1,9})?)s$")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
IPV4 = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
MAX_LABELS = 64
# Legacy AI Platform machine names; anything else must look like a Compute Engine type (n1-standard-4).
LEGACY_MACHINES = {
    "standard",
    "large_model",
    "complex_model_s",
    "complex_model_m",
    "complex_model_l",
    "standard_gpu",
    "complex_model_m_gpu",
    "complex_model_l_gpu",
    "standard_p100",
    "complex_model_m_p100",
    "standard_v100",
    "large_model_v100",
    "complex_model_m_v100",
    "complex_model_l_v100",
    "cloud_tpu",
}
COMPUTE_MACHINE = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9-]+$")
ROLES = (
    # (count field, type field, config field, name)
    (None, "masterType", "masterConfig", "master"),
    ("workerCount", "workerType", "workerConfig", "workers"),
    ("parameterServerCount", "parameterServerType", "parameterServerConfig", "parameter servers"),
    ("evaluatorCount", "evaluatorType", "evaluatorConfig", "evaluators"),
)
TYPE_FLAGS = {"workerType": "--worker-machine-type", "parameterServerType": "--parameter-server-machine-type"}
TI = "trainingInput"


def _lower_label_char(ch: str) -> bool:
    return ch.islower() or (ch.isalpha() and not ch.isupper() and not ch.isascii())


def label_key_ok(key: str) -> bool:
    """``[a-z][a-z0-9_-]{0,62}``, international lowercase letters allowed."""
    return (
        0 < len(key) <= 63
        and _lower_label_char(key[0])
        and all(_lower_label_char(c) or c.isdigit() or c in "_-" for c in key)
    )


def label_value_ok(value: str) -> bool:
    """``[a-z0-9_-]{0,63}``, international lowercase letters allowed."""
    return len(value) <= 63 and all(_lower_label_char(c) or c.isdigit() or c in "_-" for c in value)


def bucket_problem(bucket: str) -> str | None:
    """Why a Cloud Storage bucket name is invalid, or None."""
    if not BUCKET.match(bucket) or ".." in bucket:
        return (
            f"bucket name {bucket!r} is invalid: use 3-63 lowercase letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if "." not in bucket and len(bucket) > 63:
        return f"bucket name {bucket!r} is longer than 63 characters"
    if bucket.startswith("goog") or "google" in bucket or IPV4.match(bucket):
        return f"bucket name {bucket!r} is not allowed (no 'goog' prefix, 'google' or IP address)"
    return None


def gcs_url_problem(url: str, what: str) -> str | None:
    """Check a gs://BUCKET[/path] URL."""
    if not url.startswith("gs://"):
        return f"{what} must be a Cloud Storage URL gs://BUCKET/PATH, not {url!r}"
    bucket = url[5:].split("/", 1)[0]
    if not bucket:
        return f"{what} {url!r} has no bucket name"
    return bucket_problem(bucket)


def duration_seconds(text: str) -> Decimal | None:
    """``"3600s"`` -> 3600; None when malformed (the schema reports that)."""
    m = DURATION.match(text)
    return Decimal(m.group(1)) if m else None


def _count(ti: dict[str, Any], key: str | None) -> int:
    if key is None:
        return 1
    try:
        return int(ti.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def check_job_id(body: dict[str, Any]) -> Found:
    job_id = body.get("jobId")
    if not isinstance(job_id, str) or not JOB_ID.match(job_id):
        yield (
            ("jobId",),
            (
                f"job id {job_id!r} is invalid: start with a letter, then letters, digits or underscores "
                "(at most 128 characters)"
            ),
        )


def check_labels(body: dict[str, Any]) -> Found:
    labels = body.get("labels")
    if not isinstance(labels, dict):
        return
    if len(labels) > MAX_LABELS:
        yield ("labels",), f"has {len(labels)} labels; at most {MAX_LABELS} are allowed"
    for key, value in labels.items():
        if not label_key_ok(str(key)):
            yield (
                ("labels", key),
                (
                    f"label key {key!r} is invalid: start with a lowercase letter; use lowercase letters, digits, "
                    "'_' or '-' (at most 63)"
                ),
            )
        if not isinstance(value, str):
            yield ("labels", key), f"label value {value!r} must be a string; quote it"
        elif not label_value_ok(value):
            yield (
                ("labels", key),
                (f"label value {value!r} is invalid: use lowercase letters, digits, '_' or '-' (at most 63)"),
            )


def check_tier_and_roles(ti: dict[str, Any], complete: bool = True) -> Found:
    tier = ti.get("scaleTier") or "BASIC"
    # A missing value is reported at the value that demands it (scaleTier, the count), so the error points
    # at the file line or the flag that set it rather than at the `trainingInput:` line.
    if complete and tier == "CUSTOM" and not ti.get("masterType"):
        yield (
            (TI, "scaleTier"),
            "scaleTier CUSTOM needs a master machine type: set masterType (--master-machine-type)",
        )
    legacy_seen: dict[bool, str] = {}
    for count_key, type_key, _config_key, name in ROLES:
        count = _count(ti, count_key)
        if count_key and count > 0:
            if tier != "CUSTOM":
                yield (
                    (TI, count_key),
                    f"{count_key} needs scaleTier CUSTOM (it is {tier}); set --scale-tier custom",
                )
            elif complete and not ti.get(type_key):
                flag = TYPE_FLAGS.get(type_key)
                yield (
                    (TI, count_key),
                    f"{count_key} is {count} but {type_key} is not set: set {type_key}"
                    + (f" ({flag})" if flag else "")
                    + f" to the machine type of the {name}",
                )
        machine = ti.get(type_key)
        if isinstance(machine, str) and machine:
            legacy = machine in LEGACY_MACHINES
            if not legacy and not COMPUTE_MACHINE.match(machine):
                yield (
                    (TI, type_key),
                    (
                        f"machine type {machine!r} is neither a Compute Engine type (like n1-standard-4) nor a legacy "
                        "AI Platform type (like complex_model_m)"
                    ),
                )
            legacy_seen.setdefault(legacy, type_key)
    if len(legacy_seen) == 2:
        yield (
            (TI, legacy_seen[True]),
            (
                f"{legacy_seen[True]} is a legacy machine type but {legacy_seen[False]} is a Compute Engine type; "
                "use one kind for all roles"
            ),
        )


def check_accelerators(ti: dict[str, Any]) -> Found:
    for _count_key, type_key, config_key, _name in ROLES:
        acc = (
            (ti.get(config_key) or {}).get("acceleratorConfig")
            if isinstance(ti.get(config_key), dict)
            else None
        )
        if not isinstance(acc, dict):
            continue
        path: Path = (TI, config_key, "acceleratorConfig")
        if not acc.get("type"):
            yield path, "acceleratorConfig needs a type (e.g. NVIDIA_TESLA_T4)"
        count = acc.get("count")
        if count is None or _count({"c": count}, "c") <= 0:
            yield path, "acceleratorConfig needs a count greater than 0"
        machine = ti.get(type_key)
        if isinstance(machine, str) and machine in LEGACY_MACHINES:
            yield (
                path,
                (
                    f"accelerators can only be attached to Compute Engine machine types, not {machine!r}; "
                    "use e.g. n1-standard-8"
                ),
            )


def check_runtime_and_images(ti: dict[str, Any], body_has_args: bool, complete: bool = True) -> Found:
    master: dict[str, Any] = ti["masterConfig"] if isinstance(ti.get("masterConfig"), dict) else {}
    image = master.get("imageUri")
    runtime = ti.get("runtimeVersion")
    if image and runtime:
        yield (
            (TI, "runtimeVersion"),
            (
                "set either runtimeVersion or masterConfig.imageUri, not both (--runtime-version / --master-image-uri)"
            ),
        )
    if ti.get("pythonVersion") and image and not runtime:
        yield (TI, "pythonVersion"), "pythonVersion has no effect with a custom container; remove it"
    for _count_key, _type_key, config_key, name in ROLES:
        cfg = ti.get(config_key)
        if not isinstance(cfg, dict):
            continue
        own_image = cfg.get("imageUri") or image
        if config_key != "masterConfig" and cfg.get("imageUri") and not image:
            yield (
                (TI, config_key, "imageUri"),
                (f"the {name} have a custom image but the master has none: set --master-image-uri too"),
            )
        for key in ("containerCommand", "containerArgs"):
            if cfg.get(key) is None:
                continue
            if not own_image:
                yield (TI, config_key, key), f"{key} needs a custom container image (imageUri) for the {name}"
            if body_has_args:
                yield (
                    (TI, config_key, key),
                    (f"{key} and trainingInput.args cannot both be set; put the arguments in containerArgs"),
                )


def check_packages(ti: dict[str, Any], complete: bool = True) -> Found:
    master: dict[str, Any] = ti["masterConfig"] if isinstance(ti.get("masterConfig"), dict) else {}
    if master.get("imageUri"):
        return
    uris = ti.get("packageUris") or []
    if complete and not uris:
        yield (
            (TI, "packageUris"),
            ("a job without a custom container needs packages: pass --package-path and/or --packages"),
        )
    if complete and not ti.get("pythonModule"):
        yield (TI, "pythonModule"), "a job without a custom container needs a module: pass --module-name"
    names: dict[str, int] = {}
    for i, uri in enumerate(uris):
        if isinstance(uri, str) and uri.startswith("gs://"):
            problem = gcs_url_problem(uri, "package")
            if problem:
                yield (TI, "packageUris", i), problem
            name = uri.rstrip("/").rsplit("/", 1)[-1]
            if name in names:
                yield (
                    (TI, "packageUris", i),
                    f"package file name {name!r} appears twice (also item {names[name]})",
                )
            names.setdefault(name, i)


def check_scheduling(ti: dict[str, Any]) -> Found:
    sched = ti.get("scheduling")
    if not isinstance(sched, dict):
        return
    running = sched.get("maxRunningTime")
    if isinstance(running, str):
        secs = duration_seconds(running)
        if secs is not None and secs <= 0:
            yield (TI, "scheduling", "maxRunningTime"), "maxRunningTime must be more than 0s"
    waiting = sched.get("maxWaitTime")
    if isinstance(waiting, str):
        secs = duration_seconds(waiting)
        if secs is not None and secs < 1800:
            yield (TI, "scheduling", "maxWaitTime"), f"maxWaitTime {waiting} is below the minimum of 1800s"


def check_hyperparameters(ti: dict[str, Any]) -> Found:
    hp = ti.get("hyperparameters")
    if not isinstance(hp, dict):
        return
    base: Path = (TI, "hyperparameters")
    max_trials = hp.get("maxTrials", 1)
    parallel = hp.get("maxParallelTrials")
    if isinstance(parallel, int) and isinstance(max_trials, int) and parallel > max_trials:
        yield (*base, "maxParallelTrials"), f"maxParallelTrials ({parallel}) exceeds maxTrials ({max_trials})"
    seen: set[str] = set()
    for i, param in enumerate(hp.get("params") or []):
        if not isinstance(param, dict):
            continue
        at: Path = (*base, "params", i)
        name = param.get("parameterName")
        if name in seen:
            yield (*at, "parameterName"), f"parameterName {name!r} is used twice; names must be unique"
        if isinstance(name, str):
            seen.add(name)
        kind = param.get("type")
        lo, hi = param.get("minValue"), param.get("maxValue")
        # YAML's .inf/.nan are floats the schema accepts, but they have no JSON spelling: the body would not parse.
        for key, v in (("minValue", lo), ("maxValue", hi)):
            if isinstance(v, float) and not math.isfinite(v):
                yield (*at, key), f"{key} must be a finite number, not {v}"
        values = param.get("discreteValues")
        if isinstance(values, list) and any(isinstance(v, float) and not math.isfinite(v) for v in values):
            yield (*at, "discreteValues"), "discreteValues must be finite numbers (no .inf or .nan)"
        if kind in ("DOUBLE", "INTEGER"):
            if lo is None or hi is None:
                yield at, f"a {kind} parameter needs minValue and maxValue"
            elif lo >= hi:
                yield (*at, "minValue"), f"minValue ({lo}) must be less than maxValue ({hi})"
            if kind == "INTEGER":
                for key, v in (("minValue", lo), ("maxValue", hi)):
                    if isinstance(v, float) and not v.is_integer():
                        yield (*at, key), f"an INTEGER parameter needs a whole {key}, not {v}"
            scale = param.get("scaleType")
            if scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and lo is not None and lo <= 0:
                yield (*at, "minValue"), f"{scale} needs minValue greater than 0"
        elif kind == "CATEGORICAL":
            if not param.get("categoricalValues"):
                yield at, "a CATEGORICAL parameter needs categoricalValues"
        elif kind == "DISCRETE":
            values = param.get("discreteValues")
            if not values:
                yield at, "a DISCRETE parameter needs discreteValues"
            elif any(b <= a for a, b in itertools.pairwise(values)):
                yield (*at, "discreteValues"), "discreteValues must be strictly increasing"
        if kind in ("CATEGORICAL", "DISCRETE") and (lo is not None or hi is not None):
            yield at, f"a {kind} parameter takes no minValue/maxValue"


def check_locations(ti: dict[str, Any], complete: bool = True) -> Found:
    if complete and not ti.get("region"):
        yield (TI, "region"), "no region: pass --region, set it in the file, or set CLOUDSDK_COMPUTE_REGION"
    job_dir = ti.get("jobDir")
    if isinstance(job_dir, str):
        problem = gcs_url_problem(job_dir, "jobDir")
        if problem:
            yield (TI, "jobDir"), problem


# The rules of the engine the job goes to (README "Moving to Vertex AI"): ml v1's below; Vertex AI's live in
# mlsubmit.targets.vertex_rules and are passed in by the caller (spec never imports targets).
TargetRules = Callable[[dict[str, Any], bool], Iterable[tuple[Path, str]]]


def check_job(
    body: dict[str, Any], complete: bool = True, target_rules: TargetRules | None = None
) -> list[tuple[Path, str]]:
    """Every rule, over the whole merged body: the shared ones, then the target's (ml v1 unless given).

    ``complete=False`` is for a config file on its own (``mlsubmit validate``): fields that flags usually supply
    (region, packages, module, runtime or image, machine types) may be missing, but whatever is there must be right.
    """
    ti = body.get(TI) if isinstance(body.get(TI), dict) else {}
    assert isinstance(ti, dict)
    found: list[tuple[Path, str]] = []
    if complete or "jobId" in body:
        found += check_job_id(body)
    found += check_labels(body)
    found += check_locations(ti, complete)
    found += check_tier_and_roles(ti, complete)
    found += check_accelerators(ti)
    found += check_runtime_and_images(ti, body_has_args=bool(ti.get("args")), complete=complete)
    found += check_packages(ti, complete)
    found += check_scheduling(ti)
    found += check_hyperparameters(ti)
    found += (target_rules or check_ml_v1)(body, complete)
    return found
