"""MIGRATION.md and the files of a migration, written into the output directory (docs/migrate.md)."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from mlsubmit.errors import UsageError
from mlsubmit.migrate import rules as R
from mlsubmit.migrate.checkup import Checkup
from mlsubmit.migrate.findings import count_by_severity
from mlsubmit.migrate.migration import IMAGE_CONTEXT, IMAGE_DIR, PACKAGES_DIR, Migration
from mlsubmit.sdist.digest import Local, opened
from mlsubmit.services.answers import neutralize

SCRIPT = "submit.sh"
REPORT = "MIGRATION.md"


def md(text: object) -> str:
    """``text`` inert in Markdown on one line: escapes for control and bidi characters, entities for HTML."""
    import html

    return html.escape(neutralize(str(text)), quote=False)


def cell(text: object) -> str:
    """:func:`md` for a table cell: ``|`` escaped too, so no value can add a column."""
    return md(text).replace("|", "\\|")


def _fenced(language: str, lines: list[str]) -> list[str]:
    """A code block fenced longer than any backtick run in it (no line closes it early), its lines neutralised."""
    body = [neutralize(line) for line in lines]
    longest = max((len(run) for line in body for run in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, *body, fence]


def _checkup_md(checkup: Checkup) -> list[str]:
    image = checkup.facts.versions
    counts = count_by_severity(checkup.findings)
    lines = [
        "## Trainer checkup",
        "",
        f"{checkup.modules} module(s) read (never imported or run), checked against {md(image.source)}: "
        f"Python {md(image.python or 'unknown')}, TensorFlow {md(image.tensorflow or 'unknown')}"
        + "".join(f", {md(k)} {md(v)}" for k, v in sorted(image.packages.items()))
        + f". Rule tables checked {R.CHECKED}; each rule's source is in docs/migrate.md.",
        "",
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s).",
        "",
    ]
    if not checkup.findings:
        return [*lines, "Nothing found.", ""]
    lines += ["| where | rule | severity | problem | fix |", "|---|---|---|---|---|"]
    for f in checkup.findings:
        where = f.where + (f" (also {', '.join(map(str, f.more_lines))})" if f.more_lines else "")
        cells = [where, f.rule, f.severity, f.message, f.fix]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return [*lines, ""]


def migration_md(m: Migration) -> str:
    """The report a team reads: the command, what mapped to what, every change and refusal, the checkup."""
    out = [f"# Migrating `{neutralize(m.job_id).replace('`', '')}` to Vertex AI", ""]  # ids are [A-Za-z0-9_]
    if m.config is not None:
        kind = "HyperparameterTuningJob" if m.kind == "hptuningjob" else "CustomJobSpec"
        first = "Build the image" if m.image is not None else "Upload the packages"
        submit = f"`{m.config_name}` holds the {kind} in the form the command's `--config` takes. "
        out += ["## Submit", "", submit + f"{first}, then create the job (`{SCRIPT}` does both):"]
        out += ["", *_fenced("sh", [shlex.join(argv) for argv in m.steps]), "", "## What mapped to what", ""]
        out += ["| legacy | Vertex AI |", "|---|---|", *[f"| {cell(a)} | {cell(b)} |" for a, b in m.mapping]]
        out.append("")
        if m.rewrites:
            out += ["## Changed so that Vertex AI takes it: act on these", ""]
            out += [*[f"- **{md(r)}**" for r in m.rewrites], ""]
        same = "- Nothing: every setting has the same meaning on Vertex AI."
        changes = [f"- {md(w)}" for w in m.warnings] or [same]
        out += ["## What mlsubmit changed, and why", "", *changes, ""]
    if m.refused:
        out += ["## Refused: what Vertex AI cannot run as written", ""]
        out += ["No job file was written. Each line names the setting and what to do:", ""]
        out += [*[f"- {md(p)}" for p in m.refused], ""]
    if m.image is not None:
        spec = m.image.spec
        out += ["## The image", "", f"- {md(spec.tagged)}, built for {md(spec.platform)}"]
        out += [f"- base: {md(spec.base)} ({md(spec.base_reason)})", ""]
        out += [*_fenced("dockerfile", spec.dockerfile.rstrip("\n").split("\n")), ""]
    out += ["## Notes", "", *[f"- {md(n)}" for n in m.notes], ""]
    if m.checkup is not None:
        out += _checkup_md(m.checkup)
    return "\n".join(out)


def _write(path: Path, data: str | Local, mode: int = 0o644) -> None:
    """Write text (or copy a file) to ``path`` through a temporary file and a rename: never through a symlink."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            if isinstance(data, str):
                out.write(data.encode("utf-8"))
            else:
                with opened(data) as src:
                    shutil.copyfileobj(src, out)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_output_dir(output_dir: Path, package_dir: Path | None) -> None:
    """Refuse an ``--output-dir`` inside the package: the next build would package the migration."""
    if package_dir is None:
        return
    out, package = Path(os.path.realpath(output_dir)), Path(os.path.realpath(package_dir))
    if out == package or package in out.parents:
        raise UsageError(
            f"--output-dir {output_dir} is inside --package-path {package_dir}: the next build would package "
            "this migration into the trainer. Choose a folder outside it, e.g. beside it."
        )


def _folder(path: Path) -> None:
    """Make the folder ``path`` in the output directory; a symlink (or no folder) there is refused."""
    if os.path.islink(path) or (os.path.lexists(path) and not path.is_dir()):
        raise UsageError(
            f"{path} is a symlink or not a folder; mlsubmit writes only into a folder of its own there. "
            "Remove it, or choose another --output-dir."
        )
    path.mkdir(exist_ok=True)


def write_migration(m: Migration, output_dir: Path, config_text: str) -> list[str]:
    """Write the files into ``output_dir``; their names relative to it. UsageError when it cannot."""
    written: list[str] = []
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        if m.config is not None:
            _write(output_dir / m.config_name, config_text)
            _write(output_dir / SCRIPT, m.script(), 0o755)
            written += [m.config_name, SCRIPT]
            if m.uploads:
                _folder(output_dir / PACKAGES_DIR)
            for local in [s.local for s in m.packages if s.local is not None]:
                _write(output_dir / PACKAGES_DIR / local.name, local)
                written.append(f"{PACKAGES_DIR}/{local.name}")
        if m.image is not None and m.config is not None:
            _folder(output_dir / IMAGE_DIR)
            _write(output_dir / IMAGE_CONTEXT, m.image.context)
            _write(output_dir / IMAGE_DIR / "Dockerfile", m.image.spec.dockerfile)
            written += [IMAGE_CONTEXT, f"{IMAGE_DIR}/Dockerfile"]
        _write(output_dir / REPORT, migration_md(m))
    except OSError as err:
        raise UsageError(
            f"--output-dir {output_dir}: cannot write there ({err.strerror or err}); choose a directory you can write"
        ) from None
    return [*written, REPORT]
