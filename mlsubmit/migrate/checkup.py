"""The trainer checkup: every module of the package read once (AST only), judged against the job and its image.

docs/migrate.md lists the rules. Bounded: only ``.py`` files of the package tree, as the sdist
build walked and read them (the ``Plan``'s), else by the same bounded walk (:func:`mlsubmit.sdist.tree.collect_tree`)
and each read through :func:`mlsubmit.proc.files.read_bounded`, up to :data:`MAX_MODULE_BYTES` (a larger one is
reported, not read).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from mlsubmit import console
from mlsubmit.errors import ConfigFileError
from mlsubmit.migrate import rules as R
from mlsubmit.migrate.apis import api_findings, subprocess_findings
from mlsubmit.migrate.findings import Finding, JobFacts, Severity, count_by_severity, sort_findings
from mlsubmit.migrate.missing import missing_findings
from mlsubmit.migrate.requirements import (
    BuiltRequirements,
    built_requirements,
    requirement_findings,
    unshipped_requirement_files,
)
from mlsubmit.migrate.scan import Uses, scan_source
from mlsubmit.proc.files import read_bounded

if TYPE_CHECKING:
    from mlsubmit.sdist.build import WalkedPackage
    from mlsubmit.sdist.digest import Local

PYTHON2_RULES = frozenset({"py2", "py2-syntax"})
MAX_MODULE_BYTES = 2 * 1024 * 1024  # a generated module that large is not hand-written trainer code
TIME_BUDGET_S = 10.0  # a 10,000-line package takes about 0.15 s (benchmarks/bench_checkup.py)
# How legacy trainers wrote the metric the legacy service read (TensorFlow summaries).
SUMMARY_WRITERS = frozenset(
    {
        "tensorflow.summary.scalar",
        "tensorflow.Summary",
        "tensorflow.compat.v1.Summary",
        "tensorflow.keras.callbacks.TensorBoard",
        "keras.callbacks.TensorBoard",
    }
)


class Checkup(NamedTuple):
    """The checkup of one package: findings in reading order, and how many modules were read."""

    findings: tuple[Finding, ...]
    modules: int
    facts: JobFacts

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "image": {
                "source": self.facts.versions.source,
                "python": self.facts.versions.python,
                "tensorflow": self.facts.versions.tensorflow,
                **({"packages": dict(self.facts.versions.packages)} if self.facts.versions.packages else {}),
            },
            "modules": self.modules,
            "counts": count_by_severity(self.findings),
            "findings": [f.as_dict() for f in self.findings],
            "rulesChecked": R.CHECKED,
        }


def summary_line(checkup: Checkup) -> str | None:
    """One line for ``training``: the error-level findings, or None when there are none."""
    errors = checkup.errors
    if not errors:
        return None
    shown = "; ".join(f"{f.where} {f.rule}" for f in errors[:3])
    more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
    return (
        f"the trainer checkup found {len(errors)} error(s) that fail on this job's target: {shown}{more}; "
        "run `mlsubmit migrate` with the same flags for the fixes"
    )


def python_files(package_dir: Path, walked: WalkedPackage | None = None) -> dict[str, Path]:
    """The package's ``.py`` files (relative posix path -> file), by the sdist's bounded walk and ignore files:
    the walk the build already made (``walked``), else one of its own."""
    if walked is None:
        from mlsubmit.sdist.tree import collect_tree

        walked_files: Mapping[str, Path] = collect_tree(package_dir).files
    else:
        walked_files = walked.files
    return {rel: path for rel, path in walked_files.items() if rel.endswith(".py")}


def check_package(
    package_dir: Path,
    facts: JobFacts,
    entry: str | None = None,
    walked: WalkedPackage | None = None,
    sdist: Local | None = None,
) -> Checkup:
    """The checkup of the package at ``package_dir`` (and its parent's setup.py / pyproject.toml).

    ``walked``: the package as its sdist build walked and read it (the ``Plan``'s), so no file is read twice;
    ``sdist``: the sdist built from it, whose metadata says what installing it installs.
    """
    built = None
    if walked is not None and walked.members:  # the sdist we generated: what it holds is known, not read back
        built = BuiltRequirements(walked.requirements, walked.members)
    return check_files(
        python_files(package_dir, walked),
        facts,
        project_dir=package_dir.parent,
        entry=entry,
        sources=walked.sources if walked is not None else {},
        sdist=None if built is not None else sdist,
        built=built,
    )


def check_files(
    files: Mapping[str, Path],
    facts: JobFacts,
    *,
    project_dir: Path | None = None,
    entry: str | None = None,
    sources: Mapping[str, bytes] = MappingProxyType({}),
    sdist: Local | None = None,
    built: BuiltRequirements | None = None,
) -> Checkup:
    """The checkup of ``files`` (relative path -> file). ``entry``: the relative path of the module the job runs;
    ``sources``: modules' bytes already read (relative path -> bytes); the others are read from their files;
    ``sdist``: the package's built sdist (what it installs, :func:`~mlsubmit.migrate.requirements.built_requirements`),
    or ``built``: that, known without reading it.

    Bounded in time: modules left when :data:`TIME_BUDGET_S` is spent are not read, and a note says so.
    """
    found: list[Finding] = []
    modules: dict[str, Uses] = {}
    clock = console.current().now  # a test sets a console with a fake clock
    deadline = clock() + TIME_BUDGET_S
    ordered = sorted(files)
    for index, rel in enumerate(ordered):
        if clock() > deadline:
            found.append(
                Finding(
                    rel,
                    1,
                    "not-read",
                    "info",
                    f"the checkup stopped after {TIME_BUDGET_S:g} s: this module and {len(ordered) - index - 1} more "
                    "were not read",
                    "leave generated code out of the package (.mlsubmitignore)",
                )
            )
            break
        known = sources.get(rel)
        try:
            source = (
                known
                if known is not None and len(known) <= MAX_MODULE_BYTES
                else read_bounded(str(files[rel]), what="a Python module", max_bytes=MAX_MODULE_BYTES)
            )
        except ConfigFileError as err:
            found.append(
                Finding(rel, 1, "unreadable", "warning", str(err), "make the module readable and small")
            )
            continue
        uses = scan_source(source, rel)
        modules[rel] = uses
        if uses.syntax_error:
            line, message = uses.syntax_error
            found.append(
                Finding(
                    rel,
                    line,
                    "py2-syntax",
                    "error",
                    f"not valid Python 3 ({message}): the module cannot even be imported",
                    "port it to Python 3 (print(...), except X as e, ...); `python3 -m lib2to3` does most of it",
                )
            )
            continue
        found.extend(api_findings(rel, uses, facts.versions))
        found.extend(subprocess_findings(rel, uses))
        found.extend(_module_findings(rel, uses))
    found.extend(_package_findings(modules, facts, entry or (min(modules) if modules else None)))
    if built is None and sdist is not None:
        built = built_requirements(sdist)
    found.extend(missing_findings(modules, project_dir, facts.versions, built))
    if project_dir is not None:
        found.extend(requirement_findings(project_dir, facts.versions))
        found.extend(unshipped_requirement_files(project_dir, built))
    if (facts.versions.python or "").startswith("2."):
        # the job's own Python is 2 (the legacy service ran pythonVersion 2.7): Python 2 code is no finding there
        found = [f for f in found if f.rule not in PYTHON2_RULES]
    return Checkup(tuple(sort_findings(found)), len(modules), facts)


def _module_findings(rel: str, uses: Uses) -> Iterator[Finding]:
    ml_lines = [
        line for name, lines in uses.names.items() if name.startswith("google.cloud.ml") for line in lines
    ]
    ml_lines += [
        line
        for callee, line, node in uses.calls
        if callee == "googleapiclient.discovery.build"
        and node.args
        and getattr(node.args[0], "value", None) == "ml"
    ]
    if ml_lines:
        yield Finding.on_lines(
            rel,
            ml_lines,
            "ml-v1-api",
            "error",
            "the trainer calls AI Platform Training (google.cloud.ml / the ml v1 API), shut down in January 2025",
            f"use Vertex AI (google-cloud-aiplatform) or drop the call ({R.AI_PLATFORM})",
        )
    for name, lines in sorted(uses.py2_names.items()):
        yield Finding.on_lines(
            rel, lines, "py2", "error", f"`{name}` is Python 2 only", f"use {R.PY2_BUILTINS[name]}"
        )
    for method, new in R.PY2_METHODS.items():
        if uses.methods.get(method):
            yield Finding.on_lines(
                rel,
                uses.methods[method],
                "py2",
                "error",
                f"`.{method}()` is gone from Python 3 dicts (and from pandas 2.0 objects)",
                f"use {new}",
            )
    for module, lines in sorted(uses.py2_modules.items()):
        yield Finding.on_lines(
            rel,
            lines,
            "py2",
            "error",
            f"module `{module}` is Python 2 only",
            f"import {R.PY2_MODULES[module]}",
        )


def _package_findings(modules: Mapping[str, Uses], facts: JobFacts, entry: str | None) -> Iterator[Finding]:
    reads_tf_config = any("TF_CONFIG" in u.strings for u in modules.values())
    if reads_tf_config:
        yield from _tf_config(modules, facts)
    yield from _job_dir(modules, facts)
    if facts.metric_tag is not None and entry is not None:
        yield from _metric(modules, facts.metric_tag, entry, facts.target)


def _tf_config(modules: Mapping[str, Uses], facts: JobFacts) -> Iterator[Finding]:
    wrong = "master" if facts.primary == "chief" else "chief"
    handles_primary = any(
        facts.primary in u.compared or facts.primary in u.subscript_keys or facts.primary in u.defaulted_keys
        for u in modules.values()
    )
    severity: Severity = "error" if facts.distributed else "warning"
    where = "this job's cluster" if facts.distributed else "a cluster (the job has one replica today)"
    for rel, uses in modules.items():
        lines = (
            uses.compared.get(wrong, [])
            + uses.subscript_keys.get(wrong, [])
            + uses.defaulted_keys.get(wrong, [])
        )
        if lines and not handles_primary:
            yield Finding.on_lines(
                rel,
                lines,
                "tf-config-primary",
                severity,
                f"the trainer looks for TF_CONFIG task type {wrong!r}, but in {where} on {facts.target} the "
                f"primary replica is {facts.primary!r}",
                "accept both: `task_type in ('chief', 'master')` (docs/vertex.md)",
            )
        for role in R.OPTIONAL_CLUSTER_ROLES:
            if role in facts.roles or not uses.subscript_keys.get(role):
                continue
            yield Finding.on_lines(
                rel,
                uses.subscript_keys[role],
                "tf-config-cluster",
                severity,
                f"the trainer indexes TF_CONFIG's cluster with [{role!r}], but this job has no {role} replicas: "
                "the cluster lists only roles that have replicas (KeyError)",
                f"use cluster.get({role!r}, [])",
            )


def _job_dir(modules: Mapping[str, Uses], facts: JobFacts) -> Iterator[Finding]:
    declared = [
        (rel, line, required, local) for rel, u in modules.items() for line, required, local in u.job_dir_args
    ]
    if not facts.job_dir:
        for rel, line, required, local in declared:
            severity: Severity = "error"
            if required:
                problem = (
                    "the trainer requires --job-dir, but this job passes none (argparse exits with status 2)"
                )
            elif local:
                problem = (
                    f"the trainer writes to --job-dir, which this job does not pass: its default {local!r} is a "
                    "folder on the replica's disk, lost when the job ends"
                )
                severity = "warning"
            else:
                continue  # no default, or one in Cloud Storage: what the trainer does then is its own choice
            yield Finding(
                rel,
                line,
                "job-dir",
                severity,
                problem,
                "pass --job-dir gs://BUCKET/PATH (it becomes the job's baseOutputDirectory, and Vertex AI sets "
                "AIP_MODEL_DIR under it)",
            )
    reads_aip = any(
        name in u.strings for u in modules.values() for name in ("AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR")
    )
    if facts.container and facts.target == "vertex" and not declared and not reads_aip and modules:
        rel = min(modules)
        yield Finding(
            rel,
            1,
            "aip-model-dir",
            "info",
            "this container job's trainer reads neither --job-dir nor AIP_MODEL_DIR/AIP_CHECKPOINT_DIR: "
            "Vertex AI tells a container where outputs go only through them",
            f"write the model to os.environ['AIP_MODEL_DIR'] and set --job-dir ({R.VERTEX_CODE})",
        )


def _metric(modules: Mapping[str, Uses], tag: str, entry: str, target: str) -> Iterator[Finding]:
    reports = [
        (rel, node)
        for rel, u in modules.items()
        for node in u.method_nodes.get("report_hyperparameter_tuning_metric", [])
    ]
    uses_hypertune = any("hypertune" in u.imported_roots for u in modules.values())
    if (not uses_hypertune or not reports) and target == "vertex":  # ml v1 also read TensorFlow summaries
        summaries = sorted(
            (rel, line)
            for rel, u in modules.items()
            for name, lines in u.names.items()
            if name in SUMMARY_WRITERS
            for line in lines
        )
        named = sorted((rel, line) for rel, u in modules.items() for line in u.strings.get(tag, []))
        rel, line = (named or summaries or [(entry, 1)])[0]
        legacy = " (it writes TensorFlow summaries, which only the legacy service read)" if summaries else ""
        from mlsubmit.targets.hptuning import how_to_report  # the Vertex translation: only for this finding

        yield Finding(
            rel,
            line,
            "hypertune-missing",
            "error",
            f"this tuning job's metric {tag!r} is never reported with cloudml-hypertune{legacy}: Vertex AI reads "
            "tuning metrics only from it, so every trial ends without a measurement",
            f"{how_to_report(tag)}; add cloudml-hypertune to the package's requirements ({R.VERTEX_HPT})",
        )
        return
    for rel, node in reports:
        value = next((k.value for k in node.keywords if k.arg == "hyperparameter_metric_tag"), None)
        text = value.value if isinstance(value, ast.Constant) else None
        if isinstance(value, ast.Name):
            text = modules[rel].constants.get(value.id)
        if isinstance(text, str) and text != tag:
            yield Finding(
                rel,
                node.lineno,
                "hypertune-tag",
                "error",
                f"the trainer reports metric {text!r}, but the job tunes {tag!r} (hyperparameterMetricTag): "
                "Vertex AI never sees the job's metric",
                f"report hyperparameter_metric_tag={tag!r}, or set hyperparameterMetricTag: {text}",
            )
