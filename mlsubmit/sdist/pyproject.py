"""The one reader of a trainer's ``pyproject.toml``: bounded in size (:func:`mlsubmit.proc.files.read_bounded`)
and in depth, so a hostile file is one clear error naming it (exit 2), never a crash (docs/security.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mlsubmit.errors import PackagingError

#: Arrays and inline tables nested deeper than this are refused before they are parsed: no pyproject.toml needs
#: more than a handful, and Python's TOML parser recurses once per level (3,000 levels end in RecursionError).
MAX_DEPTH = 64
# What too_deep sees: a string ("..." with its escapes, '...'; one left open runs to the end), a comment, a bracket.
# A lone "\" at the end still ends the string: no later quote rescans the rest (that was quadratic).
_TOKEN = r"\"[^\"\\]*(?:\\[\s\S]?[^\"\\]*)*(?:\"|\Z)|'[^']*(?:'|\Z)|#[^\n]*|[\[\]{}]"


def read_pyproject(path: Path) -> dict[str, Any]:
    """The table of ``path`` (Python 3.10 has no TOML parser: its headers' [build-system] and [project], empty).
    PackagingError for a file that cannot be read, is not UTF-8 TOML, or nests values past :data:`MAX_DEPTH`."""
    from mlsubmit.proc.files import read_bounded

    hint = f"Fix it, or move it out of {path.parent}."
    raw = read_bounded(str(path), what="a pyproject.toml", error=PackagingError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackagingError(f"{path} is not UTF-8 ({exc.reason} at byte {exc.start}). {hint}") from None
    if (line := too_deep(text)) is not None:
        raise PackagingError(
            f"{path}:{line}: a value nests more than {MAX_DEPTH} arrays or tables deep. {hint}"
        )
    if sys.version_info < (3, 11):  # pragma: no cover - Python 3.10 has no tomllib
        header = r"^[ \t]*\[[ \t]*{}[ \t]*[\].]"  # [ \t], not \s: a \s* across newlines was quadratic
        return {t: {} for t in ("build-system", "project") if re.search(header.format(t), text, re.M)}
    import tomllib  # type: ignore[import-not-found, unused-ignore]

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PackagingError(f"{path} is not valid TOML: {exc}. {hint}") from None
    except RecursionError:  # a nesting our count missed: still a clear error
        raise PackagingError(f"{path}: a value nests too deep. {hint}") from None


def too_deep(text: str) -> int | None:
    """The line where ``[``/``{`` open past :data:`MAX_DEPTH` (outside strings and comments), or None. A table
    header (``[a]``, ``[[a]]``) opens and closes on its line, so counting every bracket overcounts by two at most."""
    depth = 0
    for match in re.finditer(_TOKEN, text):
        if match.group() in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH + 2:
                return text.count("\n", 0, match.start()) + 1
        elif match.group() in ("]", "}"):
            depth = max(0, depth - 1)
    return None
