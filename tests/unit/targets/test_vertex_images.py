"""The dated table of prebuilt training images: choice by runtime, framework or URI, and the date check."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from mlsubmit.job.vocab import FRAMEWORKS
from mlsubmit.targets.vertex_images import (
    BY_NAME,
    PREBUILT_IMAGES,
    choose_executor_image,
)

TODAY = date(2026, 11, 24)
US = "us-docker.pkg.dev/vertex-ai/training"


def ti(**kw: Any) -> dict[str, Any]:
    return {"region": "us-central1", **kw}


def test_the_table_covers_every_framework_with_cpu_and_gpu_images_and_unique_names() -> None:
    assert {i.framework for i in PREBUILT_IMAGES} == set(FRAMEWORKS)
    assert len(BY_NAME) == len(PREBUILT_IMAGES)
    for framework in ("tensorflow", "pytorch"):
        assert {i.gpu for i in PREBUILT_IMAGES if i.framework == framework} == {False, True}


def test_every_tensorflow_image_has_ended_by_november_2026() -> None:
    # Vertex's supported frameworks page: 2.11 ended November 2024, 2.17 (the newest) July 2026.
    assert not [i for i in PREBUILT_IMAGES if i.served_on(TODAY) and i.framework == "tensorflow"]
    assert BY_NAME["tf-cpu.2-11.py310"].end_of_availability == date(2024, 11, 30)
    assert BY_NAME["tf-gpu.2-14.py310"].end_of_availability == date(2025, 9, 26)


@pytest.mark.parametrize(
    ("on", "served"),
    [(date(2025, 7, 5), True), (date(2025, 7, 6), False)],
)
def test_an_image_is_served_through_its_last_day(on: date, served: bool) -> None:
    choice = choose_executor_image(ti(runtimeVersion="2.13"), {}, False, on)
    assert choice.uri == f"{US}/tf-cpu.2-13.py310:latest"  # named either way (a cluster may still run it)
    assert (choice.problem is None) is served


def test_a_past_image_is_refused_with_the_served_ones_and_how_to_choose() -> None:
    choice = choose_executor_image(ti(runtimeVersion="2.11"), {}, True, TODAY)
    assert choice.problem is not None
    path, message = choice.problem
    assert path == "$.trainingInput.runtimeVersion"
    assert "end of availability on 2024-11-30" in message
    assert "pytorch 2.4" in message
    for way in ("--framework/--framework-version", "--executor-image-uri", "vertex.framework"):
        assert way in message


def test_a_legacy_runtime_never_maps_to_another_tensorflow_version() -> None:
    for runtime in ("2.11", "2.17", "1.15"):
        choice = choose_executor_image(ti(runtimeVersion=runtime), {}, False, TODAY)
        assert choice.problem is not None and f"tf-cpu.{runtime.replace('.', '-')}" in choice.uri
        assert f"tensorflow {runtime}" in choice.problem[1]


def test_a_framework_picks_its_newest_served_version_per_pool_kind() -> None:
    cpu = choose_executor_image(ti(region="europe-west4"), {"framework": "pytorch"}, False, TODAY)
    gpu = choose_executor_image(ti(), {"framework": "pytorch", "frameworkVersion": "2.3"}, True, TODAY)
    assert cpu.uri == "europe-docker.pkg.dev/vertex-ai/training/pytorch-cpu.2-4.py310:latest"
    assert gpu.uri == f"{US}/pytorch-gpu.2-3.py310:latest"
    assert cpu.warning and "could not be confirmed" in cpu.warning


def test_an_unknown_framework_version_is_refused() -> None:
    choice = choose_executor_image(ti(), {"framework": "xgboost", "frameworkVersion": "0.9"}, False, TODAY)
    assert choice.problem and choice.problem[0] == "$.vertex.frameworkVersion"


def test_an_explicit_prebuilt_uri_is_date_checked_and_any_other_uri_passes() -> None:
    old = choose_executor_image(ti(), {"executorImageUri": f"{US}/tf-gpu.2-12.py310:latest"}, True, TODAY)
    assert old.problem and old.problem[0] == "$.vertex.executorImageUri"
    own = choose_executor_image(ti(), {}, False, TODAY, override="europe-docker.pkg.dev/p/r/trainer:7")
    assert own.uri == "europe-docker.pkg.dev/p/r/trainer:7" and own.problem is None
