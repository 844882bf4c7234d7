"""``local train --from-package``: run the trainer from the package the cloud installs, not the source tree: the
sdist made a wheel, ``pip install``-ed into a venv cached under ``$XDG_CACHE_HOME/mlsubmit/venvs`` by content and
base interpreter (whose site-packages it sees), run from an empty folder. :data:`MAX_CACHED` venvs are kept."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from mlsubmit.errors import LocalRunError, UsageError
from mlsubmit.proc.processes import run_bound, temporary_directory

READY_MARKER = ".mlsubmit-ready"
MAX_CACHED = 8  # environments kept in the cache (each holds the trainer's dependencies: often hundreds of MB)
_LAYOUT = "2"  # part of the cache key: environments made by an older mlsubmit are not reused
_TAIL_LINES = 30
_PTH = "_mlsubmit_base.pth"
# What the venv needs to know about the base interpreter: where it is, its version and prefix, its
# site-packages (lent through a .pth file), and whether it can lend us its pip.
_PROBE = (
    "import importlib.util, json, os, site, sys; "
    "print(json.dumps({'executable': os.path.realpath(sys.executable), 'version': sys.version.split()[0], "
    "'prefix': sys.prefix, 'site': site.getsitepackages(), "
    "'pip': importlib.util.find_spec('pip') is not None}))"
)


def cache_root(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/mlsubmit/venvs`` or ``~/.cache/mlsubmit/venvs``."""
    from mlsubmit.proc.files import user_dir

    base = user_dir(environ, "XDG_CACHE_HOME", ".cache")
    if base is None:
        raise UsageError(
            "--from-package keeps its environments in a cache folder, but this user has no home directory: "
            "set XDG_CACHE_HOME to a folder you can write."
        )
    return base / "mlsubmit" / "venvs"


def prepare_package_env(
    package_dir: Path, python: str, *, cache_dir: Path, log: Callable[[str], None]
) -> Path:
    """The python of a cached venv with the trainer's sdist installed; LocalRunError when it cannot be installed."""
    from mlsubmit.sdist.build import build_sdist
    from mlsubmit.sdist.digest import digests_of

    with temporary_directory("mlsubmit-sdist-") as tmp:
        sdist = build_sdist(package_dir, Path(tmp))
        digest = digests_of(sdist).content
        base = _probe(python)
        key_text = f"{_LAYOUT}\n{digest}\n{base['executable']}\n{base['version']}\n{base['prefix']}"
        key = hashlib.sha256(key_text.encode()).hexdigest()[:24]
        venv_dir = cache_dir / key
        with _locked(cache_dir / f"{key}.lock"):
            if (venv_dir / READY_MARKER).is_file():
                (venv_dir / READY_MARKER).touch()  # most recently used: kept longest
                log(f"Using the cached environment for {sdist.name} (sha256 {digest[:12]}).")
                return venv_dir / "bin" / "python"
            log(f"Installing {sdist.name} (sha256 {digest[:12]}) into a fresh environment in {venv_dir}.")
            from mlsubmit.sdist.wheel import wheel_from_sdist

            wheel = wheel_from_sdist(sdist, Path(tmp) / "wheel")
            shutil.rmtree(venv_dir, ignore_errors=True)  # a half-built one from an interrupted run
            try:
                _create(venv_dir, python, base)
                _pip_install(venv_dir, sdist.name, wheel)
            except BaseException:
                shutil.rmtree(venv_dir, ignore_errors=True)
                raise
            (venv_dir / READY_MARKER).write_text(f"{sdist.name} sha256:{digest}\n")
        for removed in prune_cache(cache_dir, keep=MAX_CACHED):
            log(f"Removed the least recently used environment {removed} (the cache keeps {MAX_CACHED}).")
    return venv_dir / "bin" / "python"


def prune_cache(cache_dir: Path, *, keep: int) -> list[Path]:
    """Remove all but the ``keep`` most recently used environments (one another run holds stays); those removed."""
    ready = []
    for marker in cache_dir.glob(f"*/{READY_MARKER}"):
        with contextlib.suppress(OSError):
            ready.append((marker.stat().st_mtime, marker.parent))
    removed = []
    for _, venv_dir in sorted(ready, reverse=True)[keep:]:
        with _locked(cache_dir / f"{venv_dir.name}.lock", wait=False) as mine:
            if mine:
                shutil.rmtree(venv_dir, ignore_errors=True)
                removed.append(venv_dir)
    return removed


def clean_cache(cache_dir: Path) -> tuple[list[Path], list[Path]]:
    """``mlsubmit local clean``: (the environments removed, those another run holds)."""
    removed = prune_cache(cache_dir, keep=0)
    return removed, sorted(m.parent for m in cache_dir.glob(f"*/{READY_MARKER}"))


def _probe(base_python: str) -> dict[str, Any]:
    proc = run_bound([base_python, "-c", _PROBE], stdin=subprocess.DEVNULL, capture_output=True)
    try:
        found = json.loads(proc.stdout.decode(errors="replace").strip().splitlines()[-1])
        if proc.returncode != 0 or not isinstance(found, dict) or not isinstance(found.get("site"), list):
            raise ValueError(found)
    except (ValueError, IndexError, RecursionError):
        raise LocalRunError(
            f"{base_python} does not run as Python 3: {_tail(proc.stderr) or 'no output'}"
        ) from None
    return found


def _create(venv_dir: Path, base_python: str, base: dict[str, Any]) -> None:
    # Without pip of its own the env is made in a fraction of a second; the base's pip (visible through
    # the .pth file) installs into it just as well.
    cmd = [base_python, "-m", "venv", *(["--without-pip"] if base["pip"] else []), str(venv_dir)]
    proc = run_bound(cmd, stdin=subprocess.DEVNULL, capture_output=True)
    if proc.returncode != 0:
        raise LocalRunError(
            f"could not create a virtual environment with {base_python}:\n{_tail(proc.stderr)}"
        )
    found = sorted(venv_dir.glob("lib/python*/site-packages"))  # a fresh venv has one
    if not found:
        raise LocalRunError(f"the virtual environment {venv_dir} has no site-packages folder")
    # After the env's own site-packages, so what the trainer installs wins over what the base lends; added
    # as site dirs, so the base's own .pth files (editable installs, namespace packages) work as well.
    lines = [f"import site; site.addsitedir({str(path)!r})\n" for path in base["site"]]
    (found[0] / _PTH).write_text("".join(lines))


def _pip_install(venv_dir: Path, sdist_name: str, wheel: Path) -> None:
    """Install the wheel into the env itself (not the base's editable copy), then its dependencies."""
    python = str(venv_dir / "bin" / "python")
    base_cmd = [python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    # --no-build-isolation: dependencies that come as sdists build offline, with what is installed
    base_cmd.append("--no-build-isolation")
    steps = [[*base_cmd, "--no-deps", "--ignore-installed", str(wheel)]]
    with zipfile.ZipFile(wheel) as whl:  # then its dependencies, if it declares any
        metadata = [n for n in whl.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        text = whl.read(metadata[0]).decode("utf-8", errors="replace") if metadata else ""
    if any(line.startswith("Requires-Dist:") for line in text.splitlines()):
        steps.append([*base_cmd, str(wheel)])
    env = {**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"}
    for cmd in steps:
        proc = run_bound(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
        )
        if proc.returncode != 0:
            raise LocalRunError(
                f"pip could not install {sdist_name} (as {wheel.name}, exit status {proc.returncode}). A "
                "dependency that does not exist or conflicts fails the cloud job the same way; one that is "
                "only missing from what pip can reach here (PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX) may "
                f"still install from PyPI in the cloud. pip said:\n{_tail(proc.stdout)}"
            )


def _tail(data: bytes | None) -> str:
    lines = (data or b"").decode(errors="replace").rstrip().splitlines()
    return "\n".join(lines[-_TAIL_LINES:])


@contextlib.contextmanager
def _locked(lock_path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Serialise runs preparing one environment; ``wait=False`` yields False when another run holds it."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True  # closing the file releases the lock
