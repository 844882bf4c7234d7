"""Parity of the full submit with the reference: build, stage and create, gcloud 528 vs mlsubmit.

Each command line runs twice, from two copies of the same directory: through the real gcloud against one FakeGoogleApis
(which answers its Cloud Storage uploads), and through `mlsubmit training` against another FakeGoogleApis for
both the ml API and storage (STORAGE_EMULATOR_HOST points mlsubmit's storage client at it). Two servers, so neither
tool sees the other's staged objects. Compared: the job bodies in meaning (only the sha256 folder of built
packages may differ: gcloud's sdist embeds timestamps), the staged object names, the hash rule, and the modules
inside built sdists. mlsubmit runs with `--staging-layout gcloud`, gcloud's per-job layout, which this compares
name for name; its default shared layout differs from gcloud's on purpose.

Deliberate differences are not parity cases; each has its own test at the end saying what differs and why.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.compare import HASH_PLACEHOLDER, normalize_job_body
from tests.fakes.early import EARLY_WORKERS, Start, early
from tests.fakes.gcloud_oracle import GcloudRun, requires_gcloud, run_gcloud_batch
from tests.fakes.storage_api import Upload

pytestmark = [requires_gcloud, pytest.mark.gcloud]

PROJECT = "parityproj"
BKT = "parity-bucket"
HASH_FOLDER = re.compile(r"/([0-9a-f]{64})/")

CUSTOM_CONFIG = """\
jobId: ignored_by_both
labels:
  team: research
trainingInput:
  scaleTier: CUSTOM
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  masterType: n1-standard-8
  masterConfig:
    diskConfig: {bootDiskType: pd-ssd, bootDiskSizeGb: 120}
  workerType: n1-standard-8
  workerCount: 2
  scheduling: {maxRunningTime: 7200s}
  args: [--from-file, "1"]
"""

SETUP_PY = """\
from setuptools import setup

setup(name={name!r}, version={version!r}, packages=["trainer"])
"""

MODULE = ["--module-name", "trainer.task"]
RUNTIME = ["--runtime-version", "2.11", "--python-version", "3.7"]
DEP = "dist/dep-1.0.tar.gz"
OTHER = "dist/other-2.0.tar.gz"


@dataclass(frozen=True)
class Case:
    """One command line; ``tree`` says what its directory holds (see :func:`make_tree`)."""

    name: str
    job: str
    tree: str
    flags: tuple[str, ...]

    @property
    def builds(self) -> bool:
        return "--package-path" in self.flags


def case(name: str, job: str, tree: str, *flags: str) -> Case:
    return Case(name, job, tree, flags)


PARITY: list[Case] = [
    case("build_without_setup_py_job_dir", "s_build_jobdir", "plain",
         "--package-path", "trainer", *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}/runs/a"),
    case("build_without_setup_py_staging_bucket", "s_build_bucket", "plain",
         "--package-path", "trainer", *MODULE, *RUNTIME, "--staging-bucket", f"gs://{BKT}", "--", "--epochs", "3"),
    case("build_with_setup_py_job_dir", "s_setup_jobdir", "setup_py",
         "--package-path", "trainer", *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}/runs/b"),
    case("build_with_setup_py_staging_bucket", "s_setup_bucket", "setup_py",
         "--package-path", "./trainer/", *MODULE, "--runtime-version", "2.11", "--staging-bucket", f"gs://{BKT}",
         "--scale-tier", "basic-gpu"),
    case("local_packages_job_dir", "s_local", "plain",
         "--packages", f"{DEP},{OTHER}", *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}/runs/c"),
    case("local_and_gs_packages_staging_bucket", "s_mixed", "plain",
         "--packages", f"gs://{BKT}/deps/x-1.0.tar.gz,{DEP},gs://{BKT}/deps/y-2.0.tar.gz", *MODULE, *RUNTIME,
         "--staging-bucket", f"gs://{BKT}"),
    case("build_local_and_gs_packages", "s_all_kinds", "plain",
         "--package-path", "trainer", "--packages", f"{DEP},gs://{BKT}/deps/x-1.0.tar.gz", *MODULE, *RUNTIME,
         "--job-dir", f"gs://{BKT}/runs/d"),
    case("staging_bucket_wins_over_job_dir", "s_both", "plain",
         "--package-path", "trainer", *MODULE, *RUNTIME, "--staging-bucket", f"gs://{BKT}",
         "--job-dir", f"gs://{BKT}/runs/e"),
    case("job_dir_at_bucket_root_with_slash", "s_root", "plain",
         "--packages", DEP, *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}-root/"),
    case("job_dir_with_trailing_slash", "s_slash", "setup_py",
         "--package-path", "trainer", *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}/runs/f/"),
    case("config_and_flags_with_build", "s_config", "plain",
         "--config", "custom.yaml", "--package-path", "trainer", *MODULE, "--worker-count", "3",
         "--worker-machine-type", "n1-highmem-8", "--labels", "env=prod", "--job-dir", f"gs://{BKT}/runs/g",
         "--", "--lr", "0.1"),
    case("config_args_kept_local_packages", "s_config_pkgs", "plain",
         "--config", "custom.yaml", "--packages", f"{OTHER},gs://{BKT}/deps/x-1.0.tar.gz", *MODULE,
         "--staging-bucket", f"gs://{BKT}", "--service-account", "t@parityproj.iam.gserviceaccount.com"),
]  # fmt: skip

# Deliberate differences: run through both tools too, but compared by their own tests below.
SUBPACKAGES = case("diff_subpackages", "d_subpkg", "subpackages",
                   "--package-path", "trainer", *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}/runs/h")  # fmt: skip
DASHED_NAME = case("diff_dashed_setup_name", "d_dashed", "dashed_setup_py",
                   "--package-path", "trainer", *MODULE, *RUNTIME, "--job-dir", f"gs://{BKT}/runs/i")  # fmt: skip
FILE_JOB_DIR = case("diff_job_dir_from_file", "d_file_jobdir", "plain",
                    "--config", "jobdir.yaml", "--package-path", "trainer", *MODULE)  # fmt: skip
DIFFERENCES = [SUBPACKAGES, DASHED_NAME, FILE_JOB_DIR]


def make_tree(directory: Path, kind: str) -> None:
    """A trainer folder, two local package files and the config files, in ``directory``."""
    trainer = directory / "trainer"
    trainer.mkdir(parents=True)
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("import trainer.util\nprint('training')\n")
    (trainer / "util.py").write_text("SEED = 7\n")
    if kind == "subpackages":
        (trainer / "models").mkdir()
        (trainer / "models" / "__init__.py").write_text("")
        (trainer / "models" / "net.py").write_text("LAYERS = 3\n")
    if kind == "setup_py":
        (directory / "setup.py").write_text(SETUP_PY.format(name="trainer", version="1.2"))
    if kind == "dashed_setup_py":
        (directory / "setup.py").write_text(SETUP_PY.format(name="My-Trainer", version="1.02"))
    (directory / "dist").mkdir()
    (directory / DEP).write_bytes(b"dep 1.0: a prebuilt package, identical bytes for both tools\n")
    (directory / OTHER).write_bytes(b"other 2.0: another prebuilt package\n" * 50)
    (directory / "custom.yaml").write_text(CUSTOM_CONFIG)
    (directory / "jobdir.yaml").write_text(
        f'trainingInput:\n  jobDir: gs://{BKT}/from-file\n  runtimeVersion: "2.11"\n'
    )


def make_trees(root: Path) -> Path:
    for c in [*PARITY, *DIFFERENCES]:
        make_tree(root / c.name, c.tree)
    return root


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_trees(tmp_path_factory.mktemp("parity-submit"))


@early
def submit_gcloud_runs(start: Start) -> dict[str, GcloudRun]:
    """Every command line through the real gcloud (one batch, started before the first test:
    tests/fakes/early.py), each in its own directory of a copy of the trees."""
    cases = [*PARITY, *DIFFERENCES]
    root = make_trees(start.tmp.mktemp("parity-submit-gcloud"))
    with FakeGoogleApis(project=PROJECT) as server:
        commands = [
            ["ai-platform", "jobs", "submit", "training", c.job, "--region", "us-central1", *c.flags]
            for c in cases
        ]
        runs = run_gcloud_batch(
            commands, server, cwd=[root / c.name for c in cases], workers=EARLY_WORKERS, base_env=start.env
        )
    return {c.name: run for c, run in zip(cases, runs, strict=True)}


@pytest.fixture(scope="module")
def gcloud_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GcloudRun]:
    return submit_gcloud_runs.result(tmp_path_factory)


@pytest.fixture(scope="module")
def mlsubmit_server() -> Iterator[FakeGoogleApis]:
    """mlsubmit's own loopback Google: ml v1 and the Cloud Storage JSON API."""
    with FakeGoogleApis(project=PROJECT) as server:
        yield server


@dataclass
class MlsubmitRun:
    exit_code: int
    stdout: str
    stderr: str
    body: dict[str, Any] | None
    uploads: list[Upload]


def run_mlsubmit(
    c: Case, server: FakeGoogleApis, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> MlsubmitRun:
    monkeypatch.chdir(directory)
    env = {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake-parity-token",
        "CLOUDSDK_CORE_PROJECT": PROJECT,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": server.url,
        "STORAGE_EMULATOR_HOST": server.url.rstrip("/"),
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
    }
    uploads_before = len(server.uploads)
    bodies_before = len(server.job_bodies)
    # gcloud's per-job staging layout, so the staged names compare one to one (the default shared layout is
    # tested in tests/acceptance/test_training_staging.py).
    result = run_cli(
        ["training", c.job, "--region", "us-central1", "--staging-layout", "gcloud", *c.flags], env=env
    )
    bodies = server.job_bodies[bodies_before:]
    assert len(bodies) <= 1
    return MlsubmitRun(
        result.exit_code,
        result.stdout,
        result.stderr,
        bodies[0] if bodies else None,
        server.uploads[uploads_before:],
    )


def staged_names(uploads: list[Upload]) -> list[tuple[str, str]]:
    """(folder without the hash, file name) of each upload, in order."""
    return [
        (HASH_FOLDER.sub(f"/{HASH_PLACEHOLDER}/", posixpath.dirname(u.uri) + "/"), file_name(u))
        for u in uploads
    ]


def file_name(upload: Upload) -> str:
    return upload.name.rsplit("/", 1)[-1]


def sdist_members(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return sorted(tar.getnames())


def modules_in(data: bytes) -> list[str]:
    """The trainer's files inside an sdist, relative to its top folder."""
    return [m.split("/", 1)[1] for m in sdist_members(data) if "/trainer/" in m and m.endswith(".py")]


def assert_hash_folder_is_sha256_of_the_files(uploads: list[Upload]) -> None:
    """gcloud's rule (uploads.UploadFiles): one sha256 over every local file of the job, in order."""
    folders = {HASH_FOLDER.search(u.uri).group(1) for u in uploads}  # type: ignore[union-attr]
    assert folders == {hashlib.sha256(b"".join(u.data for u in uploads)).hexdigest()}


@pytest.mark.parametrize("c", PARITY, ids=[c.name for c in PARITY])
def test_submit_matches_gcloud(
    c: Case,
    workdir: Path,
    gcloud_runs: dict[str, GcloudRun],
    mlsubmit_server: FakeGoogleApis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    theirs = gcloud_runs[c.name]
    assert theirs.returncode == 0, f"gcloud failed: {theirs.stderr}"
    ours = run_mlsubmit(c, mlsubmit_server, workdir / c.name, monkeypatch)
    assert ours.exit_code == 0, ours.stderr
    assert ours.body is not None

    # The bodies mean the same; without a build the hash folder is the same too (same bytes, same rule).
    assert normalize_job_body(ours.body) == normalize_job_body(theirs.job_body)
    if not c.builds:
        assert normalize_job_body(ours.body, hash_placeholder=False) == normalize_job_body(
            theirs.job_body, hash_placeholder=False
        )

    # The same files are staged, under the same names, in the same order; the body points at them.
    assert staged_names(ours.uploads) == staged_names(theirs.uploads)
    assert ours.uploads, "every case stages at least one local package"
    staged_uris = [u.uri for u in ours.uploads]
    assert staged_uris == [u for u in ours.body["trainingInput"]["packageUris"] if u in staged_uris]
    assert [u.uri for u in theirs.uploads] == [
        u for u in theirs.job_body["trainingInput"]["packageUris"] if not u.startswith(f"gs://{BKT}/deps/")
    ]
    for run_uploads in (ours.uploads, theirs.uploads):
        assert_hash_folder_is_sha256_of_the_files(run_uploads)

    # Prebuilt packages go up byte for byte; built ones hold the same modules.
    assert [u.data for u in ours.uploads if not file_name(u).startswith("trainer-")] == [
        u.data for u in theirs.uploads if not file_name(u).startswith("trainer-")
    ]
    if c.builds:
        [our_sdist] = [u.data for u in ours.uploads if file_name(u).startswith("trainer-")]
        [their_sdist] = [u.data for u in theirs.uploads if file_name(u).startswith("trainer-")]
        assert modules_in(our_sdist) == modules_in(their_sdist) != []

    # Output like gcloud's: the job on stdout, the confirmation on stderr.
    assert ours.stdout == theirs.stdout == f"jobId: {c.job}\nstate: QUEUED\n"
    assert f"Job [{c.job}] submitted successfully." in ours.stderr
    assert f"Job [{c.job}] submitted successfully." in theirs.stderr


def test_the_comparison_sees_a_changed_file_name(gcloud_runs: dict[str, GcloudRun]) -> None:
    """Not vacuous: the hash placeholder hides only the hash folder, never the file name or the prefix."""
    body = gcloud_runs["build_without_setup_py_job_dir"].job_body
    renamed = {**body, "trainingInput": {**body["trainingInput"]}}
    renamed["trainingInput"]["packageUris"] = [
        u.replace("trainer-0.0.0", "trainer-0.0.1") for u in body["trainingInput"]["packageUris"]
    ]
    assert normalize_job_body(renamed) != normalize_job_body(body)
    moved = {**body, "trainingInput": {**body["trainingInput"]}}
    moved["trainingInput"]["packageUris"] = [
        u.replace("/runs/a/", "/runs/z/") for u in body["trainingInput"]["packageUris"]
    ]
    assert normalize_job_body(moved) != normalize_job_body(body)


# -- deliberate differences ---------------------------------------------------------------------------------


def test_gcloud_drops_subpackages_mlsubmit_keeps_them(
    workdir: Path,
    gcloud_runs: dict[str, GcloudRun],
    mlsubmit_server: FakeGoogleApis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """gcloud 528's jobs_prep.py: gcloud's generated setup.py has find_packages(include=['trainer']), so `trainer.models` is
    missing from its sdist and the job fails at import time. mlsubmit packages the whole tree."""
    theirs = gcloud_runs[SUBPACKAGES.name]
    assert theirs.returncode == 0, theirs.stderr
    ours = run_mlsubmit(SUBPACKAGES, mlsubmit_server, workdir / SUBPACKAGES.name, monkeypatch)
    assert ours.exit_code == 0, ours.stderr
    assert ours.body is not None

    assert normalize_job_body(ours.body) == normalize_job_body(theirs.job_body)  # same job, same file name
    [their_sdist] = [u.data for u in theirs.uploads]
    [our_sdist] = [u.data for u in ours.uploads]
    assert modules_in(their_sdist) == ["trainer/__init__.py", "trainer/task.py", "trainer/util.py"]
    assert modules_in(our_sdist) == [
        "trainer/__init__.py",
        "trainer/models/__init__.py",
        "trainer/models/net.py",
        "trainer/task.py",
        "trainer/util.py",
    ]


@pytest.mark.filterwarnings("ignore:Normalizing '1.02' to '1.2'")  # the normalisation this test is about
def test_a_setup_py_name_with_a_dash_is_named_by_each_tools_setuptools(
    workdir: Path,
    gcloud_runs: dict[str, GcloudRun],
    mlsubmit_server: FakeGoogleApis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sdist's file name comes from the setuptools that builds it: gcloud runs `setup.py sdist` with its
    bundled Python (setuptools >= 69.3 names sdists per PEP 625: `my_trainer`), mlsubmit runs the project's
    backend in the user's interpreter. With an older setuptools there, the names differ (`My-Trainer`); the
    service installs either. Both normalise the version (1.02 -> 1.2)."""
    from importlib.metadata import version

    from packaging.version import Version

    theirs = gcloud_runs[DASHED_NAME.name]
    assert theirs.returncode == 0, theirs.stderr
    ours = run_mlsubmit(DASHED_NAME, mlsubmit_server, workdir / DASHED_NAME.name, monkeypatch)
    assert ours.exit_code == 0, ours.stderr

    [their_upload] = theirs.uploads
    [our_upload] = ours.uploads
    pep625 = Version(version("setuptools")) >= Version("69.3")
    assert file_name(their_upload) == "my_trainer-1.2.tar.gz"
    assert file_name(our_upload) == ("my_trainer-1.2.tar.gz" if pep625 else "My-Trainer-1.2.tar.gz")


def test_a_job_dir_in_the_config_file_is_a_staging_location_for_mlsubmit_only(
    workdir: Path,
    gcloud_runs: dict[str, GcloudRun],
    mlsubmit_server: FakeGoogleApis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """gcloud looks for a staging location in the --staging-bucket and --job-dir flags only
    (jobs_prep.GetStagingLocation) and refuses a build when the job dir is in the file; mlsubmit reads the
    merged job, so the file's jobDir stages the packages, as the flag would."""
    theirs = gcloud_runs[FILE_JOB_DIR.name]
    assert theirs.returncode == 1
    assert "the `--staging-bucket` or `--job-dir` flag must be given" in theirs.stderr
    assert theirs.job_bodies == [] and theirs.uploads == []

    ours = run_mlsubmit(FILE_JOB_DIR, mlsubmit_server, workdir / FILE_JOB_DIR.name, monkeypatch)
    assert ours.exit_code == 0, ours.stderr
    assert ours.body is not None
    [uri] = ours.body["trainingInput"]["packageUris"]
    assert re.fullmatch(rf"gs://{BKT}/from-file/packages/[0-9a-f]{{64}}/trainer-0\.0\.0\.tar\.gz", uri), uri
    assert [u.uri for u in ours.uploads] == [uri]
