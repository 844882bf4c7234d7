"""From a typed training request to one validated Job body, before anything touches the network.

Flow (docs/architecture.md: data flows one way): config file -> merge with flags -> rules -> body. Everything the
service would refuse is found here and reported at once (InvalidJobError, exit 2).
"""

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
from mlsubmit.job.vocab import (
    gcs_url_problem,
    package_dir_problem,
    project_from_flags,
    staging_prefix,
)

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


def planned_uris(req: TrainingRequest, prefix: str | None, local_names: Sequence[str]) -> list[str] | None:
    """The packageUris the flags will produce: gs:// packages first, then the staged local ones."""
    if not req.has_package_flags:
        return None
    # Without a staging location the local packages still count as packages: local_package_problems
    # reports the missing location, and the "needs packages" rule must not fire on top of it.
    staged = [f"{prefix or ''}{PENDING}/{name}" for name in local_names]
    return [*req.remote_packages, *staged]


def locate(
    problems: Sequence[tuple[tuple[str | int, ...], str]], merged: MergedJob, file: JobFile | None
) -> list[Problem]:
    """Say where each rule violation comes from: the flag that set the value, else the file's line."""
    out: list[Problem] = []
    for path, message in problems:
        text = format_path(path)
        source = merged.origin_of(text)
        if source:
            out.append(Problem(message=message, path=text, file=source))
        elif file is not None:
            out.append(file.problem(path, message))
        else:
            out.append(Problem(message=message, path=text))
    return out


# Paths whose flag values the rules (or local_package_problems) already check in their own terms.
RULE_CHECKED = ("$.jobId", "$.labels", "$.trainingInput.packageUris")


def flag_schema_problems(merged: MergedJob, skip: set[str]) -> list[Problem]:
    """Schema violations in values that came from flags or the environment (``--region US``, ``--module-name
    a/b.py``): the file's own values were checked when it was read, but flag values only meet the schema here."""
    out: list[Problem] = []
    for problem in schema_problems(JobFile(name="", data=merged.body)):
        source = merged.origin_of(problem.path)
        if not source or problem.path in skip or problem.path.startswith(RULE_CHECKED):
            continue
        out.append(Problem(message=problem.message, path=problem.path, file=source))
    return out


def kms_problems(given: Mapping[str, Any]) -> list[Problem]:
    """A short --kms-key needs its key ring and location (gcloud refuses it otherwise, and so would the service)."""
    key = given.get("kms_key")
    parts = [given.get(k) for k in ("kms_keyring", "kms_location", "kms_project")]
    if not key:
        if any(parts):
            return [
                Problem(
                    "--kms-keyring/--kms-location/--kms-project need --kms-key", path="$", file="--kms-key"
                )
            ]
        return []
    if str(key).startswith("projects/"):
        return []
    missing = [
        f
        for f, v in (
            ("--kms-keyring", given.get("kms_keyring")),
            ("--kms-location", given.get("kms_location")),
        )
        if not v
    ]
    if missing:
        return [
            Problem(
                f"a short key name needs {' and '.join(missing)} (or pass the full name "
                "projects/P/locations/L/keyRings/R/cryptoKeys/KEY)",
                path="$.trainingInput.encryptionConfig.kmsKeyName",
                file="--kms-key",
            )
        ]
    return []


def project_problems(req: TrainingRequest) -> list[Problem]:
    """The project becomes part of every request URL: check it before anything is built or uploaded.

    A project found later through Application Default Credentials is checked where it is read.
    """
    for source, value in (
        ("--project", req.project),
        ("CLOUDSDK_CORE_PROJECT", req.env.get("CLOUDSDK_CORE_PROJECT")),
        ("GOOGLE_CLOUD_PROJECT", req.env.get("GOOGLE_CLOUD_PROJECT")),
    ):
        if value:
            problem = url_value_problem("project", value)
            return [Problem(problem, path="$", file=source)] if problem else []
    return []


def local_package_problems(
    req: TrainingRequest, prefix: str | None, *, into_image: bool = False
) -> list[Problem]:
    """Local inputs that are missing or unusable, and local packages with nowhere to go (``into_image``: they go
    into the image ``vertex.buildImage`` builds, and are not staged)."""
    found: list[Problem] = []
    if req.package_path:
        problem = package_dir_problem(Path(req.package_path), req.package_path)
        if problem:
            found.append(Problem(problem, path="$", file="--package-path"))
    names: dict[str, str] = {}
    for local in req.local_packages:
        p = Path(local)
        if not p.is_file():
            found.append(
                Problem(
                    f"{local}: no such file; give a local package file or a gs:// URI",
                    path="$",
                    file="--packages",
                )
            )
            continue
        if p.name in names:
            found.append(
                Problem(
                    f"{local} and {names[p.name]} have the same file name {p.name!r}; rename one",
                    path="$",
                    file="--packages",
                )
            )
        names[p.name] = local
    if (req.package_path or req.local_packages) and not prefix and not into_image:
        found.append(
            Problem(
                "local packages need a staging location: pass --staging-bucket gs://BUCKET or "
                "--job-dir gs://BUCKET/PATH",
                path="$",
                file="--packages/--package-path",
            )
        )
    return found


def prepare(
    req: TrainingRequest,
    local_names: Sequence[str] | None = None,
    package_uris: Sequence[str] | None = None,
    file: JobFile | None = None,
) -> PreparedJob:
    """Load, merge and check a training request. Raises InvalidJobError with every problem found.

    ``package_uris`` are the final staged URIs once the packages are built and hashed; before that, placeholders
    are derived from ``local_names`` (by default the --packages file names and ``DIRNAME-0.0.0.tar.gz``).
    """
    # ``file``: the config already read (and found valid) by an earlier prepare of the same request.
    file_problems: list[Problem] = []
    if file is None and req.config:
        file, file_problems = check_job_file(req.config)
    file_data = file.data if file else None
    file_ti = file_data.get("trainingInput") if isinstance(file_data, dict) else None
    job_dir = req.flags.given.get("job_dir") or (file_ti.get("jobDir") if isinstance(file_ti, dict) else None)
    if isinstance(job_dir, str) and gcs_url_problem(job_dir, "jobDir"):
        job_dir = None  # check_job reports it with its file line, together with every other problem
    prefix = staging_prefix(req.staging_bucket, req.flags.job_id, job_dir)
    if local_names is None:
        local_names = []
        if req.package_path:
            local_names.append(f"{Path(req.package_path).resolve().name}-0.0.0.tar.gz")
        local_names += [Path(p).name for p in req.local_packages]
    project = project_from_flags(req.project, req.env)
    # merge and the rules are total over schema-invalid files: whatever the file holds, every problem of the
    # flags, the packages and the KMS key is reported together with the file's own.
    merged, problems = _merge_and_check(req, file, file_data, prefix, local_names, package_uris, project)
    problems = project_problems(req) + problems
    if file_problems:
        problems = file_problems + [
            p for p in problems if not _under_any(p.path, {f.path for f in file_problems})
        ]
    if problems:
        raise InvalidJobError(problems)
    return PreparedJob(merged=merged, file=file, staging_prefix=prefix)


def check_config_file(
    path: str, complete: bool = False, target_rules: Callable[[Any], TargetRules | None] | None = None
) -> JobFile:
    """Read a config file and check it on its own against the schema and the rules, as ``training`` does.

    Raises InvalidJobError with every problem at its file line (ConfigFileError when the file cannot be read).
    ``complete=False``: what flags usually supply (region, packages, module, runtime) may be missing.
    ``target_rules``: given the file's data, the rules of the engine the job goes to (None, or it returning
    None: ml v1's; docs/vertex.md).
    """
    file, file_problems = check_job_file(path)
    rules = target_rules(file.data) if target_rules is not None else None
    found = check_job(file.data, complete=complete, target_rules=rules)
    rule_problems = locate(found, MergedJob(body=file.data), file)
    reported = {p.path for p in file_problems}
    problems = file_problems + [p for p in rule_problems if not _under_any(p.path, reported)]
    if problems:
        raise InvalidJobError(problems)
    return file


def _under_any(path: str, parents: set[str]) -> bool:
    """Whether ``path`` is one of ``parents`` or inside one (already reported, so not reported twice)."""
    return any(path == p or path.startswith((p + ".", p + "[")) for p in parents)


def _merge_and_check(
    req: TrainingRequest,
    file: JobFile | None,
    file_data: dict[str, Any] | None,
    prefix: str | None,
    local_names: Sequence[str],
    package_uris: Sequence[str] | None,
    project: str | None,
) -> tuple[MergedJob, list[Problem]]:
    merged = merge(
        file_data,
        req.flags,
        env=req.env,
        package_uris=list(package_uris)
        if package_uris is not None
        else planned_uris(req, prefix, local_names),
        project=project,
    )
    rule_problems = locate(check_job(merged.body, target_rules=req.target_rules), merged, file)
    vertex = merged.body.get("vertex")  # packages built into an image are not staged (docs/containers.md)
    into_image = isinstance(vertex, Mapping) and vertex.get("buildImage") is True
    problems = (
        local_package_problems(req, prefix, into_image=into_image)
        + kms_problems(req.flags.given)
        + flag_schema_problems(merged, skip={p.path for p in rule_problems})
        + rule_problems
    )
    return merged, problems
