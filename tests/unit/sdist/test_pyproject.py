"""sdist/pyproject.py: the bounded read of a project's pyproject.toml (build_sdist's own cases: test_build.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlsubmit.errors import PackagingError
from mlsubmit.sdist.pyproject import MAX_DEPTH, read_pyproject, too_deep


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a = [[1], {b = 2}]\n", None),
        ("[tool.x]\n" + "a = " + "[" * (MAX_DEPTH + 3) + "]" * (MAX_DEPTH + 3) + "\n", 2),
        ('a = "' + "[" * 500 + '"\n', None),  # in a string
        ("# " + "{" * 500 + "\n", None),  # in a comment
        ("a = 'x\\'\nb = " + "[" * 500 + "\n", 2),  # a literal string knows no escapes
    ],
)
def test_brackets_count_outside_strings_and_comments(text: str, line: int | None) -> None:
    assert too_deep(text) == line


@pytest.mark.timeout(20)
def test_an_unterminated_string_ending_in_a_backslash_is_scanned_in_linear_time() -> None:
    # Each escaped quote once made the scanner rescan to the end of the text: 100,000 of them took hours.
    assert too_deep('a = "' + '\\"' * 100_000 + "\\") is None


def test_a_deep_file_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[project]\nname = 'x'\nv = " + "[" * 200 + "]" * 200 + "\n")
    with pytest.raises(PackagingError, match=r"pyproject\.toml:3: a value nests more than 64"):
        read_pyproject(path)
