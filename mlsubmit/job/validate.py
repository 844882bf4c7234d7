"""From a typed training request to one validated Job body, before anything touches the network: config file ->
merge with flags -> rules -> body, every problem the service would refuse reported at once (exit 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.errors import InvalidJobError, Problem
from mlsubmit.job.hints import format_path
from mlsubmit.job.jobfile import JobFile, check_job_file, schema_problems
from mlsubmit.job.merge import MergedJob, TrainingFlags, merge
from mlsubmit.job.rules import TargetRules, check_job
from mlsubmit.job.values import url_value_problem
from mlsubmit.job.vocab import as_dict, gcs_url_problem, project_from_flags, staging_prefix
from mlsubmit.proc.files import package_dir_problem

PENDING = "<sha256>"  # stands for the hash folder until the local packages are built and hashed


@dataclass(frozen=True)
class TrainingRequest:
    """Everything `mlsubmit training` was asked to do, parsed but not yet checked against the rules."""

    flags: TrainingFlags
    config: str | None = None
    package_path: str | None = None
    packages: Sequence[str] = ()
    staging_bucket: str | None = None
    project: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    target_rules: TargetRules | None = None  # the rules of the engine the job goes to (None: ml v1's)
    staging_layout: str = "shared"  # where packages go: services.staging.LAYOUTS (docs/training.md)

    @property
    def local_packages(self) -> list[str]:
        return [p for p in self.packages if not p.startswith("gs://")]

    @property
    def remote_packages(self) -> list[str]:
        return [p for p in self.packages if p.startswith("gs://")]

    @property
    def has_package_flags(self) -> bool:
        return bool(self.package_path or self.packages)


@dataclass
class PreparedJob:
    """A job that passed every local check: the body to send, and what must be staged first."""

    merged: MergedJob
    file: JobFile | None
    staging_prefix: str | None

    @property
    def body(self) -> dict[str, Any]:
        return self.merged.body


def locate(
    problems: Sequence[tuple[tuple[str | int, ...], str]], merged: MergedJob, file: JobFile | None
) -> list[Problem]:
    """Say where each rule violation comes from: the flag that set the value, else the file's line."""
    out: list[Problem] = []
    for path, message in problems:
        text = format_path(path)
        source = merged.origin_of(text)
        out.append(Problem(message, text, source) if source or file is None else file.problem(path, message))
    return out


# Paths whose flag values the rules (or local_package_problems) already check in their own terms.
RULE_CHECKED = ("$.jobId", "$.labels", "$.trainingInput.packageUris")


def flag_schema_problems(merged: MergedJob, skip: set[str]) -> list[Problem]:
    """Schema violations in values that came from flags or the environment (``--region US``, ``--module-name
    a/b.py``): the file's own values were checked when it was read, but flag values only meet the schema here."""
    return [
        Problem(problem.message, problem.path, merged.origin_of(problem.path))
        for problem in schema_problems(JobFile(name="", data=merged.body))
        if merged.origin_of(problem.path)
        and problem.path not in skip
        and not problem.path.startswith(RULE_CHECKED)
    ]


def kms_problems(given: Mapping[str, Any]) -> list[Problem]:
    """A short --kms-key needs its key ring and location (gcloud refuses it otherwise, and so would the service)."""
    key = given.get("kms_key")
    if not key:
        if any(given.get(k) for k in ("kms_keyring", "kms_location", "kms_project")):
            return [Problem("--kms-keyring/--kms-location/--kms-project need --kms-key", "$", "--kms-key")]
        return []
    missing = [f"--kms-{k}" for k in ("keyring", "location") if not given.get(f"kms_{k}")]
    if str(key).startswith("projects/") or not missing:
        return []
    message = (
        f"a short key name needs {' and '.join(missing)} (or pass the full name "
        "projects/P/locations/L/keyRings/R/cryptoKeys/KEY)"
    )
    return [Problem(message, "$.trainingInput.encryptionConfig.kmsKeyName", "--kms-key")]


def project_problems(req: TrainingRequest) -> list[Problem]:
    """The project becomes part of every request URL: check it before anything is built or uploaded (one found
    later through Application Default Credentials is checked where it is read)."""
    for source in ("--project", "CLOUDSDK_CORE_PROJECT", "GOOGLE_CLOUD_PROJECT"):
        if value := req.project if source == "--project" else req.env.get(source):
            problem = url_value_problem("project", value)
            return [Problem(problem, "$", source)] if problem else []
    return []


def local_package_problems(req: TrainingRequest, prefix: str | None, *, into_image: bool) -> list[Problem]:
    """Local inputs that are missing or unusable, and local packages with nowhere to go (``into_image``: they go
    into the image ``vertex.buildImage`` builds, and are not staged)."""
    found: list[Problem] = []
    if problem := req.package_path and package_dir_problem(Path(req.package_path), req.package_path):
        found.append(Problem(problem, "$", "--package-path"))
    names: dict[str, str] = {}
    for local in req.local_packages:
        p = Path(local)
        if not p.is_file():
            found.append(
                Problem(f"{local}: no such file; give a local package file or a gs:// URI", "$", "--packages")
            )
            continue
        if p.name in names:
            message = f"{local} and {names[p.name]} have the same file name {p.name!r}; rename one"
            found.append(Problem(message, "$", "--packages"))
        names[p.name] = local
    if (req.package_path or req.local_packages) and not prefix and not into_image:
        message = "local packages need a staging location: pass --staging-bucket gs://BUCKET or --job-dir gs://BUCKET/PATH"
        found.append(Problem(message, "$", "--packages/--package-path"))
    return found


def prepare(req: TrainingRequest, file: JobFile | None = None) -> PreparedJob:
    """Load, merge and check a training request (InvalidJobError with every problem found), the packages to
    stage as placeholders. ``file``: the config already read (and found valid) for the same request."""
    file_problems: list[Problem] = []
    if file is None and req.config:
        file, file_problems = check_job_file(req.config)
    file_data = file.data if file else None
    job_dir = req.flags.given.get("job_dir") or as_dict(as_dict(file_data).get("trainingInput")).get("jobDir")
    if isinstance(job_dir, str) and gcs_url_problem(job_dir, "jobDir"):
        job_dir = None  # check_job reports it with its file line, together with every other problem
    prefix = staging_prefix(req.staging_bucket, req.flags.job_id, job_dir)
    local_names = [f"{Path(req.package_path).resolve().name}-0.0.0.tar.gz"] if req.package_path else []
    local_names += [Path(p).name for p in req.local_packages]
    # The packageUris the flags will produce. Without a staging location the local packages still count:
    # local_package_problems reports the missing location, and the "needs packages" rule must not fire on top.
    staged = [*req.remote_packages, *(f"{prefix or ''}{PENDING}/{n}" for n in local_names)]
    uris = staged if req.has_package_flags else None
    merged = merge(
        file_data, req.flags, env=req.env, package_uris=uris, project=project_from_flags(req.project, req.env)
    )
    # merge and the rules are total over schema-invalid files: whatever the file holds, every problem of the
    # flags, the packages and the KMS key is reported together with the file's own.
    rule_problems = locate(check_job(merged.body, target_rules=req.target_rules), merged, file)
    # packages built into an image are not staged (docs/containers.md)
    into_image = as_dict(merged.body.get("vertex")).get("buildImage") is True
    problems = (
        project_problems(req)
        + local_package_problems(req, prefix, into_image=into_image)
        + kms_problems(req.flags.given)
        + flag_schema_problems(merged, skip={p.path for p in rule_problems})
        + rule_problems
    )
    _raise_all(file_problems, problems)
    return PreparedJob(merged=merged, file=file, staging_prefix=prefix)


def check_config_file(
    path: str, complete: bool = False, target_rules: Callable[[Any], TargetRules | None] | None = None
) -> JobFile:
    """Check a config file on its own against the schema and the rules (InvalidJobError with every problem at its
    file line); ``target_rules``: given the file's data, its engine's rules (None: ml v1's)."""
    file, file_problems = check_job_file(path)
    rules = target_rules(file.data) if target_rules is not None else None
    found = check_job(file.data, complete=complete, target_rules=rules)
    _raise_all(file_problems, locate(found, MergedJob(body=file.data), file))
    return file


def _raise_all(file_problems: list[Problem], problems: list[Problem]) -> None:
    """InvalidJobError with the file's problems, then the others that are not at or inside one of them."""
    reported = {p.path for p in file_problems}
    inside = [any(q.path == r or q.path.startswith((r + ".", r + "[")) for r in reported) for q in problems]
    if problems := file_problems + [q for q, known in zip(problems, inside, strict=True) if not known]:
        raise InvalidJobError(problems)
