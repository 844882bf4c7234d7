"""Which interpreter local runs use (gcloud's ml_engine/local_python included) and what its TensorFlow is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mlsubmit.local.interpreter import (
    choose_python,
    gcloud_local_python,
    is_import_failure,
    run_warning,
    tensorflow_version,
)


def gcloud_config(root: Path, name: str, text: str, active: str | None = None) -> dict[str, str]:
    (root / "configurations").mkdir(parents=True, exist_ok=True)
    (root / "configurations" / f"config_{name}").write_text(text)
    if active is not None:
        (root / "active_config").write_text(active)
    return {"CLOUDSDK_CONFIG": str(root)}


def test_the_property_from_the_active_configuration(tmp_path: Path) -> None:
    env = gcloud_config(
        tmp_path, "default", "[core]\nproject = p\n\n[ml_engine]\nlocal_python = /opt/py/bin/python3\n"
    )
    assert gcloud_local_python(env) == (
        "/opt/py/bin/python3",
        "gcloud property ml_engine/local_python (configuration default)",
    )
    gcloud_config(tmp_path, "work", "[ml_engine]\nlocal_python = /w/python\n", active="work\n")
    assert gcloud_local_python(env) == (
        "/w/python",
        "gcloud property ml_engine/local_python (configuration work)",
    )
    named = {**env, "CLOUDSDK_ACTIVE_CONFIG_NAME": "default"}
    assert gcloud_local_python(named)[0] == "/opt/py/bin/python3"  # type: ignore[index]
    # the environment variable wins over the file, as in gcloud
    assert gcloud_local_python({**env, "CLOUDSDK_ML_ENGINE_LOCAL_PYTHON": "/e/python"}) == (
        "/e/python",
        "CLOUDSDK_ML_ENGINE_LOCAL_PYTHON",
    )


@pytest.mark.parametrize(
    "text", ["", "[core]\nproject = p\n", "not an ini file [[[\n", "[ml_engine]\nlocal_python =\n"]
)
def test_no_property(tmp_path: Path, text: str) -> None:
    assert gcloud_local_python(gcloud_config(tmp_path, "default", text)) is None


def test_a_missing_or_odd_configuration_is_no_property(tmp_path: Path) -> None:
    assert gcloud_local_python({"CLOUDSDK_CONFIG": str(tmp_path / "none")}) is None
    (tmp_path / "configurations").mkdir()
    (tmp_path / "configurations" / "config_default").mkdir()  # a directory, not a file
    assert gcloud_local_python({"CLOUDSDK_CONFIG": str(tmp_path)}) is None


def test_precedence(tmp_path: Path) -> None:
    env = gcloud_config(tmp_path, "default", "[ml_engine]\nlocal_python = /g/python\n")
    assert choose_python("/f/python", {**env, "MLSUBMIT_LOCAL_PYTHON": "/m/python"}) == (
        "/f/python",
        "--python",
    )
    assert choose_python(None, {**env, "MLSUBMIT_LOCAL_PYTHON": "/m/python"}) == (
        "/m/python",
        "MLSUBMIT_LOCAL_PYTHON",
    )
    assert choose_python(None, env)[0] == "/g/python"
    assert choose_python(None, {"CLOUDSDK_CONFIG": str(tmp_path / "none")}) == (None, "the default python3")


def fake_python(tmp_path: Path, version: str) -> str:
    """An "interpreter" that answers the probe with ``version`` (empty: no TensorFlow)."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\necho '{version}'\n")
    script.chmod(0o755)
    return str(script)


def test_tensorflow_version_and_the_runtime_warning(tmp_path: Path) -> None:
    python = fake_python(tmp_path, "2.17.1")
    assert tensorflow_version(python) == "2.17.1"
    warning = run_warning(python, "--python", {"runtimeVersion": "2.11"}, {})
    assert warning is not None and "TensorFlow 2.17.1, but the job's runtimeVersion is 2.11" in warning
    assert run_warning(python, "--python", {"runtimeVersion": "2.17"}, {}) is None
    assert run_warning(python, "--python", None, {}) is None
    none = fake_python(tmp_path, "")
    assert "which has no TensorFlow" in (run_warning(none, "--python", {"runtimeVersion": "2.11"}, {}) or "")


def test_the_real_interpreter_is_asked_without_importing_tensorflow() -> None:
    assert tensorflow_version(sys.executable) is not None  # a version or "" (none installed)
    assert tensorflow_version("/no/such/python") is None


def test_import_failures_are_recognised() -> None:
    assert is_import_failure(b"ModuleNotFoundError: No module named 'tensorflow'\n")
    assert is_import_failure(b"ImportError: cannot import name 'x'\n")
    assert not is_import_failure(b"print('ModuleNotFoundError: ')  # a line of code\n")
