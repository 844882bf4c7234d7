"""``local train --from-package``: run the trainer from the package the cloud will install, not the source tree.

The sdist is built exactly as ``training`` builds it (:func:`mlsubmit.sdist.build.build_sdist`) and ``pip install``-ed
with its dependencies into a fresh virtual environment, cached under ``$XDG_CACHE_HOME/mlsubmit/venvs`` (default
``~/.cache/mlsubmit/venvs``) by the sdist's sha256 and the base interpreter. The replicas then run from a
temporary working directory, so nothing in the source tree is importable by accident: a module missing from the
package, a forgotten package file or an undeclared dependency fails here as it would in the cloud.

The environment sees the base interpreter's site-packages (``--system-site-packages``), as the runtime image
comes with TensorFlow and friends preinstalled: declared dependencies already there are not downloaded again,
and pip builds the sdist with the setuptools already installed (``--no-build-isolation``), so this works offline.
pip's own configuration (``PIP_INDEX_URL``, ``PIP_NO_INDEX``, ``pip.conf``) is honoured for the rest.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from mlsubmit.errors import LocalRunError
from mlsubmit.processes import run_bound, temporary_directory

READY_MARKER = ".mlsubmit-ready"
_TAIL_LINES = 30
# Prints what the venv needs to know about the base interpreter, and whether it can lend us its pip.
_PROBE = (
    "import importlib.util, os, sys; "
    "print(os.path.realpath(sys.executable)); print(sys.version.split()[0]); "
    "print(int(importlib.util.find_spec('pip') is not None))"
)

Runner = Callable[..., "subprocess.CompletedProcess[bytes]"]


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where cached environments live: ``$XDG_CACHE_HOME/mlsubmit/venvs`` or ``~/.cache/mlsubmit/venvs``."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".cache"
    )
    return Path(base) / "mlsubmit" / "venvs"


def venv_python(venv_dir: Path) -> Path:
    """The interpreter of a virtual environment."""
    return venv_dir / "bin" / "python"


def prepare_package_env(
    package_dir: Path,
    base_python: str,
    *,
    cache_dir: Path,
    log: Callable[[str], None] = lambda message: None,
    run: Runner = run_bound,
) -> Path:
    """Build the trainer's sdist, install it into a cached virtual environment, and return that env's python.

    Raises PackagingError (exit 2) when the package cannot be built and LocalRunError when it cannot be
    installed (pip's output tail is in the message), like a job that fails while installing its package.
    """
    from mlsubmit.sdist.build import build_sdist

    with temporary_directory("mlsubmit-sdist-") as tmp:
        sdist = build_sdist(package_dir, Path(tmp))
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        executable, version, has_pip = _probe(base_python, run)
        key = hashlib.sha256(f"{digest}\n{executable}\n{version}".encode()).hexdigest()[:24]
        venv_dir = cache_dir / key
        with _locked(cache_dir / f"{key}.lock"):
            if (venv_dir / READY_MARKER).is_file():
                log(f"Using the cached environment for {sdist.name} (sha256 {digest[:12]}).")
                return venv_python(venv_dir)
            log(f"Installing {sdist.name} (sha256 {digest[:12]}) into a fresh environment in {venv_dir}.")
            shutil.rmtree(venv_dir, ignore_errors=True)  # a half-built one from an interrupted run
            try:
                _create(venv_dir, base_python, has_pip, run)
                _pip_install(venv_dir, sdist, run)
            except BaseException:
                shutil.rmtree(venv_dir, ignore_errors=True)
                raise
            (venv_dir / READY_MARKER).write_text(f"{sdist.name} sha256:{digest}\n")
    return venv_python(venv_dir)


def _probe(base_python: str, run: Runner) -> tuple[str, str, bool]:
    proc = run([base_python, "-c", _PROBE], stdin=subprocess.DEVNULL, capture_output=True)
    lines = proc.stdout.decode(errors="replace").split()
    if proc.returncode != 0 or len(lines) != 3:
        raise LocalRunError(f"{base_python} does not run as Python 3: {_tail(proc.stderr) or 'no output'}")
    return lines[0], lines[1], lines[2] == "1"


def _create(venv_dir: Path, base_python: str, has_pip: bool, run: Runner) -> None:
    # Without pip of its own the env is made in a fraction of a second; the base's pip (visible through
    # --system-site-packages) installs into it just as well.
    cmd = [base_python, "-m", "venv", "--system-site-packages"]
    if has_pip:
        cmd.append("--without-pip")
    proc = run([*cmd, str(venv_dir)], stdin=subprocess.DEVNULL, capture_output=True)
    if proc.returncode != 0:
        raise LocalRunError(
            f"could not create a virtual environment with {base_python}:\n{_tail(proc.stderr)}"
        )


def _pip_install(venv_dir: Path, sdist: Path, run: Runner) -> None:
    cmd = [
        str(venv_python(venv_dir)),
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "--no-build-isolation",
        str(sdist),
    ]
    env = {**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"}
    proc = run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        raise LocalRunError(
            f"pip could not install {sdist.name} (exit status {proc.returncode}); the cloud job would fail "
            f"the same way. pip said:\n{_tail(proc.stdout)}"
        )


def _tail(data: bytes | None) -> str:
    lines = (data or b"").decode(errors="replace").rstrip().splitlines()
    return "\n".join(lines[-_TAIL_LINES:])


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Serialise two runs preparing the same environment (the second then finds it ready)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
