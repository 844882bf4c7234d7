"""Unit tests mirror the code: ``mlsubmit/<package>/<module>.py`` is tested by
``tests/unit/<package>/test_<module>.py``, and a unit test file names a module that exists.

The mirror of a package's ``__init__.py`` is ``test_<package>.py`` beside the package's folder
(``mlsubmit/api/__init__.py`` -> ``tests/unit/test_api.py``, ``mlsubmit/services/kubernetes/__init__.py`` ->
``tests/unit/services/test_kubernetes.py``). A module that defines no function and no class (a re-export
``__init__``, ``__main__``) needs no test file. Everything else without one is named in ``UNTESTED`` below with why;
a test file that mirrors no module is named in ``CROSS_MODULE`` with what it tests instead. Both lists fail when
an entry goes stale, so they only shrink: a new unit test file for a listed module means deleting its line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "mlsubmit"
UNIT = REPO / "tests" / "unit"

# Modules whose behaviour is held by the acceptance suite (tests/acceptance, the real CLI against the loopback
# fakes) and that have no unit test file of their own yet.
UNTESTED: frozenset[str] = frozenset(
    {
        # The command modules and their option groups: they parse and print, and every option is exercised
        # through `mlsubmit <command>` in tests/acceptance (their docs tables are checked by test_docs.py).
        "cli/export.py",
        "cli/flagtypes.py",
        "cli/jobs.py",
        "cli/jobs_cost.py",
        "cli/kubernetes.py",
        "cli/local.py",
        "cli/local_options.py",
        "cli/logsetup.py",
        "cli/migrate.py",
        "cli/preflight.py",
        "cli/submitting.py",
        "cli/training.py",
        "cli/tune.py",
        "cli/validate.py",
        # The api's handle: tests/unit/test_api.py (the package) and tests/acceptance/test_api_handle.py.
        "api/handle.py",
        # Covered through the commands only (tests/acceptance): unit test files still to write.
        "follow/entries.py",  # test_jobs_stream_logs.py
        "images/ensure.py",  # test_*_build_image.py
        "images/image.py",
        "images/planner.py",
        "job/hints.py",
        "job/imageref.py",
        "job/ml_rules.py",  # through check_job in job/test_rules.py
        "job/validate.py",  # test_validate_complete_job_id.py
        "local/tune/runner.py",  # test_local_tune*.py
        "migrate/findings.py",
        "migrate/migration.py",  # test_migrate_files.py
        "migrate/report.py",
        "migrate/requirements.py",
        "proc/keeper.py",  # test_hostile_processes.py
        "sdist/tarball.py",
        "sdist/tree.py",
        "services/backends.py",
        "services/kubernetes/client.py",  # through load_context in services/kubernetes/test_kubeconfig.py
        "services/kubernetes/exec_plugin.py",
        "services/kubernetes/preflight.py",
        "services/preflight/__init__.py",  # test_preflight_checks.py
        "services/rest.py",  # test_hostile_rest.py
        "submit/candidates.py",  # test_training_failover*.py
        "submit/failover.py",
        "submit/kubernetes.py",  # test_training_kubernetes*.py (against the kmock emulator and kubectl)
        "submit/run.py",  # test_training_create.py, test_training_one_plan.py
        "targets/pools.py",  # through to_custom_job and to_tfjob in targets/test_vertex.py
        "targets/price_seed.py",  # the catalog's seed, read in targets/test_cost.py
        "targets/prices.py",
        "targets/translate.py",
        "targets/vertex_tables.py",  # tables read by targets/test_vertex.py and test_vertex_rules.py
    }
)

# Unit test files that mirror no module, each with what it tests.
CROSS_MODULE: frozenset[str] = frozenset(
    {
        "test_architecture.py",  # the import layers and every cited path, over the whole tree
        "test_layout.py",  # this file: tests/unit against mlsubmit/
        "test_docs.py",  # docs/ against the click parameters of every command (tests/docs_tables.py)
        "job/test_schema_discovery.py",  # schemas/job.schema.json against the ml v1 discovery document
        "targets/test_primary_replica.py",  # one primary replica name in local train, the TFJob and Vertex AI
    }
)


def mirror(module: Path) -> Path | None:
    """The unit test file of ``module`` (relative to mlsubmit/); None for mlsubmit/__init__.py."""
    if module.name == "__init__.py":
        if module.parent == Path("."):
            return None
        return module.parent.parent / f"test_{module.parent.name}.py"
    return module.parent / f"test_{module.name}"


def needs_a_test(path: Path) -> bool:
    """A module that defines a function or a class; re-exports and data assignments alone do not."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for node in tree.body)


def modules(source: Path) -> dict[str, Path]:
    """Every module of ``source`` that needs a test, by its path relative to ``source``."""
    return {
        path.relative_to(source).as_posix(): path
        for path in sorted(source.rglob("*.py"))
        if "__pycache__" not in path.parts and needs_a_test(path)
    }


def unit_test_files(unit: Path) -> list[str]:
    return sorted(
        p.relative_to(unit).as_posix() for p in unit.rglob("test_*.py") if "__pycache__" not in p.parts
    )


def without_a_test(source: Path, unit: Path, untested: frozenset[str]) -> list[str]:
    found = []
    for name in modules(source):
        test = mirror(Path(name))
        if test is not None and not (unit / test).is_file() and name not in untested:
            found.append(f"mlsubmit/{name}: no tests/unit/{test.as_posix()}")
    return found


def mirroring_nothing(source: Path, unit: Path, cross: frozenset[str]) -> list[str]:
    every = {m.as_posix() for p in source.rglob("*.py") if (m := mirror(p.relative_to(source))) is not None}
    return [
        f"tests/unit/{name}: mirrors no module of mlsubmit/"
        for name in unit_test_files(unit)
        if name not in every and name not in cross
    ]


def stale(source: Path, unit: Path, untested: frozenset[str], cross: frozenset[str]) -> list[str]:
    """Allowlist entries that no longer say anything true."""
    known = modules(source)
    found = [f"UNTESTED {name}: no such module (or it defines nothing)" for name in untested - known.keys()]
    for name in sorted(untested & known.keys()):
        test = mirror(Path(name))
        if test is not None and (unit / test).is_file():
            found.append(f"UNTESTED {name}: tests/unit/{test.as_posix()} exists; delete the entry")
    found += [
        f"CROSS_MODULE {name}: no such test file" for name in sorted(cross - set(unit_test_files(unit)))
    ]
    return sorted(found)


def test_every_module_has_its_unit_test_file() -> None:
    assert without_a_test(SOURCE, UNIT, UNTESTED) == []


def test_every_unit_test_file_names_a_module() -> None:
    assert mirroring_nothing(SOURCE, UNIT, CROSS_MODULE) == []


def test_the_allowlists_hold_nothing_stale() -> None:
    assert stale(SOURCE, UNIT, UNTESTED, CROSS_MODULE) == []


def test_every_unit_test_folder_is_a_package() -> None:
    """tests is a package (``from tests.fakes import ...``); two test files of one name in two folders need it."""
    folders = {p.parent for p in UNIT.rglob("test_*.py")}
    assert sorted(f.relative_to(REPO).as_posix() for f in folders if not (f / "__init__.py").is_file()) == []


def test_no_unit_test_builds_real_images() -> None:
    """Real image builds (buildah, mmdebstrap, a registry: the ``containers`` mark) are acceptance tests."""
    marked = [
        p.relative_to(REPO).as_posix()
        for p in sorted(UNIT.rglob("test_*.py"))
        if "pytest.mark.containers" in p.read_text(encoding="utf-8") and p.name != "test_layout.py"
    ]
    assert marked == []


def tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("modules_", "tests", "problems"),
    [
        ({"pkg/mod.py": "def f(): ..."}, {"pkg/test_mod.py": ""}, []),
        ({"pkg/mod.py": "def f(): ..."}, {}, ["mlsubmit/pkg/mod.py: no tests/unit/pkg/test_mod.py"]),
        ({"pkg/mod.py": "X = 1"}, {}, []),  # data only
        ({"pkg/__init__.py": "class A: ..."}, {"test_pkg.py": ""}, []),  # a package's own code
        ({"pkg/__init__.py": "from .mod import f"}, {"test_pkg.py": ""}, []),
        (
            {"pkg/mod.py": "X = 1"},
            {"pkg/test_other.py": ""},
            ["tests/unit/pkg/test_other.py: mirrors no module"],
        ),
        (
            {"pkg/mod.py": "def f(): ..."},
            {"test_mod.py": ""},
            ["mlsubmit/pkg/mod.py", "tests/unit/test_mod.py"],
        ),
    ],
)
def test_the_layout_checks_can_fail(
    tmp_path: Path, modules_: dict[str, str], tests: dict[str, str], problems: list[str]
) -> None:
    source, unit = tmp_path / "mlsubmit", tmp_path / "unit"
    tree(source, modules_)
    tree(unit, tests)
    unit.mkdir(exist_ok=True)
    found = without_a_test(source, unit, frozenset()) + mirroring_nothing(source, unit, frozenset())
    assert len(found) == len(problems) and all(f.startswith(p) for f, p in zip(found, problems, strict=True))


def test_a_stale_allowlist_entry_is_named(tmp_path: Path) -> None:
    source, unit = tmp_path / "mlsubmit", tmp_path / "unit"
    tree(source, {"pkg/mod.py": "def f(): ...", "pkg/data.py": "X = 1"})
    tree(unit, {"pkg/test_mod.py": ""})
    untested = frozenset({"pkg/mod.py", "pkg/data.py", "pkg/gone.py"})
    assert stale(source, unit, untested, frozenset({"test_gone.py"})) == [
        "CROSS_MODULE test_gone.py: no such test file",
        "UNTESTED pkg/data.py: no such module (or it defines nothing)",
        "UNTESTED pkg/gone.py: no such module (or it defines nothing)",
        "UNTESTED pkg/mod.py: tests/unit/pkg/test_mod.py exists; delete the entry",
    ]
