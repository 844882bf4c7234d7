"""Modules the trainer imports that nothing installs (rule ``missing-module``; docs/migrate.md), judged only where
the image's contents are known: TensorFlow's ``REQUIRED_PACKAGES`` and theirs (:data:`TF_REQUIREMENTS_URL`, checked
2026-11-25). An import inside ``try/except ImportError`` is optional and never reported."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from mlsubmit.migrate.findings import Finding, ImageVersions
from mlsubmit.migrate.requirements import BuiltRequirements, declared_requirements, requirement_name
from mlsubmit.migrate.scan import Uses

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
    where = (
        f"add {{}} to {source} (setup.py installs what it lists)"
        if source.endswith(".txt")
        else "add {} to install_requires in setup.py (a requirements.txt that setup.py does not read is not "
        "installed)"
    )
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
                or root == "__future__"
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
