"""The checkup on the legacy-style trainers of tests/corpus/trainers, written for this project.

Each trainer's findings are marked on their lines in its source (``# expect: RULE SEVERITY`` where a finding is
reported, ``# also: RULE SEVERITY`` on each further line it names; tests/fakes/trainer_corpus.py): the checkup
must report every marked line and nothing else, and no line marked ``# fine:`` (a look-alike). The real trainers
of GoogleCloudPlatform/cloudml-samples are checked further down (docs/migrate.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.migrate.findings import SEVERITIES
from tests.fakes.trainer_corpus import (
    CHECKOUT_VARIABLE,
    check_trainer,
    exact,
    job_facts,
    listed,
    manifest,
    originals,
    reported,
    sha256,
)

ORIGINALS = originals()
CHECKUP_PAGE = Path(__file__).resolve().parents[3] / "docs" / "migrate.md"


def readme_rules() -> set[str]:
    """The rule ids of the table of docs/migrate.md "The trainer checkup" (first column, each in backquotes)."""
    section = CHECKUP_PAGE.read_text().split("\n## The trainer checkup", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {rule for row in rows for rule in re.findall(r"`([a-z0-9-]+)`", row.split("|")[1])}


def test_ten_original_trainers_show_every_rule_of_the_readme() -> None:
    assert len(ORIGINALS) >= 10
    shown = {rule for trainer in ORIGINALS.values() for _, _, rule, _ in trainer.marked()[0]}
    assert len(readme_rules()) >= 20
    assert shown == readme_rules()
    assert sum(len(trainer.fine_lines()) for trainer in ORIGINALS.values()) >= 30


@pytest.mark.parametrize("name", sorted(ORIGINALS))
def test_every_finding_is_marked_at_its_line_and_every_mark_is_found(name: str) -> None:
    trainer = ORIGINALS[name]
    first, more = reported(trainer.check())
    expected_first, expected_more = trainer.marked()
    assert sorted(first) == expected_first
    assert more == expected_more


@pytest.mark.parametrize("name", sorted(ORIGINALS))
def test_look_alikes_are_not_reported(name: str) -> None:
    trainer = ORIGINALS[name]
    lines = {(f.path, line) for f in trainer.check().findings for line in (f.line, *f.more_lines)}
    assert not lines & set(trainer.fine_lines())


# -- real trainers of cloudml-samples ----------------------------------------
# The checkup on real legacy trainers of GoogleCloudPlatform/cloudml-samples (tests/corpus/trainers/MANIFEST.yaml).
#
# Their code is not kept in this repository: these tests read a local checkout of it at the manifest's commit,
# named by MLSUBMIT_TRAINER_CORPUS, check each file's sha256, and assert that the checkup reports exactly the
# findings the manifest lists, each read by hand (docs/migrate.md):
#
#     git clone https://github.com/GoogleCloudPlatform/cloudml-samples
#     git -C cloudml-samples checkout efddc4a9898127e55edc0946557aca4bfaf59705
#     MLSUBMIT_TRAINER_CORPUS=$PWD/cloudml-samples python -m pytest -q tests/unit/migrate/test_checkup.py
#
# Without the variable they are skipped; the manifest itself is checked either way.

MANIFEST = manifest()
TRAINERS: dict[str, dict[str, Any]] = MANIFEST["trainers"]
HOW = (
    f"git clone {MANIFEST['repository']} && git -C cloudml-samples checkout {MANIFEST['commit']}, then "
    f"{CHECKOUT_VARIABLE}=$PWD/cloudml-samples (docs/migrate.md)"
)


@pytest.fixture(scope="module")
def checkout() -> Path:
    value = os.environ.get(CHECKOUT_VARIABLE, "")
    if not value:
        pytest.skip(
            f"{CHECKOUT_VARIABLE} is not set: the real trainers are read from a local checkout ({HOW})"
        )
    root = Path(value)
    if not root.is_dir():
        pytest.fail(f"{CHECKOUT_VARIABLE}={value} is not a folder: {HOW}")
    return root


def test_the_manifest_names_ten_real_trainers_their_files_and_why_each_finding_is_real() -> None:
    assert MANIFEST["repository"].startswith("https://github.com/")
    assert re.fullmatch(r"[0-9a-f]{40}", MANIFEST["commit"])
    assert len(TRAINERS) >= 10
    for name, trainer in TRAINERS.items():
        files: dict[str, str] = trainer["files"]
        assert trainer["entry"] in files and trainer["entry"].startswith(trainer["package"] + "/"), name
        assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in files.values()), name
        job_facts(trainer["job"])  # every key known
        for finding in trainer["findings"]:
            assert finding["file"] in files, (name, finding)
            assert finding["severity"] in SEVERITIES, (name, finding)
            assert len(finding["why"]) > 20, (name, finding)
            assert list(finding.get("also", [])) == sorted(set(finding.get("also", []))), (name, finding)
            assert all(line > finding["line"] for line in finding.get("also", [])), (name, finding)


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_every_finding_on_the_real_trainer_is_listed_and_nothing_else(checkout: Path, name: str) -> None:
    trainer = TRAINERS[name]
    project = checkout / trainer["root"]
    for rel, digest in trainer["files"].items():
        path = project / rel
        assert path.is_file(), f"{path} is missing: {HOW}"
        assert sha256(path) == digest, f"{path} is not the file at commit {MANIFEST['commit']}: {HOW}"
    checkup = check_trainer(project, trainer["package"], trainer["files"], trainer["entry"], trainer["job"])
    assert exact(checkup) == listed(trainer["findings"])
