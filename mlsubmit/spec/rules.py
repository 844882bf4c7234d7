"""TrainingInput rules the JSON Schema cannot say, checked on the merged Job body before any network call.

Each check returns ``(json_path, message)`` pairs; the caller locates them in the file or names the flag.
The rules are those of REFERENCE.md ("The Job body") and of the field docs in ml.v1.json.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from mlsubmit.spec.shapes import typed_view
from mlsubmit.spec.values import (
    API_DURATION,
    api_duration_problem,
    api_duration_seconds,
    int64_problem,
    int64_value,
    url_value_problem,
)
from mlsubmit.spec.vocab import (
    COMPUTE_MACHINE,
    LEGACY_MACHINES,
    ROLES,
    gcs_url_problem,
    runtime_tuple,
)

__all__ = ["LEGACY_MACHINES", "check_job", "gcs_url_problem"]

Path = tuple[str | int, ...]
Found = Iterator[tuple[Path, str]]

MAX_LABELS = 64
MAX_PACKAGES = 100  # packageUris: "at most 100" (ml v1 TrainingInput)
PYTHON_RUNTIMES: dict[str, Callable[[tuple[int, int]], bool]] = {
    "3.7": lambda rt: rt >= (1, 15),
    "3.5": lambda rt: (1, 4) <= rt <= (1, 14),
    "2.7": lambda rt: rt <= (1, 15),
}
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


def duration_seconds(text: str) -> Decimal | None:
    """``"3600s"`` -> 3600; None when malformed (the schema reports that)."""
    return api_duration_seconds(text)


def _count(ti: dict[str, Any], key: str | None) -> int:
    if key is None:
        return 1
    return int64_value(ti.get(key)) or 0


def check_job_id(body: dict[str, Any]) -> Found:
    problem = url_value_problem("job id", body.get("jobId"))
    if problem:
        yield ("jobId",), problem


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
    for role in ROLES:
        count_key, type_key = role.count_field, role.type_field
        count = _count(ti, count_key)
        if count_key:
            too_big = int64_problem(ti.get(count_key), count_key)
            if too_big:
                yield (TI, count_key), too_big
        if count_key and count > 0:
            if tier != "CUSTOM":
                yield (
                    (TI, count_key),
                    f"{count_key} needs scaleTier CUSTOM (it is {tier}); set --scale-tier custom",
                )
            elif complete and not ti.get(type_key):
                flag = role.type_flag
                yield (
                    (TI, count_key),
                    f"{count_key} is {count} but {type_key} is not set: set {type_key}"
                    + (f" ({flag})" if flag else "")
                    + f" to the machine type of the {role.plural}",
                )
        machine = ti.get(type_key)
        if isinstance(machine, str) and machine:
            legacy = machine in LEGACY_MACHINES
            if not legacy and not COMPUTE_MACHINE.fullmatch(machine):
                yield (
                    (TI, type_key),
                    (
                        f"machine type {machine[:40]!r} is neither a Compute Engine type (like n1-standard-4) nor "
                        "a legacy AI Platform type (like complex_model_m)"
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
    for role in ROLES:
        config = ti.get(role.config_field)
        acc = config.get("acceleratorConfig") if isinstance(config, dict) else None
        if not isinstance(acc, dict):
            continue
        path: Path = (TI, role.config_field, "acceleratorConfig")
        if not acc.get("type"):
            yield path, "acceleratorConfig needs a type (e.g. NVIDIA_TESLA_T4)"
        count = acc.get("count")
        too_big = int64_problem(count, "acceleratorConfig.count")
        if too_big:
            yield (*path, "count"), too_big
        elif count is None or (int64_value(count) or 0) <= 0:
            yield path, "acceleratorConfig needs a count greater than 0"
        machine = ti.get(role.type_field)
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
    elif complete and not image and not runtime:
        yield (
            (TI, "runtimeVersion"),
            ("set runtimeVersion (e.g. --runtime-version 2.11) or a custom container (--master-image-uri)"),
        )
    python = ti.get("pythonVersion")
    if python:
        if image and not runtime:
            yield (TI, "pythonVersion"), "pythonVersion has no effect with a custom container; remove it"
        elif not isinstance(python, str) or python not in PYTHON_RUNTIMES:
            yield (TI, "pythonVersion"), f"pythonVersion {python!r} is not available; choose 3.7, 3.5 or 2.7"
        elif runtime:
            rt = runtime_tuple(str(runtime))
            if rt and not PYTHON_RUNTIMES[python](rt):
                need = {"3.7": "1.15 or later", "3.5": "1.4 to 1.14", "2.7": "1.15 or earlier"}[python]
                yield (
                    (TI, "pythonVersion"),
                    (f"pythonVersion {python} needs runtimeVersion {need} (it is {runtime})"),
                )
    for role in ROLES:
        config_key, name = role.config_field, role.plural
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
    given = ti.get("packageUris")
    uris: list[Any] = given if isinstance(given, list) else []
    if len(uris) > MAX_PACKAGES:
        yield (TI, "packageUris"), f"has {len(uris)} packages; at most {MAX_PACKAGES} are allowed"
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
    for key in ("maxRunningTime", "maxWaitTime"):
        value = sched.get(key)
        # Malformed spellings are the schema's to report; a well-formed one can still be out of range.
        if isinstance(value, str) and API_DURATION.fullmatch(value) and api_duration_seconds(value) is None:
            yield (TI, "scheduling", key), str(api_duration_problem(value, key))
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
    region = ti.get("region")
    if isinstance(region, str) and region:
        problem = url_value_problem("region", region)
        if problem:
            yield (TI, "region"), problem
    job_dir = ti.get("jobDir")
    if isinstance(job_dir, str):
        problem = gcs_url_problem(job_dir, "jobDir")
        if problem:
            yield (TI, "jobDir"), problem


def check_job(body: dict[str, Any], complete: bool = True) -> list[tuple[Path, str]]:
    """Every rule, over the whole merged body.

    ``complete=False`` is for a config file on its own (``mlsubmit validate``): fields that flags usually supply
    (region, packages, module, runtime or image, machine types) may be missing, but whatever is there must be right.

    Total over any input: values of the wrong JSON type are left out first (``shapes.typed_view``), so a rule never
    meets a list where it reads an object; the schema pass reports those values.
    """
    body = typed_view(body)
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
    return found
