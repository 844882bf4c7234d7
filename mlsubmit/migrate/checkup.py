"""The trainer checkup: every module of the package read once (AST only), judged against the job and its image
(docs/migrate.md lists the rules). Bounded: the ``.py`` files of the sdist build's walk (or the same bounded walk),
each up to :data:`MAX_MODULE_BYTES` (a larger one is reported, not read), and :data:`TIME_BUDGET_S` in all."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from mlsubmit import console
from mlsubmit.errors import ConfigFileError, MlsubmitError
from mlsubmit.job.vocab import MASTER, ROLE_BY_KEY, as_dict, primary_task_name, replica_counts
from mlsubmit.migrate import rules as R
from mlsubmit.migrate.apis import api_findings, subprocess_findings
from mlsubmit.migrate.findings import Finding, ImageVersions, JobFacts, Severity, count_by_severity
from mlsubmit.migrate.requirements import (
    TF_IMAGE_MODULES,
    built_requirements,
    missing_findings,
    requirement_findings,
    unshipped_requirement_files,
)
from mlsubmit.migrate.requirements import BuiltRequirements as Built
from mlsubmit.migrate.scan import Uses, scan_source
from mlsubmit.proc.files import read_bounded

if TYPE_CHECKING:
    from mlsubmit.sdist.build import WalkedPackage
    from mlsubmit.sdist.digest import Local

PYTHON2_RULES = frozenset({"py2", "py2-syntax"})
MAX_MODULE_BYTES = 2 * 1024 * 1024  # a generated module that large is not hand-written trainer code
TIME_BUDGET_S = 10.0  # a 10,000-line package takes about 0.15 s (benchmarks/bench_checkup.py)
# How legacy trainers wrote the metric the legacy service read (TensorFlow summaries).
SUMMARY_WRITERS = {"tensorflow.summary.scalar", "tensorflow.Summary", "tensorflow.compat.v1.Summary"}
SUMMARY_WRITERS |= {"tensorflow.keras.callbacks.TensorBoard", "keras.callbacks.TensorBoard"}


class Checkup(NamedTuple):
    """The checkup of one package: findings in reading order, and how many modules were read."""

    findings: tuple[Finding, ...]
    modules: int
    facts: JobFacts

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def as_dict(self) -> dict[str, Any]:
        v = self.facts.versions
        image = {"source": v.source, "python": v.python, "tensorflow": v.tensorflow}
        return {
            "image": image | ({"packages": dict(v.packages)} if v.packages else {}),
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


METRIC_RULES = ("hypertune-missing", "hypertune-tag")


def trainer_notes(
    job_body: Mapping[str, Any],
    target: str,
    package_dir: Path,
    walked: WalkedPackage | None = None,
    *,
    sdist: Local | None = None,
    image_base: str | None = None,
) -> list[str]:
    """What ``training`` warns of the trainer (docs/migrate.md); never raises."""
    try:
        facts = job_facts(job_body, target)
        if image_base is not None:
            facts = on_built_image(facts, image_base)
        checkup = check_package(package_dir, facts, walked=walked, sdist=sdist)
    except MlsubmitError:
        return []
    notes = [f"{f.where}: {f.message}: {f.fix}" for f in checkup.errors if f.rule in METRIC_RULES]
    line = summary_line(checkup)
    return [*notes, line] if line else notes


def check_package(
    package_dir: Path,
    facts: JobFacts,
    entry: str | None = None,
    walked: WalkedPackage | None = None,
    sdist: Local | None = None,
) -> Checkup:
    """The checkup of the package at ``package_dir`` from its sdist build's walk (else walked here)."""
    if walked is None:
        from mlsubmit.sdist.build import WalkedPackage
        from mlsubmit.sdist.tree import collect_tree

        walked = WalkedPackage(collect_tree(package_dir).files, {})
    # the sdist we generated: what it holds is known, not read back
    built = Built((), walked.members) if walked.members else built_requirements(sdist) if sdist else None
    modules = {rel: path for rel, path in walked.files.items() if rel.endswith(".py")}
    return check_files(
        modules, facts, project_dir=package_dir.parent, entry=entry, sources=walked.sources, built=built
    )


def check_files(
    files: Mapping[str, Path],
    facts: JobFacts,
    *,
    project_dir: Path | None = None,
    entry: str | None = None,
    sources: Mapping[str, bytes] = MappingProxyType({}),
    built: Built | None = None,
) -> Checkup:
    """The checkup of ``files`` (relative path -> file); what :data:`TIME_BUDGET_S` leaves unread is noted."""
    found: list[Finding] = []
    modules: dict[str, Uses] = {}
    clock = console.current().now  # a test sets a console with a fake clock
    deadline = clock() + TIME_BUDGET_S
    ordered = sorted(files)
    for index, rel in enumerate(ordered):
        if clock() > deadline:
            left = f"the checkup stopped after {TIME_BUDGET_S:g} s: this module and {len(ordered) - index - 1} more"
            fix = "leave generated code out of the package (.mlsubmitignore)"
            found.append(Finding(rel, 1, "not-read", "info", f"{left} were not read", fix))
            break
        source = sources.get(rel)
        try:
            if source is None or len(source) > MAX_MODULE_BYTES:
                source = read_bounded(str(files[rel]), what="a Python module", max_bytes=MAX_MODULE_BYTES)
        except ConfigFileError as err:
            fix = "make the module readable and small"
            found.append(Finding(rel, 1, "unreadable", "warning", str(err), fix))
            continue
        modules[rel] = uses = scan_source(source, rel)
        if uses.syntax_error:
            line, message = uses.syntax_error
            problem = f"not valid Python 3 ({message}): the module cannot even be imported"
            fix = "port it to Python 3 (print(...), except X as e, ...); `python3 -m lib2to3` does most of it"
            found.append(Finding(rel, line, "py2-syntax", "error", problem, fix))
            continue
        found.extend(api_findings(rel, uses, facts.versions))
        found.extend(subprocess_findings(rel, uses))
        found.extend(_module_findings(rel, uses))
    if any("TF_CONFIG" in u.strings for u in modules.values()):
        found.extend(_tf_config(modules, facts))
    found.extend(_job_dir(modules, facts))
    entry = entry or min(modules, default=None)
    if facts.metric_tag is not None and entry is not None:
        found.extend(_metric(modules, facts.metric_tag, entry, facts.target))
    found.extend(missing_findings(modules, project_dir, facts.versions, built))
    if project_dir is not None:
        found.extend(requirement_findings(project_dir, facts.versions))
        found.extend(unshipped_requirement_files(project_dir, built))
    if (facts.versions.python or "").startswith("2."):
        # the job's own Python is 2 (the legacy service ran pythonVersion 2.7): Python 2 code is no finding there
        found = [f for f in found if f.rule not in PYTHON2_RULES]
    # file order, then line, then rule: the order a reader walks the code in
    return Checkup(tuple(sorted(found, key=lambda f: (f.path, f.line, f.rule))), len(modules), facts)


def _module_findings(rel: str, uses: Uses) -> Iterator[Finding]:
    ml_lines = [n for name, lines in uses.names.items() if name.startswith("google.cloud.ml") for n in lines]
    builds = [(n, node) for callee, n, node in uses.calls if callee == "googleapiclient.discovery.build"]
    ml_lines += [line for line, node in builds if node.args and getattr(node.args[0], "value", None) == "ml"]
    if ml_lines:
        problem = "the trainer calls AI Platform Training (google.cloud.ml / the ml v1 API), shut down in January 2025"
        fix = f"use Vertex AI (google-cloud-aiplatform) or drop the call ({R.AI_PLATFORM})"
        yield Finding.on_lines(rel, ml_lines, "ml-v1-api", "error", problem, fix)
    for name, lines in sorted(uses.py2_names.items()):
        fix = f"use {R.PY2_BUILTINS[name]}"
        yield Finding.on_lines(rel, lines, "py2", "error", f"`{name}` is Python 2 only", fix)
    for method, new in R.PY2_METHODS.items():
        if lines := uses.method_lines(method):
            gone = f"`.{method}()` is gone from Python 3 dicts (and from pandas 2.0 objects)"
            yield Finding.on_lines(rel, lines, "py2", "error", gone, f"use {new}")
    for module, lines in sorted(uses.py2_modules.items()):
        fix = f"import {R.PY2_MODULES[module]}"
        yield Finding.on_lines(rel, lines, "py2", "error", f"module `{module}` is Python 2 only", fix)


def _tf_config(modules: Mapping[str, Uses], facts: JobFacts) -> Iterator[Finding]:
    wrong, primary = "master" if facts.primary == "chief" else "chief", facts.primary

    def keys(u: Uses, key: str) -> list[int]:  # the lines that compare, index or look up the string `key`
        return u.compared.get(key, []) + u.subscript_keys.get(key, []) + u.defaulted_keys.get(key, [])

    handles_primary = any(keys(u, primary) for u in modules.values())
    severity: Severity = "error" if facts.distributed else "warning"
    where = "this job's cluster" if facts.distributed else "a cluster (the job has one replica today)"
    for rel, uses in modules.items():
        if keys(uses, wrong) and not handles_primary:
            problem = f"the trainer looks for TF_CONFIG task type {wrong!r}, but in {where} "
            problem += f"on {facts.target} the primary replica is {primary!r}"
            fix = "accept both: `task_type in ('chief', 'master')` (docs/vertex.md)"
            yield Finding.on_lines(rel, keys(uses, wrong), "tf-config-primary", severity, problem, fix)
        for role in R.OPTIONAL_CLUSTER_ROLES:
            if role not in facts.roles and (lines := uses.subscript_keys.get(role)):
                problem = f"the trainer indexes TF_CONFIG's cluster with [{role!r}], but this job has no "
                problem += f"{role} replicas: the cluster lists only roles that have replicas (KeyError)"
                fix = f"use cluster.get({role!r}, [])"
                yield Finding.on_lines(rel, lines, "tf-config-cluster", severity, problem, fix)


def _job_dir(modules: Mapping[str, Uses], facts: JobFacts) -> Iterator[Finding]:
    declared = [(rel, *arg) for rel, u in modules.items() for arg in u.job_dir_args]
    fix = "pass --job-dir gs://BUCKET/PATH (it becomes the job's baseOutputDirectory, and Vertex AI sets "
    fix += "AIP_MODEL_DIR under it)"
    for rel, line, required, local in declared if not facts.job_dir else ():
        if required:
            problem = "the trainer requires --job-dir, but this job passes none "
            problem += "(argparse exits with status 2)"
            yield Finding(rel, line, "job-dir", "error", problem, fix)
        elif local:  # (no default, or one in Cloud Storage: what the trainer does then is its own choice)
            problem = f"the trainer writes to --job-dir, which this job does not pass: its default {local!r} "
            problem += "is a folder on the replica's disk, lost when the job ends"
            yield Finding(rel, line, "job-dir", "warning", problem, fix)
    aip = ("AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR")
    reads_aip = any(name in u.strings for u in modules.values() for name in aip)
    if facts.container and facts.target == "vertex" and not declared and not reads_aip and modules:
        problem = (
            "this container job's trainer reads neither --job-dir nor AIP_MODEL_DIR/AIP_CHECKPOINT_DIR: "
        )
        problem += "Vertex AI tells a container where outputs go only through them"
        fix = f"write the model to os.environ['AIP_MODEL_DIR'] and set --job-dir ({R.VERTEX_CODE})"
        yield Finding(min(modules), 1, "aip-model-dir", "info", problem, fix)


def _metric(modules: Mapping[str, Uses], tag: str, entry: str, target: str) -> Iterator[Finding]:
    method = "report_hyperparameter_tuning_metric"
    reports = [(rel, n) for rel, u in modules.items() for n in u.methods.get(method, [])]
    uses_hypertune = any("hypertune" in u.imported_roots for u in modules.values())
    if (not uses_hypertune or not reports) and target == "vertex":  # ml v1 also read TensorFlow summaries
        summaries = sorted(
            (rel, n) for rel, u in modules.items() for w in SUMMARY_WRITERS for n in u.names.get(w, [])
        )
        named = sorted((rel, line) for rel, u in modules.items() for line in u.strings.get(tag, []))
        rel, line = (named or summaries or [(entry, 1)])[0]
        legacy = " (it writes TensorFlow summaries, which only the legacy service read)" if summaries else ""
        from mlsubmit.targets.hptuning import how_to_report  # the Vertex translation: only for this finding

        problem = f"this tuning job's metric {tag!r} is never reported with cloudml-hypertune{legacy}: "
        problem += "Vertex AI reads tuning metrics only from it, so every trial ends without a measurement"
        fix = f"{how_to_report(tag)}; add cloudml-hypertune to the package's requirements ({R.VERTEX_HPT})"
        yield Finding(rel, line, "hypertune-missing", "error", problem, fix)
        return
    for rel, node in reports:
        value = next((k.value for k in node.keywords if k.arg == "hyperparameter_metric_tag"), None)
        text = value.value if isinstance(value, ast.Constant) else None
        if isinstance(value, ast.Name):
            text = modules[rel].constants.get(value.id)
        if isinstance(text, str) and text != tag:
            problem = f"the trainer reports metric {text!r}, but the job tunes {tag!r} "
            problem += "(hyperparameterMetricTag): Vertex AI never sees the job's metric"
            fix = f"report hyperparameter_metric_tag={tag!r}, or set hyperparameterMetricTag: {text}"
            yield Finding(rel, node.lineno, "hypertune-tag", "error", problem, fix)


# What the checkup knows about a job, as mlsubmit sends it: its image's versions (a prebuilt executor image's
# framework, version and Python, else the legacy runtimeVersion / pythonVersion; a custom container's are not known)
# and what TF_CONFIG and the arguments will say (the primary is ``chief`` on Vertex AI).
# a framework as Vertex AI spells it -> its PyPI name (every one of job.vocab.FRAMEWORKS: a test holds it)
_PYPI = {"tensorflow": "tensorflow", "pytorch": "torch", "scikit-learn": "scikit-learn", "xgboost": "xgboost"}


def _framework(source: str, framework: str, version: str, python: str | None) -> ImageVersions:
    pypi = _PYPI.get(framework, framework)
    if pypi == "tensorflow":
        return ImageVersions(source, python, version or None)
    return ImageVersions(source, python, None, {pypi: version} if version else {})


def image_versions(
    job_body: Mapping[str, Any], vertex_body: Mapping[str, Any] | None = None
) -> ImageVersions:
    """The versions of the image the job runs in, as far as mlsubmit knows them."""
    ti: Mapping[str, Any] = job_body.get("trainingInput") or {}
    if image := as_dict(ti.get("masterConfig")).get("imageUri"):
        return ImageVersions(source=f"custom container {image}")
    body = vertex_body or {}
    pools = (body.get("jobSpec") or body.get("trialJobSpec") or {}).get("workerPoolSpecs") or []
    for uri in [str(p["pythonPackageSpec"]["executorImageUri"]) for p in pools if "pythonPackageSpec" in p]:
        from mlsubmit.targets.vertex_images import BY_NAME, TRAINING_REPO  # the table: only when it is asked

        m = TRAINING_REPO.fullmatch(uri)
        image = BY_NAME.get(m.group(2)) if m else None
        if image is None:
            return ImageVersions(source=f"executor image {uri}")
        return _framework(f"prebuilt image {image.name}", image.framework, image.version, image.python)
    vertex: Mapping[str, Any] = job_body.get("vertex") or {}
    if vertex.get("executorImageUri"):
        return ImageVersions(source=f"executor image {vertex['executorImageUri']}")
    python = str(ti.get("pythonVersion") or "") or None
    if vertex.get("framework"):
        framework, version = str(vertex["framework"]), str(vertex.get("frameworkVersion") or "")
        return _framework(f"framework {framework} {version}".strip(), framework, version, python)
    runtime = str(ti.get("runtimeVersion") or "") or None
    if runtime and python is None:
        from mlsubmit.targets.vertex_images import PREBUILT_IMAGES

        pythons = {i.python for i in PREBUILT_IMAGES if i.framework == "tensorflow" and i.version == runtime}
        python = max(pythons, key=lambda p: tuple(int(x) for x in p.split(".")), default=None)
    return ImageVersions(f"runtimeVersion {runtime}" if runtime else "no runtime", python, runtime)


def job_facts(
    job_body: Mapping[str, Any], target: str, vertex_body: Mapping[str, Any] | None = None
) -> JobFacts:
    """What the job tells the trainer on ``target`` ("vertex" or "ml")."""
    ti: Mapping[str, Any] = job_body.get("trainingInput") or {}
    counts = replica_counts(ti)
    primary = "chief" if target == "vertex" else primary_task_name(ti)
    roles = frozenset(primary if key == MASTER.key else ROLE_BY_KEY[key].task for key in counts)
    container = bool(as_dict(ti.get("masterConfig")).get("imageUri"))
    tag, hp = None, ti.get("hyperparameters")
    if hp:  # the Vertex translation (targets.vertex and its tables): only for a tuning job
        from mlsubmit.targets.hptuning import DEFAULT_METRIC_TAG

        tag = str(hp.get("hyperparameterMetricTag") or DEFAULT_METRIC_TAG)
    versions = image_versions(job_body, vertex_body)
    jobdir = bool(ti.get("jobDir"))
    return JobFacts(target, primary, sum(counts.values()) > 1, jobdir, container, tag, versions, roles)


TF_PUBLIC_IMAGE = "tensorflow/tensorflow:"


def on_built_image(facts: JobFacts, base: str, python: str | None = None) -> JobFacts:
    """``facts`` for the job run in an image built on ``base`` (only TensorFlow's public image is known)."""
    tensorflow, contents = facts.versions.tensorflow, None
    if base.startswith(TF_PUBLIC_IMAGE):
        contents = TF_IMAGE_MODULES
        tag = base.removeprefix(TF_PUBLIC_IMAGE).split("-")[0]  # 2.11.0-gpu -> TensorFlow 2.11
        tensorflow = ".".join(tag.split(".")[:2]) or tensorflow
    python = python or facts.versions.python
    versions = facts.versions._replace(python=python, source=base, tensorflow=tensorflow, modules=contents)
    return facts._replace(versions=versions)
