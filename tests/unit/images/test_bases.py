"""The base of the training image: --base-image, else the runtime's row of the dated table, else the framework."""

from __future__ import annotations

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.images.bases import TABLE_DATE, BaseWanted, choose_base


def base(**given: object) -> object:
    return choose_base(BaseWanted(**given))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "image"),
    [
        ({"runtime_version": "2.11"}, "tensorflow/tensorflow:2.11.0"),
        ({"runtime_version": "2.11", "gpu": True}, "tensorflow/tensorflow:2.11.0-gpu"),
        ({"runtime_version": "2.11", "python_version": "3.7"}, "tensorflow/tensorflow:2.11.0"),
        ({"runtime_version": "2.2"}, "tensorflow/tensorflow:2.2.0"),
        ({"runtime_version": "2.1", "gpu": True}, "tensorflow/tensorflow:2.1.0-gpu-py3"),
        ({"runtime_version": "1.15"}, "tensorflow/tensorflow:1.15.5-py3"),
        # --base-image wins over everything, --framework over the runtime
        ({"runtime_version": "2.11", "base_image": "python:3.11-slim", "gpu": True}, "python:3.11-slim"),
        (
            {"runtime_version": "2.11", "framework": "pytorch"},
            "pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime",
        ),
        (
            {"framework": "tensorflow", "framework_version": "2.17", "gpu": True},
            "tensorflow/tensorflow:2.17.0-gpu",
        ),
        ({"framework": "tensorflow", "framework_version": "2.16"}, "tensorflow/tensorflow:2.16.1"),
        ({"framework": "scikit-learn"}, "python:3.10-slim"),
        ({}, "tensorflow/tensorflow:2.17.0"),
    ],
)
def test_base_choice(given: dict[str, object], image: str) -> None:
    assert base(**given).image == image  # type: ignore[attr-defined]


def test_runtime_row_says_its_page_date_and_how_sure_it_is() -> None:
    chosen = base(runtime_version="2.11")
    assert "runtimeVersion 2.11" in chosen.reason  # type: ignore[attr-defined]
    assert TABLE_DATE in chosen.reason  # type: ignore[attr-defined]
    assert "hub.docker.com/r/tensorflow/tensorflow" in chosen.reason  # type: ignore[attr-defined]
    assert "tag seen in public Dockerfiles" in chosen.reason  # type: ignore[attr-defined]
    assert chosen.pip_break_system is None  # type: ignore[attr-defined]  # Ubuntu's pip installs as is


def test_unknown_base_installs_with_pep668_override_and_framework_pins_from_pypi() -> None:
    assert base(base_image="debian:bookworm").pip_break_system == "env"  # type: ignore[attr-defined]
    assert base(framework="xgboost").requirements == ("xgboost==1.7.*",)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"runtime_version": "3.0"}, "runtimeVersion '3.0'"),
        ({"runtime_version": "2.11", "python_version": "3.11"}, "offered Python 3.7, not 3.11"),
        ({"framework": "tensorflow", "framework_version": "2.18"}, "--framework tensorflow 2.18"),
        ({"framework": "pytorch", "framework_version": "1.0"}, "--framework pytorch 1.0"),
    ],
)
def test_what_the_table_lacks_names_base_image(given: dict[str, object], words: str) -> None:
    with pytest.raises(UsageError, match="--base-image") as caught:
        base(**given)
    assert words in str(caught.value)
