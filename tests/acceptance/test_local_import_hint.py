"""`local train` on a trainer whose `import model` is a Python 2 implicit relative import says so, instead of
asking to install a module that is the trainer's own (issue 27, smaller items)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fakes.cli import run_cli_process
from tests.fakes.trainers import write_trainer


def test_an_own_module_imported_the_python2_way_is_named_with_its_fix(tmp_path: Path) -> None:
    package = write_trainer(tmp_path, "import model\n\nmodel.fit()\n")
    (package / "model.py").write_text("def fit():\n    print('fit')\n")
    args = ["local", "train", "--package-path", str(package), "--module-name", "trainer.task"]
    done = run_cli_process([*args, "--python", sys.executable])
    assert done.returncode == 1
    assert (
        "`import model` names the trainer's own module trainer/model: Python 3 has no implicit relative imports, "
        "so write `from trainer import model` (or `from . import model`)"
    ) in done.stderr
    assert "install the module there" not in done.stderr


def test_a_module_nothing_installs_still_names_the_interpreter(tmp_path: Path) -> None:
    package = write_trainer(tmp_path, "import no_such_module_for_mlsubmit\n")
    args = ["local", "train", "--package-path", str(package), "--module-name", "trainer.task"]
    done = run_cli_process([*args, "--python", sys.executable])
    assert done.returncode == 1
    assert f"could not import a module with {sys.executable}" in done.stderr
    assert "install the module there" in done.stderr
