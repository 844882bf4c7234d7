"""mlsubmit.job.yamltree: YAML text to plain Python, bounded, each scalar read as the schema's field wants.

Most of its behaviour is asserted through the config file in test_jobfile.py; these call it with a schema of
their own, as any other document read this way would.
"""

from __future__ import annotations

import pytest

from mlsubmit.errors import ConfigFileError
from mlsubmit.job import yamltree

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "sizes": {"type": "array", "items": {"$ref": "#/$defs/size"}}},
    "$defs": {"size": {"type": "integer"}},
}


def test_values_take_the_meaning_of_their_field_and_keep_their_line() -> None:
    tree = yamltree.load("name: 0755\nsizes:\n  - 12\n", "doc.yaml", SCHEMA)
    assert tree.data == {"name": "0755", "sizes": [12]}
    assert tree.lines[("sizes", 0)] == 3


@pytest.mark.timeout(10)
def test_a_file_of_too_many_values_is_refused_while_scanning() -> None:
    text = "sizes:\n" + "".join(f"  - {i}\n" for i in range(100_001))
    with pytest.raises(
        ConfigFileError, match=r"^x.yaml: holds more than 100000 values; a job config has a few"
    ):
        yamltree.load(text, "x.yaml", SCHEMA)


def test_a_top_level_that_is_no_mapping_is_refused() -> None:
    with pytest.raises(ConfigFileError, match=r"^x.yaml:1: the top level must be a mapping"):
        yamltree.load("- a\n", "x.yaml", SCHEMA)
