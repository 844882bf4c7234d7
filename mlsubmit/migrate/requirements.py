"""The trainer's declared requirements (``setup.py`` ``install_requires``, ``pyproject.toml``
``[project].dependencies``) against the image: a pin that would replace the image's TensorFlow, a Keras that does
not match it, any pin that excludes a version the image is known to have.

``setup.py`` is read as an AST (never run): a literal list, or a name bound to one at module level. A requirement
built at run time is not guessed at.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mlsubmit.errors import ConfigFileError
from mlsubmit.migrate.findings import Finding, ImageVersions, version_tuple
from mlsubmit.proc.files import read_bounded

MAX_PROJECT_FILE_BYTES = 1024 * 1024
TENSORFLOW_NAMES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu")


def _setup_requirements(source: bytes) -> list[tuple[str, int]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lists: dict[str, ast.expr] = {}
    texts: dict[str, tuple[str, int]] = {}  # NAME = 'tensorflow==1.15' at module level
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            lists[stmt.targets[0].id] = stmt.value
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                texts[stmt.targets[0].id] = (stmt.value.value, stmt.lineno)
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup"
        ):
            continue
        for keyword in node.keywords:
            if keyword.arg != "install_requires":
                continue
            value = keyword.value
            if isinstance(value, ast.Name):
                value = lists.get(value.id, value)
            if isinstance(value, (ast.List, ast.Tuple)):
                found = []
                for e in value.elts:
                    if isinstance(e, ast.Constant) and isinstance(e.value, str):
                        found.append((e.value, e.lineno))
                    elif isinstance(e, ast.Name) and e.id in texts:
                        found.append(texts[e.id])
                return found
    return []


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
    deps = (table.get("project") or {}).get("dependencies") or []
    text = source.decode("utf-8").splitlines()
    out = []
    for dep in deps:
        if isinstance(dep, str):
            line = next((i for i, row in enumerate(text, 1) if dep in row), 1)
            out.append((dep, line))
    return out


def declared_requirements(project_dir: Path) -> tuple[str, list[tuple[str, int]]]:
    """(file name, [(requirement, line)]) from setup.py, else pyproject.toml; empty when neither declares any."""
    for name, parse in (("setup.py", _setup_requirements), ("pyproject.toml", _pyproject_requirements)):
        path = project_dir / name
        if not path.is_file():
            continue
        try:
            source = read_bounded(str(path), what=f"a {name}", max_bytes=MAX_PROJECT_FILE_BYTES)
        except ConfigFileError:
            continue
        found = parse(source)
        if found:
            return name, found
    return "", []


def requirement_findings(project_dir: Path, versions: ImageVersions) -> Iterator[Finding]:
    """Requirements that clash with the image (docs/migrate.md, rule ``requirements``)."""
    from packaging.requirements import InvalidRequirement, Requirement

    name, found = declared_requirements(project_dir)
    for text, line in found:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            yield Finding(
                name, line, "requirements", "error", f"{text!r} is not a valid requirement", "fix it"
            )
            continue
        package = req.name.lower().replace("_", "-")
        if package == "tensorflow-gpu":
            yield Finding(
                name,
                line,
                "requirements",
                "error",
                "tensorflow-gpu is no longer published (the last release is 2.12; `tensorflow` has the GPU "
                "support): pip would install an old TensorFlow over the image's",
                "drop it: the image already has TensorFlow",
            )
            continue
        have = versions.tensorflow if package in TENSORFLOW_NAMES else versions.packages.get(package)
        if package == "keras" and versions.tensorflow:
            have = _keras_of(versions.tensorflow)
        if not have or not req.specifier:
            continue
        if not any(req.specifier.contains(v, prereleases=True) for v in _candidates(have)):
            yield Finding(
                name,
                line,
                "requirements",
                "error",
                f"{text!r} excludes the image's {req.name} {have}: pip replaces it when the job starts (slow, and "
                "other packages in the image were built against the image's version)",
                f"drop the pin or allow {have} ({req.name}~={have})",
            )


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
    if tf >= (2, 16):
        return "3"
    return f"2.{tf[1]}"
