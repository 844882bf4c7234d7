"""The checkup on real legacy trainers of GoogleCloudPlatform/cloudml-samples (tests/corpus/trainers/MANIFEST.yaml).

Their code is not kept in this repository: these tests read a local checkout of it at the manifest's commit,
named by MLSUBMIT_TRAINER_CORPUS, check each file's sha256, and assert that the checkup reports exactly the
findings the manifest lists, each read by hand (docs/migrate.md):

    git clone https://github.com/GoogleCloudPlatform/cloudml-samples
    git -C cloudml-samples checkout efddc4a9898127e55edc0946557aca4bfaf59705
    MLSUBMIT_TRAINER_CORPUS=$PWD/cloudml-samples python -m pytest -q tests/unit/migrate/test_corpus_cloudml.py

Without the variable they are skipped; the manifest itself is checked either way.
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
    sha256,
)

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
