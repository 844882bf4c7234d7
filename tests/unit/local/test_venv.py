"""`local train --from-package` keeps a bounded cache of environments (issue 27, smaller items): the least
recently used go once more than the bound are ready, and one another run holds is left alone."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from mlsubmit.errors import LocalRunError
from mlsubmit.local.venv import READY_MARKER, _probe, prune_cache


def ready(cache: Path, name: str, used: float) -> Path:
    venv = cache / name
    (venv / "bin").mkdir(parents=True)
    marker = venv / READY_MARKER
    marker.write_text("trainer-0.1.tar.gz sha256:0\n")
    os.utime(marker, (used, used))
    return venv


def test_the_least_recently_used_go_and_a_held_one_stays(tmp_path: Path) -> None:
    envs = {
        name: ready(tmp_path, name, used) for name, used in (("a", 100), ("b", 200), ("c", 300), ("d", 50))
    }
    (tmp_path / "half-built" / "bin").mkdir(parents=True)  # no marker: another run is making it
    with open(tmp_path / "d.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another run is using d
        removed = prune_cache(tmp_path, keep=2)
    assert removed == [envs["a"]]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["b", "c", "d", "half-built"]
    assert prune_cache(tmp_path, keep=2) == [envs["d"]]  # no longer held


@pytest.mark.parametrize("last_line", ["[1, 2]", '"site"', "[" * 100_000, "not json", ""])
def test_an_interpreter_whose_probe_answer_is_no_object_is_refused_in_one_line(
    tmp_path: Path, last_line: str
) -> None:
    fake = tmp_path / "python3"
    fake.write_text(f"#!/bin/sh\necho '{last_line}'\n")
    fake.chmod(0o755)
    with pytest.raises(LocalRunError, match="does not run as Python 3"):
        _probe(str(fake))
