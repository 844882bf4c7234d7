"""A gitignore matcher for `.gcloudignore` and `.mlsubmitignore` (https://git-scm.com/docs/gitignore#_pattern_format),
with gcloud's `#!include:FILE` directive."""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from mlsubmit.errors import PackagingError

#: Ignore files read from the build context and from every directory of the package, in this order
#: (so `.mlsubmitignore` can override `.gcloudignore` with `!pattern`).
IGNORE_FILE_NAMES = (".gcloudignore", ".mlsubmitignore")

_INCLUDE_DIRECTIVE = "#!include:"
_MAX_INCLUDE_DEPTH = 8
#: An ignore file larger than this is refused (a few hundred patterns take a few KiB).
MAX_IGNORE_FILE_BYTES = 1024 * 1024


class Rule(NamedTuple):
    """One compiled pattern, applying to paths under `base` (posix, relative to the tree root; "" = all)."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    base: str
    source: str  # "FILE:LINE", for error messages and debugging

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether this rule's pattern matches `rel` (posix path relative to the tree root)."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        return self.regex.fullmatch(rel) is not None


# One token of a segment: an escaped character, a run of stars, `?`, a closed `[...]` class (its `!`/`^` taken
# once, a `]` right after it kept in the class: https://git-scm.com/docs/gitignore#_pattern_format), or a character.
_TOKEN = r"\\(.)|(\*+)|(\?)|\[(?=([!^]?))\4(\][^\]]*|[^\]]+)\]|(.)"


def _atomic(regex: str, ids: Iterator[int]) -> str:
    """``(?>X)`` (re has it from 3.11) as ``(?=(?P<g>X))(?P=g)``: stars match linearly, as in fnmatch.translate."""
    n = next(ids)
    return f"(?=(?P<a{n}>{regex}))(?P=a{n})"


def _translate_segment(segment: str, ids: Iterator[int]) -> str:
    """Regex for one path segment: each star but the last takes the leftmost match of what follows it."""
    chunks: list[list[str]] = [[]]  # the regexes between the stars (a `*` never crosses a `/`)
    for token in re.finditer(_TOKEN, segment, re.DOTALL):
        escaped, stars, _, negate, body, char = token.groups()
        if stars:  # `a**b` inside a segment is an ordinary star in git
            chunks.append([])
        elif token.group(3):
            chunks[-1].append("[^/]")
        elif body is not None:
            # Escape what Python's regex treats specially inside a class (nested sets, set operations).
            body = re.sub(r"([\\^\[&~|])", r"\\\1", body)
            chunks[-1].append(f"[{'^/' if negate else ''}{body}]")
        else:
            chunks[-1].append(re.escape(escaped if escaped is not None else char))
    first, *rest = ["".join(chunk) for chunk in chunks]
    if not rest:
        return first
    middle = "".join(_atomic("[^/]*?" + chunk, ids) for chunk in rest[:-1])
    return first + middle + "[^/]*" + rest[-1]


_DIRS = object()  # `**/` (or an unanchored start): zero or more whole directories


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], bool] | None:
    """One gitignore pattern (stripped of `!`) as (regex, dir_only), None for a no-op; it matches in time
    polynomial in the path's length: each star and `**/` but the last of its kind takes its leftmost match."""
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if not pattern:
        return None
    # A slash at the start or in the middle anchors the pattern to its file's directory, else it matches at any depth.
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    segments = pattern.split("/")
    ids = itertools.count(1)
    sequence: list[object] = [] if anchored else [_DIRS]
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            sequence.append(".*" if index == last else _DIRS)  # `dir/**`: everything inside
            continue
        sequence.append(_translate_segment(segment, ids))
        if index != last:
            sequence.append("/")
    # Each `**/` but the last takes the fewest directories that let what follows it (up to the next `**/`) match.
    parts: list[str] = []
    dirs_left = sequence.count(_DIRS)
    block: list[str] | None = None
    for item in [*sequence, _DIRS]:
        if item is _DIRS:
            if block is not None:
                dirs = "".join(block)
                parts.append(_atomic("(?:.*?/)??" + dirs, ids) if dirs_left else "(?:.*/)?" + dirs)
            block = []
            dirs_left -= 1
        elif block is None:
            parts.append(str(item))
        else:
            block.append(str(item))
    return re.compile("".join(parts), re.DOTALL), dir_only


def parse_ignore_file(path: Path, base: str, depth: int = 0) -> list[Rule]:
    """Read one ignore file; `base` is its directory relative to the tree root ("" for the root)."""
    if depth > _MAX_INCLUDE_DEPTH:
        raise PackagingError(
            f"{path}: `#!include:` nests more than {_MAX_INCLUDE_DEPTH} levels; remove the loop"
        )
    rules: list[Rule] = []
    for number, raw in enumerate(_read_ignore_file(path).splitlines(), start=1):
        if raw.startswith(_INCLUDE_DIRECTIVE):
            # gcloud's extension: `#!include:.gitignore` pulls in another file's patterns at this point.
            included = path.parent / raw[len(_INCLUDE_DIRECTIVE) :].strip()
            if os.path.lexists(included):
                rules.extend(parse_ignore_file(included, base, depth + 1))
            continue
        line = raw.rstrip(" ")
        if line.endswith("\\") and len(line) < len(raw):  # trailing spaces go unless escaped (gitignore)
            line += " "
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):
            line = line[1:]
        if (compiled := compile_pattern(line)) is not None:
            rules.append(Rule(compiled[0], negated, compiled[1], base, f"{path}:{number}"))
    return rules


def _read_ignore_file(path: Path) -> str:
    """The text of an ignore file: a regular UTF-8 file of at most :data:`MAX_IGNORE_FILE_BYTES`."""
    hint = "Fix or remove it."
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PackagingError(f"ignore file {path} is not a regular file. {hint}")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(MAX_IGNORE_FILE_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise PackagingError(f"cannot read ignore file {path}: {exc.strerror or exc}. {hint}") from exc
    if len(data) > MAX_IGNORE_FILE_BYTES:
        raise PackagingError(f"ignore file {path} is larger than {MAX_IGNORE_FILE_BYTES} bytes. {hint}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackagingError(
            f"ignore file {path} is not UTF-8 ({exc.reason} at byte {exc.start}). {hint}"
        ) from exc


class IgnoreRules:
    """An ordered list of rules; the last rule that matches a path decides, as in git."""

    def __init__(self, rules: list[Rule] | None = None) -> None:
        self.rules = list(rules or [])

    def add_dir(self, directory: Path, base: str) -> None:
        """Append the rules of the ignore files found directly in `directory` (relative path `base`)."""
        for name in IGNORE_FILE_NAMES:
            candidate = directory / name
            if os.path.lexists(candidate):
                self.rules.extend(parse_ignore_file(candidate, base))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (posix, relative to the tree root) is excluded."""
        return self.excluded_by(rel, is_dir) is not None

    def excluded_by(self, rel: str, is_dir: bool) -> Rule | None:
        """The rule that excludes `rel`, or None when it is kept."""
        matching = [rule for rule in self.rules if rule.matches(rel, is_dir)]
        return None if not matching or matching[-1].negated else matching[-1]
