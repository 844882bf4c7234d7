"""Which Python the local replicas run (docs/local.md): ``--python``, ``MLSUBMIT_LOCAL_PYTHON``, gcloud's
``ml_engine/local_python`` (read as the Cloud SDK's command_lib/ml_engine/local_train.py and named_configs.py do),
else ``python3``; and its TensorFlow version (package metadata, no import) against ``runtimeVersion``."""

from __future__ import annotations

import configparser
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from mlsubmit.errors import ConfigFileError
from mlsubmit.proc.files import read_bounded

PYTHON_ENV_VAR = "MLSUBMIT_LOCAL_PYTHON"
GCLOUD_ENV_VAR = "CLOUDSDK_ML_ENGINE_LOCAL_PYTHON"
GCLOUD_PROPERTY = "ml_engine/local_python"
PROBE_TIMEOUT_S = 10.0
MAX_GCLOUD_CONFIG_BYTES = 256 * 1024
_CONFIG_NAME = re.compile(r"[a-z][-a-z0-9]*")
_PROBE = (
    "import importlib.metadata as m\n"
    "for name in ('tensorflow', 'tensorflow-cpu', 'tensorflow-gpu', 'tensorflow-macos', 'tf-nightly'):\n"
    "    try:\n        print(m.version(name)); break\n    except Exception: pass\n"
)
HOW_TO_CHOOSE = f"--python, {PYTHON_ENV_VAR} or `gcloud config set {GCLOUD_PROPERTY} PATH`"


def _read(path: Path) -> str | None:
    try:
        return read_bounded(
            str(path), what="a gcloud configuration", max_bytes=MAX_GCLOUD_CONFIG_BYTES
        ).decode("utf-8", "replace")
    except ConfigFileError:
        return None


def gcloud_local_python(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """gcloud's ``ml_engine/local_python`` and where it was set; None when it is not."""
    if value := environ.get(GCLOUD_ENV_VAR):
        return value, GCLOUD_ENV_VAR
    given = environ.get("CLOUDSDK_CONFIG")  # else gcloud's default ~/.config/gcloud
    config_dir = Path(given) if given else Path(environ.get("HOME") or Path.home()) / ".config" / "gcloud"
    name = environ.get("CLOUDSDK_ACTIVE_CONFIG_NAME") or (_read(config_dir / "active_config") or "").strip()
    if not _CONFIG_NAME.fullmatch(name or ""):
        name = "default"
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(_read(config_dir / "configurations" / f"config_{name}") or "")
    except configparser.Error:
        return None
    value = parser.get("ml_engine", "local_python", fallback="").strip()
    return (value, f"gcloud property {GCLOUD_PROPERTY} (configuration {name})") if value else None


def choose_python(flag: str | None, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(the interpreter asked for, or None for ``python3`` on PATH; where that choice came from)."""
    if flag:
        return flag, "--python"
    if environ.get(PYTHON_ENV_VAR):
        return environ[PYTHON_ENV_VAR], PYTHON_ENV_VAR
    return gcloud_local_python(environ) or (None, "the default python3")


def tensorflow_version(python: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The TensorFlow version installed for ``python`` ("" when none is; None when it could not be asked)."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _PROBE],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S,
            env=None if environ is None else dict(environ),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace").strip()[:40] if done.returncode == 0 else None


def run_warning(
    python: str, source: str, training_input: Mapping[str, object] | None, environ: Mapping[str, str]
) -> str | None:
    """A warning when ``python``'s TensorFlow is not the ``runtimeVersion`` of a run's ``training_input``."""
    wanted = str((training_input or {}).get("runtimeVersion") or "").strip()
    if not re.fullmatch(r"\d+\.\d+", wanted):
        return None
    have = tensorflow_version(python, environ)
    if have is None or have.startswith(wanted + ".") or have == wanted:
        return None
    found = f"TensorFlow {have}" if have else "no TensorFlow"
    return (
        f"the replicas run {python} (from {source}), which has {found}, but the job's runtimeVersion is {wanted}: "
        f"tf.estimator (gone in 2.16) and Keras 3 (from 2.16) behave differently; choose an interpreter with "
        f"TensorFlow {wanted} with {HOW_TO_CHOOSE}"
    )


def missing_module(line: bytes) -> str | None:
    """The module a ``ModuleNotFoundError: No module named 'x'`` line names (its top-level name), if any."""
    _, found, name = line.decode("utf-8", "replace").strip().partition("No module named ")
    return (name.strip().strip("'\"").split(".")[0] or None) if found else None


def is_import_failure(line: bytes) -> bool:
    """A traceback's last line saying an import failed."""
    return line.lstrip().startswith((b"ModuleNotFoundError: ", b"ImportError: "))
