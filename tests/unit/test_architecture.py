"""The import-layers contract (docs/architecture.md) covers every part of mlsubmit, so `lint-imports` checks
every import: a new top-level module or package must be placed in a layer."""

from __future__ import annotations

import ast
import io
import pkgutil
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mlsubmit

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
ENTRY_POINTS = {"mlsubmit.__main__"}  # `python -m mlsubmit`: only calls cli.main


def layers_contract() -> dict[str, Any]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers" and "containers" not in c]
    return dict(contract)


def test_every_top_level_part_of_mlsubmit_is_in_a_layer() -> None:
    layered = {name.strip() for layer in layers_contract()["layers"] for name in layer.split("|")}
    parts = {f"mlsubmit.{m.name}" for m in pkgutil.iter_modules(mlsubmit.__path__)} - ENTRY_POINTS
    assert parts - layered == set(), "add these to the layers contract in pyproject.toml"
    assert layered - parts == set(), "the contract names modules that do not exist"


def test_the_layers_point_down_from_cli_to_errors() -> None:
    layers = layers_contract()["layers"]
    assert layers[0] == "mlsubmit.cli" and "mlsubmit.errors" in layers[-1]
    index = {name.strip(): i for i, layer in enumerate(layers) for name in layer.split("|")}
    assert index["mlsubmit.services"] < index["mlsubmit.job"] < index["mlsubmit.errors"]
    assert (
        index["mlsubmit.cli"]
        < index["mlsubmit.submit"]
        < index["mlsubmit.images"]
        < index["mlsubmit.targets"]
    )
    assert index["mlsubmit.images"] < index["mlsubmit.services"]  # one planner and ensure over the services


# --- what docstrings and comments cite exists -----------------------------------------------------------

REPO = PYPROJECT.parent
PACKAGES = ("cli", "job", "sdist", "services", "follow", "targets", "local", "proc", "images", "migrate")
# A repository path (docs/ pages included): a file with its extension, or a folder with its trailing slash; `*` globs.
CITED_PATH = re.compile(
    r"(?<![\w/.-])((?:mlsubmit|tests|benchmarks|examples|schemas|docs|\.ci)/[\w./*-]*(?:\.(?:py|md|json|yaml|toml|txt)\b|/))"
)
# A module, or a name in one: mlsubmit.services.retry.call, or without the root: services.retry.call.
CITED_MODULE = re.compile(r"(?<![\w./-])((?:mlsubmit|" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)")
# A README section: README.md keeps only a few (the rest moved to docs/, which is cited by path instead).
CITED_README = re.compile(r'README:? \\?"([^"\\]+)\\?"')
README_SECTIONS = set(re.findall(r"^#{2,3} (.+)$", (REPO / "README.md").read_text(encoding="utf-8"), re.M))
# Package names that are also everyday variable names (``job.tagged``, a job's field): ``spec.X`` cites
# the package only when X is one of its modules.
AMBIGUOUS = {"job", "local"}
# Google API methods are spelled like modules (serviceusage's ``services.get``,
# ``services.consumerQuotaMetrics.list``): a short form whose module part is a REST verb or camelCase is one.
API_WORDS = re.compile(r"^(?:get|list|create|cancel|delete|patch|insert|[a-z]+[A-Z]\w*)$")


def comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc


def module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


def defines(module: Path, name: str) -> bool:
    """``name`` is defined (or imported) at some level of ``module``: a function, class, attribute or field."""
    pattern = (
        rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*(?:self\.)?{name}\s*[:=]"
        rf"|^(?:from|import)\s.*\b{name}\b|^\s+{name},"  # a name in an import's parenthesised list
    )
    return re.search(pattern, module.read_text(encoding="utf-8"), re.M) is not None


def module_exists(reference: str) -> bool:
    parts = reference.split(".")
    parts = parts if parts[0] == "mlsubmit" else ["mlsubmit", *parts]
    for cut in range(len(parts), 1, -1):  # the longest module prefix; then up to two names (Class.method)
        module = module_file(parts[:cut])
        if module is not None:
            return all(defines(module, name) for name in parts[cut : cut + 2])
    return False


def cited_but_missing(source: str, where: str) -> list[str]:
    """``where:LINE: citation`` for each path or module a comment or docstring of ``source`` cites in vain."""
    missing = []
    for line, text in comments_and_docstrings(source):
        for match in CITED_PATH.finditer(text):
            cited = match.group(1)
            if not (any(REPO.glob(cited.rstrip("/"))) if "*" in cited else (REPO / cited).exists()):
                missing.append(f"{where}:{line}: {cited}")
        for match in CITED_README.finditer(text):
            if match.group(1) not in README_SECTIONS:
                missing.append(f"{where}:{line}: README {match.group(1)!r} (now a page of docs/)")
        for match in CITED_MODULE.finditer(text):
            cited = match.group(1)
            head, _, rest = cited.partition(".")
            second = rest.split(".")[0]
            if head in AMBIGUOUS and module_file(["mlsubmit", head, second]) is None:
                continue
            if head != "mlsubmit" and API_WORDS.match(second):
                continue
            if not module_exists(cited):
                missing.append(f"{where}:{line}: {cited}")
    return missing


MAX_MODULE_LINES = 400  # STYLE: a module over ~400 lines is asking to be split


def test_no_module_of_mlsubmit_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in REPO.glob("mlsubmit/**/*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, "split these along a real seam"


def test_every_module_file_and_test_a_docstring_or_comment_cites_exists() -> None:
    sources = [*REPO.glob("mlsubmit/**/*.py"), *REPO.glob("tests/**/*.py"), *REPO.glob("benchmarks/*.py")]
    missing = [
        m
        for path in sorted(sources)
        if "corpus" not in path.parts
        for m in cited_but_missing(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert missing == [], "cited but not there (moved or renamed?)"


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("# see mlsubmit/proc/keeper.py and tests/fakes/ and services.retry.call", False),
        ('"""As mlsubmit.services.storage.upload does (tests/unit/services/test_storage*.py)."""', False),
        ("# see mlsubmit/keeper.py", True),
        ('"""The rules of failover (docs/getting-jobs-to-start.md)."""', False),
        ('# README "Failover" moved: docs/failover.md', True),
        ('# as README "Containers" says', True),
        ('# README "Quick start" runs it', False),
        ("# tests/unit/test_nothing_here.py", True),
        ('"""services.storage.make_storage_service builds it."""', True),
        ("# mlsubmit.services.nothing", True),
        ("# job.tagged is the image's name (a variable, not the package)", False),
        ("# serviceusage services.get and services.consumerQuotaMetrics.list (API methods)", False),
        ("# see job.jobfile.check_job_file and job.jobfile.nothing_here", True),
    ],
)
def test_the_citation_check_can_fail(text: str, missing: bool) -> None:
    assert bool(cited_but_missing(text + "\n", "example.py")) is missing
