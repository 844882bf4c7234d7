"""TrainingInput rules the JSON Schema cannot say, checked on the merged Job body before any network call: each
check yields ``(json_path, message)`` pairs, after the ml v1 API and ml.v1.json's field docs
(https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable
from typing import Any

from mlsubmit.job.hyperparameters import TI, Found, Path, check_hyperparameters
from mlsubmit.job.ml_rules import check_ml_v1
from mlsubmit.job.values import (
    API_DURATION,
    api_duration_nanos,
    api_duration_problem,
    int64_problem,
    int64_value,
    url_value_problem,
)
from mlsubmit.job.vocab import COMPUTE_MACHINE, LEGACY_MACHINES, ROLES, as_dict, gcs_url_problem
from mlsubmit.job.vocab import LEGACY_TPU_MACHINE as TPU_MACHINE

MAX_LABELS = 64
MAX_PACKAGES = 100  # packageUris: "at most 100" (ml v1 TrainingInput)


def _lower(ch: str) -> bool:
    """A lowercase letter, international ones included (as label keys and values allow)."""
    return ch.islower() or (ch.isalpha() and not ch.isupper() and not ch.isascii())


def _label_ok(text: str) -> bool:
    return len(text) <= 63 and all(_lower(c) or c.isdigit() or c in "_-" for c in text)


def check_id_and_labels(body: dict[str, Any], complete: bool) -> Found:
    if body.get("jobId") is None:  # --complete on a file without one: say that, not "job id None is invalid"
        if complete or "jobId" in body:
            yield (
                ("jobId",),
                "is missing: a job needs an id (jobId in the file, or the JOB argument of training)",
            )
    elif problem := url_value_problem("job id", body["jobId"]):
        yield ("jobId",), problem
    labels = as_dict(body.get("labels"))
    if len(labels) > MAX_LABELS:
        yield ("labels",), f"has {len(labels)} labels; at most {MAX_LABELS} are allowed"
    for key, value in labels.items():
        at = ("labels", key)
        if not (str(key) and _lower(str(key)[0]) and _label_ok(str(key))):
            message = (
                f"label key {key!r} is invalid: start with a lowercase letter; use lowercase letters, digits, "
                "'_' or '-' (at most 63)"
            )
            yield at, message
        if not isinstance(value, str):
            yield at, f"label value {value!r} must be a string; quote it"
        elif not _label_ok(value):
            message = (
                f"label value {value!r} is invalid: use lowercase letters, digits, '_' or '-' (at most 63)"
            )
            yield at, message


def check_tier_and_roles(ti: dict[str, Any], complete: bool = True) -> Found:
    tier = ti.get("scaleTier") or "BASIC"
    # A missing value is reported at the value that demands it (scaleTier, the count), so the error points
    # at the file line or the flag that set it rather than at the `trainingInput:` line.
    if complete and tier == "CUSTOM" and not ti.get("masterType"):
        message = "scaleTier CUSTOM needs a master machine type: set masterType (--master-machine-type)"
        yield (TI, "scaleTier"), message
    legacy_seen: dict[bool, str] = {}
    for role in ROLES:
        count_key, type_key = role.count_field, role.type_field
        count = 1 if count_key is None else int64_value(ti.get(count_key)) or 0
        if count_key and (too_big := int64_problem(ti.get(count_key), count_key)):
            yield (TI, count_key), too_big
        if count_key and count > 0:
            if tier != "CUSTOM":
                message = f"{count_key} needs scaleTier CUSTOM (it is {tier}); set --scale-tier custom"
                yield (TI, count_key), message
            elif complete and not ti.get(type_key):
                flag = f" ({role.type_flag})" if role.type_flag else ""
                message = (
                    f"{count_key} is {count} but {type_key} is not set: set {type_key}{flag} to the machine type "
                    f"of the {role.plural}"
                )
                yield (TI, count_key), message
        machine = ti.get(type_key)
        if isinstance(machine, str) and machine:
            legacy = machine in LEGACY_MACHINES
            if not legacy and not COMPUTE_MACHINE.fullmatch(machine):
                yield (TI, type_key), unknown_machine_message(machine, type_key)
            # Only machines of a known kind take part in the one-kind rule (an unknown name is reported above,
            # not as "legacy vs Compute Engine"); `cloud_tpu` is the TPU worker and goes with either kind.
            elif machine != TPU_MACHINE:
                legacy_seen.setdefault(legacy, type_key)
    if len(legacy_seen) == 2:
        message = (
            f"{legacy_seen[True]} is a legacy machine type but {legacy_seen[False]} is a Compute Engine type; "
            "use one kind for all roles"
        )
        yield (TI, legacy_seen[True]), message


def unknown_machine_message(machine: str, type_key: str) -> str:
    """Why ``machine`` is not a machine type, with the nearest real one when there is one."""
    import difflib

    message = (
        f"machine type {machine!r} is neither a Compute Engine type (like n1-standard-4) nor a legacy "
        "AI Platform type (like complex_model_m)"
    )
    if machine.lower().startswith(("cloud_tpu", "tpu")):
        config = type_key.replace("Type", "Config")
        return (
            f"{message}; for a TPU write {type_key}: {TPU_MACHINE} and choose the TPU version in "
            f"{config}.acceleratorConfig (type TPU_V2 or TPU_V3, count 8)"
        )
    close = difflib.get_close_matches(machine.lower(), sorted(LEGACY_MACHINES), n=1, cutoff=0.75)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def check_accelerators(ti: dict[str, Any]) -> Found:
    for role in ROLES:
        acc = as_dict(ti.get(role.config_field)).get("acceleratorConfig")
        if not isinstance(acc, dict):
            continue
        path: Path = (TI, role.config_field, "acceleratorConfig")
        if not acc.get("type"):
            yield path, "acceleratorConfig needs a type (e.g. NVIDIA_TESLA_T4)"
        count = acc.get("count")
        if too_big := int64_problem(count, "acceleratorConfig.count"):
            yield (*path, "count"), too_big
        elif count is None or (int64_value(count) or 0) <= 0:
            yield path, "acceleratorConfig needs a count greater than 0"
        machine = ti.get(role.type_field)
        if machine == TPU_MACHINE:
            # A custom TPU worker: cloud_tpu with a TPU_V2/TPU_V3 acceleratorConfig ("Using TPUs" in the AI
            # Platform Training docs, configuring a custom TPU machine).
            if isinstance(acc.get("type"), str) and not acc["type"].startswith("TPU_"):
                message = (
                    f"a {TPU_MACHINE} machine takes TPU accelerators (TPU_V2, TPU_V3), not {acc['type']}"
                )
                yield path, message
        elif isinstance(machine, str) and machine in LEGACY_MACHINES:
            message = (
                f"accelerators can only be attached to Compute Engine machine types, not {machine!r}; "
                "use e.g. n1-standard-8"
            )
            yield path, message


def check_runtime_and_images(ti: dict[str, Any]) -> Found:
    image = as_dict(ti.get("masterConfig")).get("imageUri")
    runtime = ti.get("runtimeVersion")
    if image and runtime:
        message = "set either runtimeVersion or masterConfig.imageUri, not both (--runtime-version / --master-image-uri)"
        yield (TI, "runtimeVersion"), message
    if ti.get("pythonVersion") and image and not runtime:
        yield (TI, "pythonVersion"), "pythonVersion has no effect with a custom container; remove it"
    for role in ROLES:
        config_key, name = role.config_field, role.plural
        cfg = as_dict(ti.get(config_key))
        own_image = cfg.get("imageUri") or image
        if config_key != "masterConfig" and cfg.get("imageUri") and not image:
            message = f"the {name} have a custom image but the master has none: set --master-image-uri too"
            yield (TI, config_key, "imageUri"), message
        for key in ("containerCommand", "containerArgs"):
            if cfg.get(key) is None:
                continue
            if not own_image:
                yield (TI, config_key, key), f"{key} needs a custom container image (imageUri) for the {name}"
            if ti.get("args"):
                message = (
                    f"{key} and trainingInput.args cannot both be set; put the arguments in containerArgs"
                )
                yield (TI, config_key, key), message


def check_packages(ti: dict[str, Any], complete: bool = True) -> Found:
    if as_dict(ti.get("masterConfig")).get("imageUri"):
        return
    given = ti.get("packageUris")
    uris: list[Any] = given if isinstance(given, list) else []
    if len(uris) > MAX_PACKAGES:
        yield (TI, "packageUris"), f"has {len(uris)} packages; at most {MAX_PACKAGES} are allowed"
    if complete and not uris:
        message = "a job without a custom container needs packages: pass --package-path and/or --packages"
        yield (TI, "packageUris"), message
    if complete and not ti.get("pythonModule"):
        yield (TI, "pythonModule"), "a job without a custom container needs a module: pass --module-name"
    names: dict[str, int] = {}
    for i, uri in enumerate(uris):
        if isinstance(uri, str) and uri.startswith("gs://"):
            if problem := gcs_url_problem(uri, "package"):
                yield (TI, "packageUris", i), problem
            name = uri.rstrip("/").rsplit("/", 1)[-1]
            if name in names:
                message = f"package file name {name!r} appears twice (also item {names[name]})"
                yield (TI, "packageUris", i), message
            names.setdefault(name, i)


def check_scheduling(ti: dict[str, Any]) -> Found:
    sched = as_dict(ti.get("scheduling"))
    wait = f"maxWaitTime {sched.get('maxWaitTime')} is below the minimum of 1800s"
    for key, least, message in (
        ("maxRunningTime", 1, "maxRunningTime must be more than 0s"),
        ("maxWaitTime", 1800 * 10**9, wait),
    ):
        value = sched.get(key)
        nanos = api_duration_nanos(value)
        # Malformed spellings are the schema's to report; a well-formed one can still be out of range.
        if isinstance(value, str) and API_DURATION.fullmatch(value) and nanos is None:
            yield (TI, "scheduling", key), str(api_duration_problem(value, key))
        if nanos is not None and nanos < least:
            yield (TI, "scheduling", key), message


def module_name_problem(name: str) -> str | None:
    """Why ``python -m NAME`` can never run ``name``, or None: runpy refuses a leading ``.``, a part between dots is
    a file or folder name (``python -m youtube-8m.train`` runs); whitespace and control characters mangle a log."""
    if not name:
        return "the module name is empty; give a dotted module name such as trainer.task"
    if name.endswith(".py") and "/" in name:
        dotted = name[:-3].replace("/", ".").strip(".")
        return f"{name!r} is a file path; give the module name {dotted!r}"
    if "/" in name or "\\" in name:
        return f"{name!r} contains a path separator; give a dotted module name such as trainer.task"
    if any(c.isspace() or not c.isprintable() for c in name):
        return f"{name!r} contains whitespace or control characters; give a dotted module name such as trainer.task"
    if name.startswith("."):
        return f"{name!r} is a relative module name (python -m refuses those); give the full name"
    if any(not part for part in name.split(".")):
        return f"{name!r} has an empty part between dots; give a dotted module name such as trainer.task"
    if any(len(part.encode()) > 255 for part in name.split(".")):
        return f"{name!r} has a part longer than a file name can be (255 bytes)"
    return None


def check_locations(ti: dict[str, Any], complete: bool = True) -> Found:
    module = ti.get("pythonModule")
    if isinstance(module, str) and (problem := module_name_problem(module)):
        yield (TI, "pythonModule"), problem
    if complete and not ti.get("region"):
        yield (TI, "region"), "no region: pass --region, set it in the file, or set CLOUDSDK_COMPUTE_REGION"
    region = ti.get("region")
    if isinstance(region, str) and region and (problem := url_value_problem("region", region)):
        yield (TI, "region"), problem
    job_dir = ti.get("jobDir")
    if isinstance(job_dir, str) and (problem := gcs_url_problem(job_dir, "jobDir")):
        yield (TI, "jobDir"), problem


def typed_view(body: Any) -> dict[str, Any]:
    """``body`` without the values whose JSON type the schema refuses (a copy when any is left out; a value in a
    list takes its list, so positions stay right). Labels stay: ``check_id_and_labels`` says what is wrong with them."""
    if not isinstance(body, dict):
        return {}
    from mlsubmit.job.jobfile import job_schema
    from mlsubmit.job.schema_check import Validator

    wrong = [
        tuple(error.absolute_path)
        for error in Validator(job_schema()).iter_errors(body)
        if error.validator == "type" and error.absolute_path and error.absolute_path[0] != "labels"
    ]
    if not wrong:
        return body
    view: dict[str, Any] = copy.deepcopy(body)
    for path in sorted(wrong, key=len):
        _leave_out(view, path)
    return view


def _leave_out(root: dict[str, Any], path: Path) -> None:
    """Delete the object key that holds ``path`` (its last name part); nothing when an earlier cut removed it."""
    cut = max(i for i, part in enumerate(path) if isinstance(part, str))  # a path starts at a key of the body
    node: Any = root
    with contextlib.suppress(LookupError, TypeError, AttributeError):
        for part in path[:cut]:
            node = node[part]
        node.pop(path[cut], None)


# The rules of the engine the job goes to (docs/vertex.md): ml v1's below; Vertex AI's live in
# mlsubmit.targets.vertex_rules and are passed in by the caller (spec never imports targets).
TargetRules = Callable[[dict[str, Any], bool], Iterable[tuple[Path, str]]]


def check_job(
    body: dict[str, Any], complete: bool = True, target_rules: TargetRules | None = None
) -> list[tuple[Path, str]]:
    """Every rule over the merged body: the shared ones, then the target's (ml v1 unless given); ``complete``
    False: a config file alone. Values of the wrong JSON type are left out first (the schema reports them)."""
    body = typed_view(body)
    ti = as_dict(body.get(TI))
    return [
        *check_id_and_labels(body, complete),
        *check_locations(ti, complete),
        *check_tier_and_roles(ti, complete),
        *check_accelerators(ti),
        *check_runtime_and_images(ti),
        *check_packages(ti, complete),
        *check_scheduling(ti),
        *check_hyperparameters(ti),
        *(target_rules or check_ml_v1)(body, complete),
    ]
