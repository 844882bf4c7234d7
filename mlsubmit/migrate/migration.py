"""A legacy job as Vertex-native files (docs/migrate.md): the spec gcloud's ``--config`` takes, the command, what
mapped to what, what changed, what was refused, the image it needs when its runtime's has ended, and the checkup.
Pure: the caller gives the validated body with its final package URIs; the Vertex body is ``training``'s."""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import InvalidJobError, Problem, UsageError
from mlsubmit.images.bases import BY_RUNTIME
from mlsubmit.images.planner import JobImage, has_gpu, plan_job_image
from mlsubmit.job.imageref import ImageOptions
from mlsubmit.job.validate import TrainingRequest, prepare
from mlsubmit.job.vocab import ROLES, as_dict, primary_task_name, scale_tier
from mlsubmit.migrate.checkup import Checkup, check_package, job_facts, on_built_image
from mlsubmit.services.staging import StagedFile
from mlsubmit.targets.hptuning import has_hyperparameters
from mlsubmit.targets.translate import rules_for, translate
from mlsubmit.targets.vertex_images import choose_executor_image, today

if TYPE_CHECKING:
    from mlsubmit.sdist.build import WalkedPackage
    from mlsubmit.sdist.digest import Local

PACKAGES_DIR = "packages"
IMAGE_DIR = "image"
IMAGE_CONTEXT = f"{IMAGE_DIR}/context.tar.gz"  # the exact context the content tag is the digest of
# Package-job fields a container job does not take (the image holds the packages and runs the module).
PACKAGE_FIELDS = ("runtimeVersion", "pythonVersion", "packageUris", "pythonModule")


def package_on_image(job_body: Mapping[str, Any]) -> str | None:
    """The ``masterConfig.imageUri`` a legacy job runs its packages on, else None."""
    ti = as_dict(job_body.get("trainingInput"))
    image = as_dict(ti.get("masterConfig")).get("imageUri")
    return str(image) if image and ti.get("packageUris") else None


def needs_built_image(job_body: Mapping[str, Any], executor_image_uri: str | None = None) -> bool:
    """Whether the job runs on Vertex AI only in an image built from its packages."""
    ti = as_dict(job_body.get("trainingInput"))
    if package_on_image(job_body):
        return True
    if as_dict(ti.get("masterConfig")).get("imageUri") or not ti.get("packageUris"):
        return False
    if (vertex := as_dict(job_body.get("vertex"))).get("buildImage") is True:
        return True
    choice = choose_executor_image(ti, vertex, has_gpu(ti), today(), executor_image_uri)
    ended = ("$.trainingInput.runtimeVersion", "$.trainingInput.pythonVersion")
    return choice.problem is not None and choice.problem[0] in ended


def plan_built_image(
    job_body: Mapping[str, Any],
    staged: Sequence[StagedFile],
    *,
    project: str | None,
    workdir: Path,
    options: ImageOptions,
) -> tuple[JobImage, str | None]:
    """The image ``--build-image`` would build for this job (its context written into ``workdir``), and the
    Python inside it (None: not known)."""
    ti = as_dict(job_body.get("trainingInput"))
    local = [s.local if isinstance(s.local, Path) else s.local.write(workdir) for s in staged if s.local]
    if len(local) != len(staged):
        raise UsageError(
            "the job runs on Vertex AI only in an image built with its packages (its runtime's image has ended, "
            "or it runs them on an image of its own), and a gs:// package cannot be built in: pass them as local "
            "files (--packages FILE or --package-path DIR)"
        )
    planned = plan_job_image(
        job_body,
        options,
        sdist=None,
        packages=local,
        remote_packages=(),
        regions=[str(ti.get("region") or "")],
        project=lambda: project,
        staging_prefix=None,
        workdir=workdir,
    )
    if package_on_image(job_body) and not options.base_image:
        why = "the job's masterConfig.imageUri, with the packages installed on it"
        return replace(planned, spec=replace(planned.spec, base_reason=why)), None
    row = BY_RUNTIME.get(str(ti.get("runtimeVersion") or ""))
    return planned, row.image_python if row else None


def with_built_image(job_body: Mapping[str, Any], image: JobImage) -> dict[str, Any]:
    """The job as a custom container job running ``image`` (its module is the image's entrypoint)."""
    body = copy.deepcopy(dict(job_body))
    ti = body["trainingInput"]
    chief = primary_task_name(ti) == "chief"  # the legacy runtime's; a container says master unless told
    for key in PACKAGE_FIELDS:
        ti.pop(key, None)
    ti["masterConfig"] = {**as_dict(ti.get("masterConfig")), "imageUri": image.spec.tagged}
    if chief:
        ti["useChiefInTfConfig"] = True
    vertex = body.get("vertex")
    if isinstance(vertex, dict) and vertex.pop("buildImage", None) is not None and not vertex:
        body.pop("vertex")  # --build-image asked for this very image: it is built, the job now names it
    return body


def legacy_request(request: TrainingRequest) -> tuple[TrainingRequest, list[Problem]]:
    """The request to plan with, and what only Vertex AI's rules refuse in it (for MIGRATION.md)."""
    strict = replace(request, target_rules=rules_for("vertex"))
    try:
        prepare(strict)
    except InvalidJobError as err:
        relaxed = replace(request, target_rules=lambda body, complete: [])
        prepare(relaxed)  # raises when the job is not even a valid legacy job
        return relaxed, list(err.problems)
    return strict, []


@dataclass
class Migration:
    """Everything ``mlsubmit migrate`` writes, before it is written."""

    job_id: str
    region: str
    kind: str  # "customjob" or "hptuningjob"
    config: dict[str, Any] | None  # None when Vertex AI refused the job
    vertex_body: dict[str, Any] | None
    warnings: list[str]
    refused: list[Problem]
    mapping: list[tuple[str, str]]
    packages: list[StagedFile]
    checkup: Checkup | None
    notes: list[str] = field(default_factory=list)
    image: JobImage | None = None
    rewrites: list[str] = field(default_factory=list)  # what migrate changed that the team must act on

    @property
    def config_name(self) -> str:
        return f"{self.kind}.yaml"

    @property
    def command(self) -> list[str]:
        """The gcloud command line that creates the job from :attr:`config_name`."""
        body = self.vertex_body or {}
        group = "hp-tuning-jobs" if self.kind == "hptuningjob" else "custom-jobs"
        labels = ",".join(f"{k}={v}" for k, v in (body.get("labels") or {}).items())
        argv = ["gcloud", "ai", group, "create", f"--region={self.region}"]
        argv += [f"--display-name={body.get('displayName', self.job_id)}", f"--config={self.config_name}"]
        argv += [f"--labels={labels}"] if labels else []
        kms = (body.get("encryptionSpec") or {}).get("kmsKeyName")
        if kms and self.kind == "customjob":  # a CustomJobSpec has no encryptionSpec: gcloud takes the flag
            argv.append(f"--kms-key={kms}")
        return argv

    @property
    def uploads(self) -> list[tuple[str, str]]:
        """(file under the output directory, gs:// URI) for each local package the spec names."""
        return [(f"{PACKAGES_DIR}/{s.local.name}", s.uri) for s in self.packages if s.local is not None]

    @property
    def steps(self) -> list[list[str]]:
        """Every command, in order: build the image or upload the packages, then create the job."""
        argv = [["gcloud", "storage", "cp", "--no-clobber", rel, uri] for rel, uri in self.uploads]
        if self.image is not None:
            argv.append(["gcloud", "builds", "submit", f"--tag={self.image.spec.tagged}", IMAGE_CONTEXT])
        return [*argv, self.command]

    def script(self) -> str:
        """A shell script: build the image or upload the packages, then create the job."""
        lines = ["#!/bin/sh", "# Written by `mlsubmit migrate` (docs/migrate.md).", "set -eu"]
        lines += ['cd "$(dirname "$0")"', *[shlex.join(argv) for argv in self.steps]]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "jobId": self.job_id,
            "region": self.region,
            "kind": self.kind,
            "config": self.config,
            "configFile": self.config_name if self.config is not None else None,
            "command": self.command if self.config is not None else None,
            "uploads": [{"file": rel, "uri": uri} for rel, uri in self.uploads],
            "mapping": [{"legacy": a, "vertex": b} for a, b in self.mapping],
            "changes": list(self.warnings),
            "rewrites": list(self.rewrites),
            "refused": [str(p) for p in self.refused],
            "notes": list(self.notes),
            "steps": [shlex.join(argv) for argv in self.steps] if self.config is not None else [],
        }
        if self.image is not None:
            spec = self.image.spec
            out["image"] = {"reference": spec.tagged, "base": spec.base, "baseReason": spec.base_reason}
            out["image"] |= {"platform": spec.platform, "contextDigest": spec.context_digest}
            out["image"] |= {"dockerfile": spec.dockerfile, "context": IMAGE_CONTEXT}
        if self.checkup is not None:
            out["checkup"] = self.checkup.as_dict()
        return out


METRIC_PATH = "$.trainingInput.hyperparameters.hyperparameterMetricTag"


def _rewritten(job_body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The job with what Vertex AI refuses but migrate can change changed, and a line per change for the team."""
    hyper = as_dict(as_dict(job_body.get("trainingInput")).get("hyperparameters"))
    tag = hyper.get("hyperparameterMetricTag")
    if not isinstance(tag, str) or not re.search(r"\s", tag):
        return job_body, []
    new = re.sub(r"\s+", "_", tag.strip())
    body = copy.deepcopy(job_body)
    body["trainingInput"]["hyperparameters"]["hyperparameterMetricTag"] = new
    note = (
        f"hyperparameterMetricTag {tag!r} became {new!r}: Vertex AI refuses whitespace in a metric id. The "
        "trainer must report it under the new name: hypertune.HyperTune().report_hyperparameter_tuning_metric("
        f"hyperparameter_metric_tag={new!r}, metric_value=..., global_step=...)"
    )
    return body, [note]


def _pool_text(spec: Mapping[str, Any]) -> str:
    machine = spec.get("machineSpec") or {}
    text = f"{spec.get('replicaCount')} × {machine.get('machineType')}"
    if machine.get("acceleratorType"):
        text += f" + {machine.get('acceleratorCount')} {machine['acceleratorType']}"
    package, container = spec.get("pythonPackageSpec") or {}, spec.get("containerSpec") or {}
    return f"{text}, image {package.get('executorImageUri') or container.get('imageUri')}"


def mapping(job_body: Mapping[str, Any], vertex_body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What mapped to what, one row per setting (docs/vertex.md)."""
    ti: Mapping[str, Any] = job_body.get("trainingInput") or {}
    spec: Mapping[str, Any] = vertex_body.get("jobSpec") or vertex_body.get("trialJobSpec") or {}
    rows: list[tuple[str, str]] = [
        (f"jobId {job_body.get('jobId')}", f"displayName {vertex_body.get('displayName')} and its labels")
    ]
    pools = spec.get("workerPoolSpecs") or []
    for role in ROLES:
        if role.pool < len(pools) and pools[role.pool]:
            legacy = f"{role.plural}: {ti.get(role.type_field) or f'scaleTier {scale_tier(ti)}'}"
            rows.append((legacy, f"workerPoolSpecs[{role.pool}]: {_pool_text(pools[role.pool])}"))
    runtime = ", ".join(f"{k} {ti[k]}" for k in ("runtimeVersion", "pythonVersion") if ti.get(k))
    if runtime:
        rows.append((runtime, "the image above"))
    if ti.get("jobDir"):
        rows.append((f"jobDir {ti['jobDir']}", "baseOutputDirectory (and --job-dir in the args)"))
    if spec.get("scheduling"):
        legacy = f"scheduling {dict(ti.get('scheduling') or {})}"
        rows.append((legacy, f"scheduling {dict(spec['scheduling'])}"))
    if "studySpec" in vertex_body:
        study, trials = vertex_body["studySpec"], vertex_body.get("maxTrialCount")
        metric = f"metric {study['metrics'][0]['metricId']} ({study['metrics'][0]['goal']})"
        about = f"{len(study['parameters'])} parameters, {study['algorithm']}; maxTrialCount {trials}"
        parallel = f"parallelTrialCount {vertex_body.get('parallelTrialCount')}"
        rows.append(("hyperparameters", f"studySpec: {metric}, {about}, {parallel}"))
    return rows


def build_migration(
    job_body: dict[str, Any],
    staged: Sequence[StagedFile] = (),
    *,
    refused: Sequence[Problem] = (),
    executor_image_uri: str | None = None,
    package_dir: Path | None = None,
    walked: WalkedPackage | None = None,
    sdist: Local | None = None,
    workdir: Path,
    project: str | None,
    image_options: ImageOptions,
) -> Migration:
    """The migration of a validated job whose package URIs are final; refusals collected, not raised."""
    from mlsubmit.sdist.never_ship import refuse_archive

    # copied into the output (or its image): a package the user built is checked (a held sdist left secrets out)
    for package in staged:
        if isinstance(package.local, Path):
            refuse_archive(package.local)
    kind = "hptuningjob" if has_hyperparameters(job_body) else "customjob"
    ti: Mapping[str, Any] = job_body.get("trainingInput") or {}
    vertex_body, image, warnings = None, None, list[str]()
    renamed, rewrites = _rewritten(job_body)
    target_body = renamed
    refusals = [p for p in refused if p.path != METRIC_PATH or not rewrites]
    if needs_built_image(job_body, executor_image_uri):
        own_base = package_on_image(job_body)
        image, python = plan_built_image(
            target_body, staged, project=project, workdir=workdir, options=image_options
        )
        target_body = with_built_image(target_body, image)
        refusals = []  # they were about the job's image; the translation checks the rest again
        if own_base:
            rewrites.append(
                f"masterConfig.imageUri {own_base} with a Python package: Vertex AI runs a package only on its "
                f"prebuilt images, so the job runs as a custom container built on {image.spec.base} with the "
                "package installed (the image --build-image builds; docs/containers.md)"
            )
        else:
            asked = as_dict(job_body.get("vertex")).get("buildImage") is True
            why = "--build-image: the job"
            if ti.get("runtimeVersion") and not asked:
                why = f"runtimeVersion {ti['runtimeVersion']}: Vertex AI no longer serves its prebuilt image, so the job"
            warnings.append(
                f"{why} runs as a custom container built from its packages on {image.spec.base} (the same image "
                "--build-image builds; docs/containers.md)"
            )
        wanted = ti.get("pythonVersion")
        if wanted and python and str(wanted) != python:  # the image's base brings its own Python
            warnings.append(
                f"pythonVersion {wanted} became Python {python}: the job runs the Python of its image's base "
                f"{image.spec.base}, not the legacy runtime's; the trainer and its pinned packages must work on "
                f"Python {python}"
            )
    try:
        translation = translate(dict(target_body), "vertex", executor_image_uri=executor_image_uri)
        vertex_body = translation.body
        warnings += translation.warnings
    except InvalidJobError as err:
        refusals = refusals or list(err.problems)
    checkup = None
    if package_dir is not None:
        module = str(ti.get("pythonModule") or "")
        entry = module.replace(".", "/") + ".py" if module.startswith(package_dir.name + ".") else None
        facts = job_facts(renamed, "vertex", vertex_body if image is None else None)
        if image is not None:
            facts = on_built_image(facts, image.spec.base, python)
        checkup = check_package(package_dir, facts, entry, walked, sdist)
    note = "No image is built: the job runs a Vertex AI prebuilt image or the custom container it names."
    if image is not None:
        note = f"`{IMAGE_CONTEXT}` is the image's build context (the Dockerfile is beside it); `gcloud builds submit` "
        note += "builds it on Cloud Build for linux/amd64. Once pushed, pin the job to the image's digest "
        note += "(IMAGE@sha256:...) in the job file."
    config = (
        {k: v for k, v in vertex_body.items() if k not in ("displayName", "labels")} if vertex_body else None
    )
    return Migration(
        rewrites=rewrites,
        job_id=str(job_body.get("jobId")),
        region=str(ti.get("region") or ""),
        kind=kind,
        config=config if kind == "hptuningjob" or config is None else dict(config["jobSpec"]),
        vertex_body=vertex_body,
        warnings=warnings,
        refused=refusals,
        mapping=mapping(job_body, vertex_body) if vertex_body is not None else [],
        packages=[] if image is not None else list(staged),
        checkup=checkup,
        notes=[note],
        image=image,
    )
