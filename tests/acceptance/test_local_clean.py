"""`mlsubmit local clean` (issue 27, smaller items): the environments `local train --from-package` cached in the
user's cache are removed, but one another run is using; an empty or missing cache is no error."""

from __future__ import annotations

import fcntl
from pathlib import Path

from mlsubmit.local.venv import READY_MARKER
from tests.fakes.cli import run_cli


def test_clean_removes_the_cached_environments_but_one_in_use(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    none = run_cli(["local", "clean"], env=env)
    assert none.exit_code == 0, none.stderr
    assert (
        none.stdout == f"Removed 0 cached environment(s) from {tmp_path / 'cache' / 'mlsubmit' / 'venvs'}.\n"
    )
    root = tmp_path / "cache" / "mlsubmit" / "venvs"
    for name in ("a", "b", "c"):
        (root / name / "bin").mkdir(parents=True)
        (root / name / READY_MARKER).write_text("trainer-0.1.tar.gz sha256:0\n")
    with open(root / "c.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another run is using c
        result = run_cli(["local", "clean"], env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"Removed 2 cached environment(s) from {root}. 1 in use by another run stay(s).\n"
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["c"]
    again = run_cli(["local", "clean"], env=env)
    assert again.stdout.startswith("Removed 1 cached environment(s)") and not (root / "c").exists()
