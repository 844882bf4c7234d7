"""The trainer's declared requirements against the image (a pin replacing its TensorFlow, a Keras not matching it, a
pin excluding its version; the built sdist's metadata, else ``setup.py`` read as an AST and ``pyproject.toml``), and
the modules it imports that nothing installs (docs/migrate.md)."""

from __future__ import annotations

import ast
import itertools
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mlsubmit.errors import ConfigFileError
from mlsubmit.migrate.findings import Finding, ImageVersions, version_tuple
from mlsubmit.migrate.rules import PANDAS_GBQ_MINIMUM
from mlsubmit.migrate.scan import Uses
from mlsubmit.proc.files import read_bounded

if TYPE_CHECKING:
    from mlsubmit.sdist.digest import Local

MAX_PROJECT_FILE_BYTES = 1024 * 1024
TENSORFLOW_NAMES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu")
MAX_METADATA_BYTES = 256 * 1024  # PKG-INFO / requires.txt of a trainer: a few lines
MAX_SDIST_MEMBERS = 10_000
# A requirements file named in setup.py ("requirements.txt", "reqs/base-req.txt"); patterns re compiles on first use.
_REQUIREMENTS_FILE = r"[\w./-]*req[\w./-]*\.txt"
# The project name a requirement line starts with (PEP 508), enough to tell which distribution it installs.
_REQUIREMENT_NAME = r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)"
# Calls whose literal arguments name a file setup.py reads: open, io.open, codecs.open, os.path.join, Path.
_OPENERS = frozenset({"open", "join", "Path"})


class BuiltRequirements(NamedTuple):
    """What the built sdist says it installs, and the files it holds (paths under its top folder)."""

    requirements: tuple[str, ...]
    files: frozenset[str]


def requirement_name(text: str) -> str | None:
    """The normalised distribution name a requirement line installs (``Pandas_GBQ>=0.3`` -> ``pandas-gbq``)."""
    match = re.match(_REQUIREMENT_NAME, text)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else None


def _setup_requirements(source: bytes) -> list[tuple[str, int]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    assigned: dict[str, ast.expr] = {}  # NAME = [...] or NAME = 'tensorflow==1.15' at module level
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = stmt.value

    def value(node: ast.expr) -> ast.expr:
        return assigned.get(node.id, node) if isinstance(node, ast.Name) else node

    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _callee(node) == "setup"]
    for keyword in (k for call in calls for k in call.keywords if k.arg == "install_requires"):
        if isinstance(listed := value(keyword.value), (ast.List, ast.Tuple)):
            texts = [value(e) for e in listed.elts]
            return [
                (e.value, e.lineno) for e in texts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return []


def _callee(call: ast.Call) -> str:
    return str(getattr(call.func, "id", getattr(call.func, "attr", "")))


def _pyproject_requirements(source: bytes) -> list[tuple[str, int]]:
    if sys.version_info < (3, 11):  # pragma: no cover - Python 3.10 has no tomllib
        return []
    import tomllib  # type: ignore[import-not-found, unused-ignore]

    from mlsubmit.sdist.pyproject import too_deep

    try:
        text = source.decode("utf-8")
        if too_deep(text) is not None:
            return []  # the build refuses it, naming the line (sdist.pyproject)
        table: dict[str, Any] = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return []
    deps = [dep for dep in (table.get("project") or {}).get("dependencies") or [] if isinstance(dep, str)]
    rows = text.splitlines()
    return [(dep, next((i for i, row in enumerate(rows, 1) if dep in row), 1)) for dep in deps]


def setup_files(project_dir: Path, opened: bool = False) -> list[str]:
    """Files beside setup.py it names as requirements files (``opened``: opens by a literal name)."""
    try:
        tree = ast.parse(_read(project_dir / "setup.py", "a setup.py") or b"")
    except (SyntaxError, ValueError):
        return []
    named: list[str] = []
    for node in ast.walk(tree):
        if opened and isinstance(node, ast.Call) and _callee(node) in _OPENERS:
            named += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        elif not opened and isinstance(node, ast.Constant) and isinstance(node.value, str):
            named += [node.value] if re.fullmatch(_REQUIREMENTS_FILE, node.value) else []
    inside = [name for name in named if ".." not in Path(name).parts and not Path(name).is_absolute()]
    return [name for name in dict.fromkeys(inside) if (project_dir / name).is_file()]


def _requirements_file(source: bytes) -> list[tuple[str, int]]:
    """pip's requirements-file lines that name a distribution (options, includes, URLs and comments left out)."""
    found = []
    for number, raw in enumerate(source.decode("utf-8", "replace").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")) and "://" not in line and requirement_name(line):
            found.append((line, number))
    return found


def _read(path: Path, what: str) -> bytes | None:
    try:
        return read_bounded(str(path), what=what, max_bytes=MAX_PROJECT_FILE_BYTES)
    except ConfigFileError:
        return None


def declared_requirements(project_dir: Path) -> tuple[str, list[tuple[str, int]]]:
    """(file name, [(requirement, line)]) from setup.py (or its requirements file), else pyproject.toml."""
    for name, parse in (("setup.py", _setup_requirements), ("pyproject.toml", _pyproject_requirements)):
        if (source := _read(project_dir / name, f"a {name}")) is None:
            continue
        if found := parse(source):
            return name, found
        for listed in setup_files(project_dir) if name == "setup.py" else ():
            if lines := _requirements_file(_read(project_dir / listed, "a requirements file") or b""):
                return listed, lines
    return "", []


def built_requirements(sdist: Local) -> BuiltRequirements | None:
    """The requirements the built sdist declares (PKG-INFO's ``Requires-Dist``, else ``requires.txt`` up to its
    first extra) and its files; None when unreadable. Bounded by its ``MAX_SDIST_MEMBERS``/``MAX_METADATA_BYTES``."""
    import tarfile

    from mlsubmit.sdist.digest import opened

    try:
        with opened(sdist) as raw, tarfile.open(fileobj=raw, mode="r:*") as tar:
            members = list(itertools.islice(tar, MAX_SDIST_MEMBERS + 1))
            if len(members) > MAX_SDIST_MEMBERS:
                return None
            top = {m.name.split("/", 1)[0] for m in members}
            if len(top) != 1:
                return None
            files = frozenset(m.name.split("/", 1)[1] for m in members if m.isfile() and "/" in m.name)
            texts: dict[str, str] = {}
            for member in members:
                rel = member.name.split("/", 1)[-1]
                requires = rel.count("/") == 1 and rel.endswith(".egg-info/requires.txt")
                wanted = (
                    (rel == "PKG-INFO" or requires) and member.isfile() and member.size <= MAX_METADATA_BYTES
                )
                if wanted and (handle := tar.extractfile(member)) is not None:
                    texts["requires.txt" if requires else rel] = handle.read().decode("utf-8", "replace")
    except (tarfile.TarError, OSError, EOFError):
        return None
    requirements = [
        line.split(":", 1)[1].strip()
        for line in texts.get("PKG-INFO", "").split("\n\n", 1)[0].splitlines()
        if line.lower().startswith("requires-dist:")
    ]
    if not requirements:  # requires.txt up to its first section: extras and markers follow
        lines = itertools.takewhile(
            lambda line: not line.startswith("["), texts.get("requires.txt", "").splitlines()
        )
        requirements = [line.strip() for line in lines if line.strip()]
    return BuiltRequirements(tuple(requirements), files)


def unshipped_requirement_files(project_dir: Path, built: BuiltRequirements | None) -> Iterator[Finding]:
    """Files setup.py reads that the sdist leaves out (pip install then fails with FileNotFoundError)."""
    if built is None or (source := _read(project_dir / "setup.py", "a setup.py")) is None:
        return  # no sdist's files known; no setup.py, or one that cannot be read: it names no file
    lines = source.splitlines()
    for listed in dict.fromkeys([*setup_files(project_dir), *setup_files(project_dir, opened=True)]):
        if listed.removeprefix("./") not in built.files:
            problem = f"setup.py reads {listed}, which the built sdist leaves out: `pip install` of the package runs "
            problem += "setup.py again and stops with FileNotFoundError before the trainer starts"
            fix = f"add `include {listed}` to MANIFEST.in beside setup.py (or list install_requires in setup.py)"
            line = next((n for n, row in enumerate(lines, 1) if listed.encode() in row), 1)
            yield Finding("setup.py", line, "requirements", "error", problem, fix)


def requirement_findings(project_dir: Path, versions: ImageVersions) -> Iterator[Finding]:
    """Requirements that clash with the image (docs/migrate.md, rule ``requirements``)."""
    name, found = declared_requirements(project_dir)
    if not found:
        return  # most trainers declare none: packaging (about 30 ms to import) is not needed then
    from packaging.requirements import InvalidRequirement, Requirement

    def error(line: int, message: str, fix: str) -> Finding:
        return Finding(name, line, "requirements", "error", message, fix)

    for text, line in found:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            yield error(line, f"{text!r} is not a valid requirement", "fix it")
            continue
        package = req.name.lower().replace("_", "-")
        if package == "tensorflow-gpu":
            problem = "tensorflow-gpu is no longer published (the last release is 2.12; `tensorflow` has the "
            problem += "GPU support): pip would install an old TensorFlow over the image's"
            yield error(line, problem, "drop it: the image already has TensorFlow")
            continue
        if package == "pandas-gbq" and req.specifier:
            too_old = _pandas_gbq_too_old(req.specifier, versions, found)
            if too_old is not None:
                minimum, pandas = too_old
                problem = f"{text!r} is older than pandas-gbq {minimum}, the oldest {pandas} imports (pandas/compat/"
                problem += f"_optional.py): pandas.read_gbq raises ImportError (\"Pandas requires version '{minimum}' "
                fix = f"require pandas-gbq>={minimum} (and pass credentials=, not the removed private_key=)"
                yield error(line, problem + "or newer of 'pandas_gbq'\")", fix)
                continue
        have = versions.tensorflow if package in TENSORFLOW_NAMES else versions.packages.get(package)
        if package == "keras" and versions.tensorflow:
            have = _keras_of(versions.tensorflow)
        if not have or not req.specifier:
            continue
        if not any(req.specifier.contains(v, prereleases=True) for v in _candidates(have)):
            problem = f"{text!r} excludes the image's {req.name} {have}: pip replaces it when the job starts (slow, "
            problem += "and other packages in the image were built against the image's version)"
            yield error(line, problem, f"drop the pin or allow {have} ({req.name}~={have})")


def _pandas_gbq_too_old(
    specifier: Any, versions: ImageVersions, declared: list[tuple[str, int]]
) -> tuple[str, str] | None:
    """(oldest pandas-gbq the job's pandas imports, that pandas) when ``specifier`` allows none that new."""
    pandas = versions.packages.get("pandas")
    for text, _ in declared:
        if requirement_name(text) == "pandas" and "==" in text:
            pandas = pandas or text.split("==", 1)[1].split(";")[0].strip()
    have = version_tuple(pandas)
    for since, minimum in PANDAS_GBQ_MINIMUM:
        if have is None or have >= (version_tuple(since) or ()):
            newer = [minimum, *(f"0.{minor}.0" for minor in range(20, 40)), "1.0.0"]
            allowed = [v for v in newer if (version_tuple(v) or ()) >= (version_tuple(minimum) or ())]
            if any(specifier.contains(v, prereleases=True) for v in allowed):
                return None
            which = f"pandas {pandas}" if pandas else f"pandas (any from {since} on, as pip installs today)"
            return minimum, which
    return None


def _candidates(version: str) -> list[str]:
    """Versions the image may hold for ``version`` as known: ``2.11`` -> 2.11.0..2.11.9; ``3`` -> 3.0.0..3.19.0."""
    parts = version_tuple(version) or (0,)
    if len(parts) >= 3:
        return [".".join(map(str, parts))]
    if len(parts) == 2:
        return [f"{parts[0]}.{parts[1]}.{patch}" for patch in range(10)]
    return [f"{parts[0]}.{minor}.0" for minor in range(20)]


def _keras_of(tensorflow: str) -> str | None:
    """The Keras a TensorFlow release brings: 2.X for TF 2.6-2.15 (released in step), 3 from 2.16 on."""
    tf = version_tuple(tensorflow)
    if tf is None or tf < (2, 6):
        return None
    return "3" if tf >= (2, 16) else f"2.{tf[1]}"


# Modules the trainer imports that nothing installs (rule ``missing-module``), judged only where the image's contents
# are known: TensorFlow's ``REQUIRED_PACKAGES`` and theirs (TF_REQUIREMENTS_URL, checked 2026-11-25). An import
# inside ``try/except ImportError`` is optional and never reported.
TF_REQUIREMENTS_URL = (
    "https://github.com/tensorflow/tensorflow/blob/master/tensorflow/tools/pip_package/setup.py"
)
# Top-level modules of TensorFlow 2.x and everything it requires (2.1-2.17: some only in some versions, all kept so
# that nothing TensorFlow brings is ever called missing).
TF_IMAGE_MODULES = frozenset(
    {
        "tensorflow", "tensorflow_estimator", "tensorflow_io_gcs_filesystem", "keras", "tf_keras", "tensorboard",
        "tensorboard_data_server", "tensorboard_plugin_wit", "numpy", "absl", "astunparse", "flatbuffers", "gast",
        "pasta", "google.protobuf", "google.auth", "google.oauth2", "grpc", "h5py", "clang", "ml_dtypes", "opt_einsum", "packaging", "setuptools",
        "pkg_resources", "_distutils_hack", "six", "termcolor", "typing_extensions", "wrapt", "werkzeug",
        "markdown", "markupsafe", "requests", "urllib3", "certifi", "idna", "charset_normalizer", "chardet",
        "oauthlib", "requests_oauthlib", "google_auth_oauthlib", "rsa", "pyasn1", "pyasn1_modules", "cachetools",
        "rich", "namex", "optree", "pygments", "markdown_it", "mdurl", "wheel", "pip", "importlib_metadata", "zipp",
        "keras_preprocessing", "scipy",
    }
)  # fmt: skip
# Import name -> the distribution that installs it, where the two differ.
DISTRIBUTIONS = {"sklearn": "scikit-learn", "yaml": "pyyaml", "cv2": "opencv-python", "PIL": "pillow"}
DISTRIBUTIONS |= {"hypertune": "cloudml-hypertune", "bs4": "beautifulsoup4", "dateutil": "python-dateutil"}
DISTRIBUTIONS |= {"skimage": "scikit-image", "googleapiclient": "google-api-python-client", "attr": "attrs"}
DISTRIBUTIONS |= {"jwt": "pyjwt"}


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _distribution(module: str) -> str:
    """The distribution a dotted import most likely comes from: google.cloud.storage -> google-cloud-storage."""
    parts = module.split(".")
    if parts[0] == "google" and len(parts) >= 3 and parts[1] == "cloud":
        return _normal(".".join(parts[:3]))
    return _normal(DISTRIBUTIONS.get(parts[0], parts[0]))


def missing_findings(
    modules: Mapping[str, Uses],
    project_dir: Path | None,
    versions: ImageVersions,
    built: BuiltRequirements | None = None,
) -> Iterator[Finding]:
    """One finding per module the job cannot import, at its first import."""
    own = {rel.split("/")[0].removesuffix(".py") for rel in modules}
    if project_dir is not None and project_dir.is_dir():
        own |= {p.name for p in project_dir.iterdir() if (p / "__init__.py").is_file()}
        own |= {p.stem for p in project_dir.glob("*.py")}
    source, declared = declared_requirements(project_dir) if project_dir is not None else ("", [])
    texts = [text for text, _ in declared] + list(built.requirements if built is not None else ())
    required = {name for name in map(requirement_name, texts) if name}
    where = f"add {{}} to {source} (setup.py installs what it lists)"
    if not source.endswith(".txt"):
        where = "add {} to install_requires in setup.py (a requirements.txt that setup.py does not read "
        where += "is not installed)"
    seen: set[str] = set()
    for rel in sorted(modules):
        folder = rel.rpartition("/")[0]
        for module, lines in sorted(modules[rel].required_imports.items(), key=lambda kv: min(kv[1])):
            root = module.split(".")[0]
            in_package = f"{folder}/__init__.py" in modules  # a script folder (no __init__) is on sys.path
            if in_package and {f"{folder}/{root}.py", f"{folder}/{root}/__init__.py"} & set(modules):
                package = folder.replace("/", ".")
                problem = f"`import {root}` is an implicit relative import: Python 3 looks for a top-level `{root}`, "
                problem += f"not {package}.{root} beside this module (ModuleNotFoundError)"
                fix = f"from {package} import {root} (or from . import {root})"
                yield Finding(rel, min(lines), "py2", "error", problem, fix)
                continue
            if versions.modules is None:
                continue  # what the image holds is not known: nothing is called missing
            distribution = _distribution(module)
            if (
                root in sys.stdlib_module_names
                or root in own
                # the module or a package above it (``google.protobuf``, not all of ``google``)
                or any(
                    ".".join(module.split(".")[:n]) in versions.modules
                    for n in range(1, module.count(".") + 2)
                )
                or distribution in required
                or distribution in seen
            ):
                continue
            seen.add(distribution)
            problem = f"`{module}` is in neither the image ({versions.source}: "
            problem += "TensorFlow and what it requires, "
            problem += f"{TF_REQUIREMENTS_URL}) nor the package's requirements: ModuleNotFoundError when the job starts"
            yield Finding(rel, min(lines), "missing-module", "error", problem, where.format(distribution))
