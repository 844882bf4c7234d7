"""`local train --from-package`: the trainer runs from its built package in a fresh, cached virtual
environment, so a dependency it forgot to declare fails here as it would in the cloud, while the same trainer
run from source passes. Offline: pip only sees local files (PIP_NO_INDEX).

The matrix at the end runs it on fresh base venvs this test makes itself, for every Python 3.10-3.12 on the
machine (absent ones are skipped), without setuptools and with setuptools 65 + wheel >= 0.46 (which cannot
build wheels): the base's build tools must not matter.
"""

from __future__ import annotations

import functools
import glob
import importlib.metadata
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.early import Folders, Start, early

REPO = Path(__file__).resolve().parents[2]

TASK = """\
import os, sys
import helperlib  # a sibling of the trainer package in the source tree
print("helper says", helperlib.VALUE, "from", "source" if os.getcwd() in helperlib.__file__ else "site-packages")
print("task file in", "venv" if sys.prefix != sys.base_prefix else "base interpreter")
"""


def make_project(root: Path, install_requires: list[str]) -> Path:
    """root/{setup.py, trainer/, helperlib/}: setup.py packages only `trainer`."""
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "task.py").write_text(TASK)
    (root / "helperlib").mkdir()
    (root / "helperlib" / "__init__.py").write_text("VALUE = 42\n")
    (root / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name='trainer', version='0.1', packages=['trainer'], install_requires={install_requires!r})\n"
    )
    return root / "trainer"


def run(
    package: Path, *extra: str, env: dict[str, str], base_env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "mlsubmit", "local", "train", "--package-path", str(package),
        "--module-name", "trainer.task", "--python", sys.executable, *extra,
    ]  # fmt: skip
    caller = os.environ if base_env is None else base_env
    return subprocess.run(
        cmd, env={**caller, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True, timeout=300
    )


def offline(folder: Path) -> dict[str, str]:
    """pip offline, and the venv cache in ``folder``/cache (empty)."""
    return {
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "XDG_CACHE_HOME": str(folder / "cache"),
    }


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    # HOME is already a fresh tmp dir (tests/conftest.py), so the venv cache starts empty.
    return offline(tmp_path)


@dataclass(frozen=True)
class Sequences:
    """The runs of the three tests below, made before the first test (each builds a venv: tests/fakes/early.py),
    and the number of cached environments after the second and third run of the cached one."""

    from_source: subprocess.CompletedProcess[str]
    forgotten: subprocess.CompletedProcess[str]
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    venvs_after_second: int
    third: subprocess.CompletedProcess[str]
    venvs_after_third: int
    uninstallable: subprocess.CompletedProcess[str]
    uninstallable_venvs: int


def venv_count(folder: Path) -> int:
    return len([p for p in (folder / "cache" / "mlsubmit" / "venvs").iterdir() if p.is_dir()])


@early
def sequences(start: Start) -> Sequences:
    forgotten = start.tmp.mktemp("forgotten")
    package = make_project(forgotten / "proj", install_requires=[])
    from_source = run(package, env=offline(forgotten), base_env=start.env)
    from_package = run(package, "--from-package", env=offline(forgotten), base_env=start.env)

    # helperlib as a real distribution in a local "index" (find-links), declared by the trainer this time.
    cached = start.tmp.mktemp("cached")
    package = make_project(cached / "proj", install_requires=["helperlib==1.0"])
    env = {**offline(cached), "PIP_FIND_LINKS": str(helperlib_wheels(start.tmp, start.env))}
    first = run(package, "--from-package", env=env, base_env=start.env)
    second = run(package, "--from-package", env=env, base_env=start.env)
    after_second = venv_count(cached)
    # A changed package is a new environment, not a stale one.
    (package / "task.py").write_text(TASK + "print('changed')\n")
    third = run(package, "--from-package", env=env, base_env=start.env)

    uninstallable = start.tmp.mktemp("uninstallable")
    package = make_project(uninstallable / "proj", install_requires=["no-such-dependency-xyz"])
    refused = run(package, "--from-package", env=offline(uninstallable), base_env=start.env)
    return Sequences(
        from_source, from_package, first, second, after_second, third, venv_count(cached), refused,
        venv_count(uninstallable),
    )  # fmt: skip


def test_forgotten_dependency_fails_from_package_but_passes_from_source(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    runs = sequences.result(tmp_path_factory)

    from_source = runs.from_source
    assert from_source.returncode == 0, from_source.stderr
    assert "[chief] helper says 42 from source" in from_source.stdout

    from_package = runs.forgotten
    assert from_package.returncode == 1, from_package.stderr
    assert "[chief] ModuleNotFoundError: No module named 'helperlib'" in from_package.stderr.splitlines()
    assert from_package.stderr.splitlines()[-1] == "ERROR: [chief] exited with status 1."
    assert "Traceback" not in from_package.stderr.replace("[chief] Traceback", "")  # only the trainer's own


def test_declared_dependency_is_installed_and_the_environment_is_cached(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    runs = sequences.result(tmp_path_factory)

    first = runs.first
    assert first.returncode == 0, first.stderr
    assert "[chief] helper says 42 from site-packages" in first.stdout
    assert "[chief] task file in venv" in first.stdout
    assert "Installing trainer-0.1.tar.gz" in first.stderr

    second = runs.second
    assert second.returncode == 0, second.stderr
    assert "Using the cached environment for trainer-0.1.tar.gz" in second.stderr
    assert runs.venvs_after_second == 1

    # A changed package is a new environment, not a stale one.
    third = runs.third
    assert third.returncode == 0, third.stderr
    assert "[chief] changed" in third.stdout
    assert runs.venvs_after_third == 2


def test_uninstallable_dependency_fails_at_install(tmp_path_factory: pytest.TempPathFactory) -> None:
    result = sequences.result(tmp_path_factory).uninstallable
    assert result.returncode == 1
    assert result.stderr.startswith("Installing trainer-0.1.tar.gz")
    assert "ERROR: pip could not install trainer-0.1.tar.gz" in result.stderr
    assert "no-such-dependency-xyz" in result.stderr
    assert sequences.result(tmp_path_factory).uninstallable_venvs == 0  # not cached


# -- fresh base venvs: Python 3.10-3.12, with and without setuptools ------------------------------------------


@functools.cache
def find_python(minor: str) -> str | None:
    """A working Python `minor`: a pyenv build of it, else `pythonX.Y` on PATH (pyenv's shims may not run).

    HOME is a temp dir in tests, so pyenv's root comes from PYENV_ROOT or the password database.
    """
    root = os.environ.get("PYENV_ROOT") or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")
    candidates = sorted(
        glob.glob(os.path.join(root, "versions", f"{minor}.*", "bin", "python")), reverse=True
    )
    candidates += [found] if (found := shutil.which(f"python{minor}")) else []
    for python in candidates:
        check = [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
        # a plain environment: this may run beside a test that changed os.environ (tests/fakes/early.py)
        done = subprocess.run(check, capture_output=True, text=True, timeout=60, env={"PATH": os.defpath})
        if done.returncode == 0 and done.stdout.strip() == minor:
            return python
    return None


def setuptools_65_wheel() -> str | None:
    """setuptools 65 as bundled by Python 3.10/3.11's ensurepip, wherever a Python of the machine has it."""
    pattern = "lib/python3.1[01]/ensurepip/_bundled/setuptools-65.*-py3-none-any.whl"
    for minor in ("3.11", "3.10"):
        python = find_python(minor)
        if python:
            prefix = Path(os.path.realpath(python)).parents[1]
            hits = sorted(prefix.glob(pattern))
            if hits:
                return str(hits[-1])
    return None


def new_wheel_dist() -> importlib.metadata.Distribution | None:
    """The wheel >= 0.46 installed alongside the test runner (TensorFlow pulls one in), to copy into a base."""
    try:
        dist = importlib.metadata.distribution("wheel")
    except importlib.metadata.PackageNotFoundError:
        return None
    major, minor = (int(x) for x in dist.version.split(".")[:2])
    return dist if (major, minor) >= (0, 46) else None


BASES = [
    (minor, kind) for minor in ("3.10", "3.11", "3.12") for kind in ("no-setuptools", "setuptools65-wheel")
]


def quiet(*cmd: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Bases:
    """Fresh venvs of Python `minor` shaped as `kind`, each made once, offline, every command run with ``env``.

    pip comes from one ensurepip run, copied into each (ensurepip takes seconds; pip is pure Python).
    """

    def __init__(self, tmp: Folders, env: dict[str, str]) -> None:
        self.tmp = tmp
        self.env = env
        self.made: dict[tuple[str, str], str] = {}
        self.pip_files: list[Path] = []

    def make(self, minor: str, kind: str) -> str:
        if (minor, kind) in self.made:
            return self.made[(minor, kind)]
        python = find_python(minor)
        if python is None:
            pytest.skip(f"no Python {minor} on this machine")
        env = self.env
        offline = {**env, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        root = self.tmp.mktemp(f"base-{minor}-{kind}")
        quiet(python, "-m", "venv", "--without-pip", str(root), env=env)
        base = str(root / "bin" / "python")
        site = Path(
            quiet(base, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", env=env).strip()
        )
        if not self.pip_files:
            # The newest Python's bundled pip: older pips do not run on newer Pythons (pip 23.0 on 3.12).
            newest = next(p for p in (find_python(m) for m in ("3.12", "3.11", "3.10")) if p)
            holder = self.tmp.mktemp("pip-holder")
            quiet(newest, "-m", "venv", str(holder), env=env)
            [holder_site] = holder.glob("lib/python*/site-packages")
            self.pip_files.extend(
                p for p in holder_site.iterdir() if p.name == "pip" or p.name.startswith("pip-")
            )
        for source in self.pip_files:
            shutil.copytree(source, site / source.name)
        if kind == "setuptools65-wheel":
            dist = new_wheel_dist()
            bundled = setuptools_65_wheel()
            if dist is None or bundled is None:
                pytest.skip("no wheel >= 0.46 or setuptools 65 wheel on this machine to make this base")
            quiet(base, "-m", "pip", "install", "-q", bundled, env=offline)
            for file in dist.files or []:  # a copy of the runner's wheel >= 0.46, as pip would lay it out
                if file.parts[0].startswith("wheel"):
                    target = site / file
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(Path(str(dist.locate_file(file))), target)
            # Versions from the metadata: setuptools 65 does not even import on Python 3.12 (pkgutil lost
            # ImpImporter), which is one more base a package must install on.
            probe = (
                "from importlib.metadata import version as v; "
                "print(v('setuptools').split('.')[0], v('wheel'))"
            )
            major, wheel_version = quiet(base, "-c", probe, env=env).split()
            assert major == "65" and wheel_version == dist.version
        else:  # "no-setuptools", or any other name for one more base of that shape
            assert not (site / "setuptools").exists()
        self.made[(minor, kind)] = base
        return base


def helperlib_wheels(tmp: Folders, env: dict[str, str]) -> Path:
    """helperlib 1.0 as a wheel in a local find-links folder (built once, by the test runner's Python)."""
    root = tmp.mktemp("helperlib")
    (root / "dep" / "helperlib").mkdir(parents=True)
    (root / "dep" / "helperlib" / "__init__.py").write_text("VALUE = 42\n")
    (root / "dep" / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='helperlib', version='1.0', packages=['helperlib'])\n"
    )
    quiet(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
          str(root / "wheels"), str(root / "dep"), env={**env, "PIP_NO_INDEX": "1"})  # fmt: skip
    return root / "wheels"


def run_on(
    base: str, package: Path, env: dict[str, str], base_env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "mlsubmit", "local", "train", "--package-path", str(package),
        "--module-name", "trainer.task", "--python", base, "--from-package",
    ]  # fmt: skip
    caller = os.environ if base_env is None else base_env
    return subprocess.run(
        cmd, env={**caller, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True, timeout=300
    )


MIXED_TASK = """\
import helperlib  # declared: installed from the local index
print("helper says", helperlib.VALUE, "from", "site-packages" if "site-packages" in helperlib.__file__ else "source")
import forgottenlib  # a sibling in the source tree, neither packaged nor declared
"""


@dataclass(frozen=True)
class MatrixRun:
    """The mixed trainer run on one base, and the base's Python version; or why the base could not be made."""

    result: subprocess.CompletedProcess[str] | None = None
    version: str = ""
    skipped: str = ""


@early
def fresh_base_matrix(start: Start) -> tuple[Bases, dict[tuple[str, str], MatrixRun]]:
    """Every base of the matrix made and the mixed trainer run on it, before the first test (each run builds a
    venv: tests/fakes/early.py). The bases serve this module's other tests too."""
    bases = Bases(start.tmp, start.env)
    wheels = helperlib_wheels(start.tmp, start.env)
    runs: dict[tuple[str, str], MatrixRun] = {}
    for minor, kind in BASES:
        try:
            base = bases.make(minor, kind)
        except pytest.skip.Exception as skipped:
            runs[(minor, kind)] = MatrixRun(skipped=skipped.msg)
            continue
        folder = start.tmp.mktemp(f"on-base-{minor}-{kind}")
        package = make_project(folder / "proj", install_requires=["helperlib==1.0"])
        (package / "task.py").write_text(MIXED_TASK)
        (package.parent / "helperlib").rename(package.parent / "forgottenlib")
        result = run_on(base, package, {**offline(folder), "PIP_FIND_LINKS": str(wheels)}, start.env)
        version = quiet(base, "-c", "import sys; print(sys.version.split()[0])", env=start.env).strip()
        runs[(minor, kind)] = MatrixRun(result, version)
    return bases, runs


@pytest.fixture(scope="module")
def make_base(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], str]:
    return fresh_base_matrix.result(tmp_path_factory)[0].make


@pytest.mark.parametrize(("minor", "kind"), BASES, ids=[f"{m}-{k}" for m, k in BASES])
def test_from_package_on_a_fresh_base_venv(
    minor: str, kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One run shows both: the declared dependency installs, the forgotten one fails as in the cloud."""
    run = fresh_base_matrix.result(tmp_path_factory)[1][(minor, kind)]
    if run.skipped:
        pytest.skip(run.skipped)
    result = run.result
    assert result is not None

    assert "[chief] helper says 42 from site-packages" in result.stdout, result.stderr
    assert "[chief] ModuleNotFoundError: No module named 'forgottenlib'" in result.stderr.splitlines()
    assert result.stderr.splitlines()[-1] == "ERROR: [chief] exited with status 1."
    assert result.returncode == 1
    assert run.version.startswith(minor + ".")


def test_a_package_without_setup_py_runs_from_its_generated_package(
    make_base: Callable[[str, str], str], tmp_path: Path, offline_env: dict[str, str]
) -> None:
    """No setup.py: mlsubmit writes the sdist and its wheel itself; subpackages and data files come along."""
    minor = next((m for m in ("3.12", "3.11", "3.10") if find_python(m)), None)
    if minor is None:
        pytest.skip("no Python 3.10-3.12 on this machine")
    package = tmp_path / "src" / "trainer"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "vocab.txt").write_text("alpha\n")
    (package / "task.py").write_text(
        "import importlib.resources, sys\n"
        "import trainer.models\n"
        "print('vocab', importlib.resources.files('trainer.models').joinpath('vocab.txt').read_text().strip())\n"
        "print('in venv', sys.prefix != sys.base_prefix, 'from', 'site-packages' if 'site-packages' in "
        "trainer.models.__file__ else 'source')\n"
    )

    result = run_on(make_base(minor, "no-setuptools"), package, offline_env)

    assert result.returncode == 0, result.stderr
    assert "[chief] vocab alpha" in result.stdout
    assert "[chief] in venv True from site-packages" in result.stdout
    assert "Installing trainer-0.0.0.tar.gz" in result.stderr


def test_the_package_wins_over_a_copy_of_the_project_installed_in_the_base(
    make_base: Callable[[str, str], str], tmp_path: Path, offline_env: dict[str, str]
) -> None:
    """A base that has the trainer installed already (a developer's `pip install -e .`, or an older build of
    the same version) must not stand in for the package being tested."""
    from mlsubmit.sdist.build import build_sdist
    from mlsubmit.sdist.wheel import wheel_from_sdist

    minor = next((m for m in ("3.12", "3.11", "3.10") if find_python(m)), None)
    if minor is None:
        pytest.skip("no Python 3.10-3.12 on this machine")
    base = make_base(minor, "trainer-installed")
    package = tmp_path / "src" / "trainer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('old build')\n")
    old = wheel_from_sdist(build_sdist(package, tmp_path / "old"), tmp_path / "old")
    quiet(base, "-m", "pip", "install", "-q", "--no-deps", str(old), env={**os.environ, **offline_env})
    (package / "task.py").write_text("print('new code')\n")

    result = run_on(base, package, offline_env)

    assert result.returncode == 0, result.stderr
    assert "[chief] new code" in result.stdout
