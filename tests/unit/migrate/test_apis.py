"""The API table's matcher (mlsubmit/migrate/apis.py): which rule a used name falls under."""

from __future__ import annotations

import pytest

from mlsubmit.migrate import rules as R
from mlsubmit.migrate.apis import first_rule


def linear_first_rule(name: str) -> R.ApiRule | None:
    """The definition: the first rule in the table whose name is ``name`` or a dotted prefix of it."""
    return next((r for r in R.API_RULES if name == r.name or name.startswith(r.name + ".")), None)


@pytest.mark.parametrize(
    "name",
    [
        "tensorflow.contrib",
        "tensorflow.contrib.layers.fully_connected",
        "tensorflow.contribution",  # a look-alike: no rule
        "tensorflow.gfile.GFile",
        "tensorflow.keras.optimizers.legacy.Adam",
        "torch.optim.SGD",
        "tensorflow",
    ],
)
def test_a_name_falls_under_the_first_rule_of_the_table_that_names_it_or_a_prefix(name: str) -> None:
    assert first_rule(name) is linear_first_rule(name)


def test_every_rule_name_and_its_longer_and_look_alike_names_match_as_the_table_reads() -> None:
    for rule in R.API_RULES:
        for name in (rule.name, f"{rule.name}.x", f"{rule.name}.a.b.c.d.e.f.g", f"{rule.name}x"):
            assert first_rule(name) is linear_first_rule(name), name


def test_a_dotted_chain_far_longer_than_any_rule_name_is_looked_up_by_its_first_parts() -> None:
    """A module's chain of a million attributes costs a few look-ups, not a million joins."""
    chain = "tensorflow.contrib" + ".a" * 1_000_000
    rule = first_rule(chain)
    assert rule is not None and rule.rule == "tf-contrib"
    assert first_rule("x" + ".a" * 1_000_000) is None
