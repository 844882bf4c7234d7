"""The trainer package's files, walked once with bounds: each real directory visited once, symlinks kept inside
the package, FIFOs and devices skipped, depth/file count/size capped, ignore files honoured (docs/training.md,
docs/security.md)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from mlsubmit.errors import PackagingError
from mlsubmit.sdist import never_ship
from mlsubmit.sdist.ignore import IGNORE_FILE_NAMES, IgnoreRules

ALWAYS_SKIPPED_NAMES = frozenset({"__pycache__", ".git", *IGNORE_FILE_NAMES})
ALWAYS_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_DIST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_]*[A-Za-z0-9])?")
#: Bounds of a generated sdist's walk; past one, the build stops with an error naming the path.
MAX_DEPTH = 64
MAX_FILES = 100_000
MAX_TOTAL_BYTES = 4 * 1024**3
_TOO_BIG_HINT = (
    "List what the job does not need in .mlsubmitignore (data and checkpoints belong in Cloud Storage), "
    "or build the package yourself and pass it with --packages."
)
_LINK_HINT = "Replace it with a copy of what it points to, or list it in .mlsubmitignore."


def collect_tree(package_dir: Path) -> PackageTree:
    """The package DIR's files, walked once within bounds: symlinks only inside DIR and each directory once (else
    an error naming it), ignore files honoured, what never ships left out, FIFOs and devices skipped unopened."""
    name = package_dir.name
    if not (name.isidentifier() and _DIST_NAME.fullmatch(name)):
        raise PackagingError(
            f"cannot generate a package for directory {name!r}: the name must be a Python identifier that "
            "starts and ends with a letter or digit. Rename it, or add a setup.py next to it."
        )
    tree = PackageTree(name, package_dir.resolve())
    tree.rules.add_dir(package_dir.parent, "")
    top = os.stat(package_dir)
    tree.seen[(top.st_dev, top.st_ino)] = (name, False)
    tree.walk(package_dir, name, (tree.root,), depth=1)
    init = f"{name}/__init__.py"
    if init not in tree.files:
        rule = tree.rules.excluded_by(init, False)
        where = f" by {rule.source}" if rule else ""
        raise PackagingError(
            f"{package_dir / '__init__.py'} is excluded{where}, but a package needs it. Remove that pattern, "
            f"or add `!{init}` after it."
        )
    _assign_to_packages(tree)
    return tree


class PackageTree:
    """What goes into a generated sdist, made by :func:`collect_tree`'s one walk."""

    def __init__(self, name: str, root: Path) -> None:
        self.name, self.root, self.rules = name, root, IgnoreRules()
        self.seen: dict[tuple[int, int], tuple[str, bool]] = {}  # (dev, ino) -> (rel, via link)
        self.credentials = never_ship.Credentials(within=root)
        self.files: dict[str, Path] = {}  # posix path under the context -> file to read
        self.executables: set[str] = set()
        self.packages: list[str] = []  # dotted names, directories with an __init__.py chain
        self.package_data: dict[str, list[str]] = {}
        self.left_out: dict[str, str] = {}  # secrets that never ship (never_ship) -> why
        self.size = 0  # the files' bytes in all

    def walk(self, directory: Path, rel: str, stack: tuple[Path, ...], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise PackagingError(
                f"{directory}: the package nests directories more than {MAX_DEPTH} deep. {_TOO_BIG_HINT}"
            )
        self.rules.add_dir(directory, rel)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise PackagingError(f"cannot list {directory}: {exc}") from exc
        for entry in entries:
            if entry.name in ALWAYS_SKIPPED_NAMES or entry.name.endswith(ALWAYS_SKIPPED_SUFFIXES):
                continue
            child_rel = f"{rel}/{entry.name}"
            path = Path(entry.path)
            is_link = entry.is_symlink()
            try:  # follows a symlink; never opens (a FIFO or a device would block or not end)
                info = os.stat(path)
            except OSError:
                if not is_link:
                    continue  # gone meanwhile
                info = None  # broken: an error below unless ignored
            is_dir = info is not None and stat.S_ISDIR(info.st_mode)
            if self.rules.ignored(child_rel, is_dir):
                continue
            target = _checked_link(path, self.root, stack) if is_link else path
            if info is None:
                continue
            if is_dir:
                self.enter_once((info.st_dev, info.st_ino), child_rel, is_link, path)
                self.walk(path, child_rel, (*stack, target.resolve()), depth + 1)
            elif stat.S_ISREG(info.st_mode):
                if secret := never_ship.reason(child_rel, path, self.credentials, (info.st_dev, info.st_ino)):
                    self.left_out[child_rel] = secret
                    continue
                self.size += info.st_size
                if len(self.files) >= MAX_FILES:
                    raise PackagingError(
                        f"{path}: the package holds more than {MAX_FILES} files. {_TOO_BIG_HINT}"
                    )
                if self.size > MAX_TOTAL_BYTES:
                    raise PackagingError(
                        f"{path}: the package's files add up to more than {MAX_TOTAL_BYTES // 1024**3} GiB. "
                        + _TOO_BIG_HINT
                    )
                self.files[child_rel] = path
                if info.st_mode & 0o111:
                    self.executables.add(child_rel)

    def enter_once(self, key: tuple[int, int], rel: str, via_link: bool, path: Path) -> None:
        """Record a directory about to be walked; a second way into the same directory is an error."""
        first = self.seen.setdefault(key, (rel, via_link))
        if first == (rel, via_link):
            return
        first_rel, first_via_link = first
        link, other = (rel, first_rel) if via_link or not first_via_link else (first_rel, rel)
        raise PackagingError(
            f"{path.parents[rel.count('/')] / link} is a symlink to a directory already in the package as {other}: "
            "each directory is packaged once (links could multiply it without end). Replace it with a copy, or "
            "list it in .mlsubmitignore."
        )


def _checked_link(link: Path, root: Path, stack: tuple[Path, ...]) -> Path:
    """Where ``link`` points; refused when that is outside the package, nothing, or a directory holding it."""
    try:
        target = link.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise PackagingError(f"{link} is a symlink that cannot be resolved ({exc}). {_LINK_HINT}") from exc
    if not target.exists():
        raise PackagingError(f"{link} is a broken symlink. {_LINK_HINT}")
    if target != root and root not in target.parents:
        raise PackagingError(f"{link} points outside the package directory, to {target}. {_LINK_HINT}")
    if target in stack:
        raise PackagingError(f"{link} points at one of its own parent directories (a loop). {_LINK_HINT}")
    return target


def _assign_to_packages(tree: PackageTree) -> None:
    """Split files into setuptools `packages` and their `package_data`, so `pip install` installs the whole tree."""
    inits = {rel.removesuffix("/__init__.py") for rel in tree.files if rel.endswith("/__init__.py")}
    # a package: a folder with an __init__.py, in a package (or the top one)
    packages = {d for d in inits if all(d.rsplit("/", up)[0] in inits for up in range(d.count("/") + 1))}
    tree.packages = sorted(d.replace("/", ".") for d in packages)
    data: dict[str, list[str]] = {}
    for rel in sorted(tree.files):
        parent, _, filename = rel.rpartition("/")
        if parent in packages and filename.endswith(".py"):
            continue
        owner = parent
        while owner not in packages:
            if "/" not in owner:  # the top package always has its __init__.py (collect_tree checks)
                raise PackagingError(f"{rel}: not inside a package; {tree.name}/__init__.py is missing.")
            owner = owner.rpartition("/")[0]
        escaped = re.sub(r"([*?[])", r"[\1]", rel[len(owner) + 1 :])  # glob.escape
        data.setdefault(owner.replace("/", "."), []).append(escaped)
    tree.package_data = dict(sorted(data.items()))
