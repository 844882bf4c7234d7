"""Vertex AI's rules for a merged job (docs/vertex.md: what is refused and why), called by
``mlsubmit.job.rules.check_job`` in place of ml v1's so every problem has its file line or flag."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from mlsubmit.job.hyperparameters import TI, Found, Path
from mlsubmit.job.rules import TargetRules
from mlsubmit.job.values import api_duration_seconds
from mlsubmit.job.vocab import ROLE_BY_KEY, scale_tier
from mlsubmit.targets.pools import Findings, Pool, as_dict, expand_pools
from mlsubmit.targets.trainer_image import builds_image, image_problem
from mlsubmit.targets.vertex_images import choose_executor_image, today
from mlsubmit.targets.vertex_tables import (
    FLEX_START_GPUS,
    FLEX_START_MAX_TIMEOUT_S,
    GPU_MACHINES,
    N1_GPU_COUNTS,
    TRAINING_MACHINES,
    gpus_carried,
)

MAX_ENV = 100  # aiplatform v1 PythonPackageSpec.env: "Maximum limit is 100"
# Variables Vertex AI sets itself in every replica (docs/vertex.md).
RESERVED_ENV = frozenset(
    {"CLUSTER_SPEC", "TF_CONFIG", "AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR"}
)
FLEX_GPUS_WORDS = "L4, A100, H100, H200 or B200"


def _image_source(body: Mapping[str, Any], complete: bool, on: date, dated: bool = True) -> Found:
    ti, vertex = as_dict(body.get(TI)), as_dict(body.get("vertex"))
    container = as_dict(ti.get("masterConfig")).get("imageUri")
    runtime = ti.get("runtimeVersion")
    chosen = [k for k in ("executorImageUri", "framework") if vertex.get(k)]
    problem = image_problem(ti, vertex, container) if complete else None
    if problem:  # an image and a package that cannot run together (never drop the trainer)
        yield tuple(problem[0].removeprefix("$.").split(".")), problem[1]
        return
    if builds_image(vertex) and not container:
        return  # the image is built on a public base: Vertex AI's prebuilt images and their dates do not apply
    if container:
        for key in chosen:
            message = f"vertex.{key} applies to Python package jobs; this job runs a custom container"
            yield ("vertex", key), message
        return
    if "executorImageUri" in chosen and "framework" in chosen:
        yield ("vertex", "framework"), "set either vertex.framework or vertex.executorImageUri, not both"
    elif runtime and "framework" in chosen:
        message = f"runtimeVersion {runtime} picks TensorFlow {runtime} and vertex.framework picks another image; keep one"
        yield ("vertex", "framework"), message
    if not runtime and not chosen:
        if complete:
            message = (
                "a Python package job on Vertex AI needs an image: --framework/--framework-version, "
                "--executor-image-uri, or --runtime-version"
            )
            yield (TI, "runtimeVersion"), message
        return
    choice = choose_executor_image(ti, vertex, False, on)
    if choice.problem and not (choice.uri and not dated):  # a cluster is not bound by Vertex AI's dates
        path, message = choice.problem
        yield tuple(path.removeprefix("$.").split(".")), message


def _machines(ti: Mapping[str, Any], pools: list[Pool]) -> Found:
    tier = scale_tier(ti)
    for pool in pools:
        role = ROLE_BY_KEY[pool.role]
        machine, words = pool.machine_type, f"the {role.plural}"
        at_type: Path = (TI, "scaleTier") if tier != "CUSTOM" else (TI, role.type_field)
        at_acc: Path = (TI, role.config_field, "acceleratorConfig")
        if machine not in TRAINING_MACHINES:
            message = (
                f"{machine} is not a Vertex AI training machine type (n1-highcpu starts at 16 vCPUs, n1-standard "
                "at 4; see https://cloud.google.com/vertex-ai/docs/training/configure-compute)"
            )
            yield at_type, message
            continue
        carried = gpus_carried(machine)
        if not pool.accelerator:
            gpu = next((g for g, prefixes in GPU_MACHINES.items() if machine.startswith(prefixes)), None)
            if carried and gpu:
                message = f"{machine} ({words}) comes with {carried} {gpu}; set acceleratorConfig"
                yield at_type, f"{message} {{type: {gpu}, count: {carried}}}"
            continue
        gpu, count = pool.accelerator
        prefixes = GPU_MACHINES.get(gpu)
        if prefixes is None:
            continue  # TPUs are refused by the translation
        if not machine.startswith(prefixes):
            message = (
                f"{gpu} runs on {' or '.join(f'{p}*' for p in prefixes)} machines on Vertex AI, not on {machine} "
                f"({words}); set the machine type to one of those or choose another GPU"
            )
            yield (*at_acc, "type"), message
            continue
        if carried is not None and count != carried:
            yield (*at_acc, "count"), f"{machine} carries exactly {carried} {gpu}; set the count to {carried}"
        allowed = N1_GPU_COUNTS.get(gpu)
        if allowed and count not in allowed:
            counts = ", ".join(map(str, allowed))
            yield (*at_acc, "count"), f"an N1 machine takes {counts} x {gpu}, not {count}"


def _scheduling(ti: Mapping[str, Any], pools: list[Pool]) -> Found:
    sched = as_dict(ti.get("scheduling"))
    strategy = sched.get("strategy")
    if "maxWaitTime" in sched and strategy != "FLEX_START":
        message = (
            "Vertex AI limits the wait for resources (maxWaitDuration) only for FLEX_START jobs (Dynamic Workload "
            f"Scheduler, {FLEX_GPUS_WORDS} GPUs): to keep it, pass --scheduling-strategy flex-start; "
            "otherwise remove scheduling.maxWaitTime"
        )
        yield (TI, "scheduling", "maxWaitTime"), message
    if strategy != "FLEX_START":
        return
    at: Path = (TI, "scheduling", "strategy")
    for pool in pools:
        gpu = pool.accelerator[0] if pool.accelerator else None
        if gpu not in FLEX_START_GPUS:
            message = (
                f"FLEX_START (Dynamic Workload Scheduler) needs {FLEX_GPUS_WORDS} GPUs on every pool; "
                f"the {ROLE_BY_KEY[pool.role].plural} have {gpu or 'no GPU'}"
            )
            yield at, message
            break
    if len({(p.machine_type, p.accelerator) for p in pools}) > 1:
        yield at, "FLEX_START needs the same machine type and GPUs on every pool; make the pools identical"
    secs = api_duration_seconds(sched.get("maxRunningTime"))
    if secs is not None and secs > FLEX_START_MAX_TIMEOUT_S:
        message = f"FLEX_START jobs run at most 7 days ({FLEX_START_MAX_TIMEOUT_S}s)"
        yield (TI, "scheduling", "maxRunningTime"), message


def _location(name: str) -> str | None:
    parts = name.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "locations" else None


def _regions(body: Mapping[str, Any]) -> Found:
    ti, vertex = as_dict(body.get(TI)), as_dict(body.get("vertex"))
    region = ti.get("region")
    if not region:
        return
    kms = as_dict(ti.get("encryptionConfig")).get("kmsKeyName")
    if isinstance(kms, str) and _location(kms) not in (None, region):
        message = (
            f"the KMS key is in {_location(kms)} but the job runs in {region}; Vertex AI needs a key in the "
            f"job's region (--kms-location {region})"
        )
        yield (TI, "encryptionConfig", "kmsKeyName"), message
    for key in ("tensorboard", "experiment", "experimentRun"):
        name = vertex.get(key)
        if isinstance(name, str) and _location(name) not in (None, region):
            message = f"vertex.{key} is in {_location(name)}; it must be in the job's region {region}"
            yield ("vertex", key), message


def _vertex_block(body: Mapping[str, Any], complete: bool) -> Found:
    ti, vertex = as_dict(body.get(TI)), as_dict(body.get("vertex"))
    env = as_dict(vertex.get("env"))
    if len(env) > MAX_ENV:
        yield ("vertex", "env"), f"Vertex AI takes at most {MAX_ENV} environment variables per pool"
    for name in env:
        if name in RESERVED_ENV:
            yield ("vertex", "env", name), f"{name} is set by Vertex AI in every replica; do not set it"
    by_pool = as_dict(vertex.get("poolReservationAffinity")).items()
    for path, affinity in [
        (("vertex", "reservationAffinity"), vertex.get("reservationAffinity")),
        *((("vertex", "poolReservationAffinity", role), v) for role, v in by_pool),
    ]:
        aff = as_dict(affinity)
        if aff.get("reservationAffinityType") == "SPECIFIC_RESERVATION":
            if not aff.get("key") or not aff.get("values"):
                yield path, "SPECIFIC_RESERVATION needs key and values (the reservation's resource name)"
        elif aff and (aff.get("key") or aff.get("values")):
            yield path, f"{aff.get('reservationAffinityType')} takes no key or values"
    if vertex.get("experimentRun") and not vertex.get("experiment"):
        yield ("vertex", "experimentRun"), "vertex.experimentRun needs vertex.experiment"
    # A malformed name is the schema's to report (its message would be hidden behind these).
    if str(vertex.get("tensorboard") or "").startswith("projects/") and complete:
        if not ti.get("serviceAccount"):
            message = "Vertex AI TensorBoard needs a service account: pass --service-account"
            yield ("vertex", "tensorboard"), message
        if not ti.get("jobDir"):
            yield ("vertex", "tensorboard"), "Vertex AI TensorBoard needs an output directory: pass --job-dir"


def _study_ids(ti: Mapping[str, Any]) -> Found:
    """aiplatform v1 StudySpec.MetricSpec.metricId and ParameterSpec.parameterId: "Must not contain whitespaces"
    (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec, revision 20261106)."""
    hp = as_dict(ti.get("hyperparameters"))
    tag = hp.get("hyperparameterMetricTag")
    if isinstance(tag, str) and any(c.isspace() for c in tag):
        message = (
            f"{tag!r} holds whitespace; a Vertex AI metric id must not: rename the metric (and what the trainer "
            "reports)"
        )
        yield (TI, "hyperparameters", "hyperparameterMetricTag"), message
    params = hp.get("params")
    for index, param in enumerate(params if isinstance(params, list) else []):
        name = as_dict(param).get("parameterName")
        if isinstance(name, str) and any(c.isspace() for c in name):
            message = f"{name!r} holds whitespace; a Vertex AI parameter id must not: rename the parameter"
            yield (TI, "hyperparameters", "params", index, "parameterName"), message


def check_vertex(
    body: dict[str, Any], complete: bool = True, *, on: date | None = None, machines: bool = True
) -> list[tuple[Path, str]]:
    """Every Vertex AI rule over a merged body. ``machines=False`` (TFJob export: a cluster) skips machine, GPU
    and scheduling checks and the prebuilt images' end-of-availability dates."""
    ti = as_dict(body.get(TI))
    found = list(_image_source(body, complete, on or today(), dated=machines))
    pools = expand_pools(ti, Findings())  # the translation reports legacy names and tiers itself
    if machines:
        found += [*_machines(ti, pools), *_scheduling(ti, pools), *_regions(body)]
    return [*found, *_vertex_block(body, complete), *_study_ids(ti)]


def vertex_rules(*, machines: bool = True) -> TargetRules:
    """The hook for mlsubmit.job.rules.check_job: Vertex AI's rules, today."""
    return lambda body, complete: check_vertex(body, complete, machines=machines)
