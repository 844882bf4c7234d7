"""The checkup on the legacy-style trainers of tests/corpus/trainers, written for this project.

Each trainer's findings are marked on their lines in its source (``# expect: RULE SEVERITY`` where a finding is
reported, ``# also: RULE SEVERITY`` on each further line it names; tests/fakes/trainer_corpus.py): the checkup
must report every marked line and nothing else, and no line marked ``# fine:`` (a look-alike). The real trainers
of GoogleCloudPlatform/cloudml-samples are checked by test_corpus_cloudml.py (docs/migrate.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fakes.trainer_corpus import originals, reported

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
