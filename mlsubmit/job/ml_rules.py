"""ml v1's own rules (AI Platform Training): its runtimes and Python versions, its accelerators, and no
Vertex-only settings; rules.check_job calls these unless given another target's rules (docs/vertex.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlsubmit.job.hyperparameters import TI, Found
from mlsubmit.job.vocab import ML_V1_ACCELERATORS, ROLES, as_dict, runtime_tuple

# pythonVersion -> (whether a runtime takes it, the runtimes that do)
PYTHON_RUNTIMES: dict[str, tuple[Callable[[tuple[int, int]], bool], str]] = {
    "3.7": (lambda rt: rt >= (1, 15), "1.15 or later"),
    "3.5": (lambda rt: (1, 4) <= rt <= (1, 14), "1.4 to 1.14"),
    "2.7": (lambda rt: rt <= (1, 15), "1.15 or earlier"),
}
VERTEX_ONLY_SCHEDULING = ("strategy", "restartJobOnWorkerRestart", "disableRetries")


def check_ml_v1(body: dict[str, Any], complete: bool = True) -> Found:
    """ml v1's own rules: its runtimes and Python versions, its accelerators, no Vertex-only settings."""
    ti = as_dict(body.get(TI))
    image = as_dict(ti.get("masterConfig")).get("imageUri")
    runtime, python = ti.get("runtimeVersion"), ti.get("pythonVersion")
    if complete and not image and not runtime:
        message = (
            "set runtimeVersion (e.g. --runtime-version 2.11) or a custom container (--master-image-uri)"
        )
        yield (TI, "runtimeVersion"), message
    if python and not (image and not runtime):
        if not isinstance(python, str) or python not in PYTHON_RUNTIMES:
            yield (TI, "pythonVersion"), f"pythonVersion {python!r} is not available; choose 3.7, 3.5 or 2.7"
        elif runtime:
            rt = runtime_tuple(str(runtime))
            takes, need = PYTHON_RUNTIMES[python]
            if rt and not takes(rt):
                message = f"pythonVersion {python} needs runtimeVersion {need} (it is {runtime})"
                yield (TI, "pythonVersion"), message
    for role in ROLES:
        kind = as_dict(as_dict(ti.get(role.config_field)).get("acceleratorConfig")).get("type")
        if isinstance(kind, str) and kind not in ML_V1_ACCELERATORS:
            message = f"{kind} is a Vertex AI accelerator, not an AI Platform Training (ml v1) one; use --target vertex"
            yield (TI, role.config_field, "acceleratorConfig", "type"), message
    for key in (k for k in VERTEX_ONLY_SCHEDULING if k in as_dict(ti.get("scheduling"))):
        yield (TI, "scheduling", key), f"scheduling.{key} is a Vertex AI setting; use --target vertex"
    vertex = body.get("vertex")
    if isinstance(vertex, dict) and vertex.get("buildImage"):
        message = (
            "--build-image builds the image a Vertex AI job or an export runs: use --target vertex "
            "(or mlsubmit export)"
        )
        yield ("vertex", "buildImage"), message
    if "vertex" in body and not (isinstance(vertex, dict) and set(vertex) <= {"buildImage"}):
        yield ("vertex",), "the vertex: settings apply to --target vertex (and local train --target vertex)"
    if "kubernetes" in body:
        yield ("kubernetes",), "the kubernetes: settings apply to --target kubernetes"
