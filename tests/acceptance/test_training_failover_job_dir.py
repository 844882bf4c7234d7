"""`training --target vertex --build-image --job-dir gs://acme-{region}/out --fallback-regions r2`
(docs/getting-jobs-to-start.md): Vertex AI wants a job's buckets in its region, so each failover candidate fills
``{region}`` in with its own: checked offline, shown per candidate in the dry run, sent per candidate, and each
candidate's bucket read by the preflight against its own region."""

from __future__ import annotations

from pathlib import Path

from tests.acceptance.test_training_build_image_failover import QUOTA, dry_run, pinned
from tests.fakes.api_server import VERTEX_CREATE
from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild

A, B = "us-central1", "us-east4"
OUT = "gs://acme-{region}/out"


def training(cloud_build: FakeCloudBuild, job_dir: str = OUT, *more: str) -> list[str]:
    return ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--job-dir", job_dir,
            "--target", "vertex", "--region", A, "--build-image", "--builder", "cloud-build",
            "--output-image-uri", f"127.0.0.1:{cloud_build.port}/p/{{region}}/trainer", "--fallback-regions", B,
            *more]  # fmt: skip


def job_dir_of(body: dict[str, object]) -> object:
    spec = body["jobSpec"]
    assert isinstance(spec, dict)
    return spec["baseOutputDirectory"]["outputUriPrefix"]


def in_region(cloud_build: FakeCloudBuild, *regions: str) -> None:
    for region in regions:
        cloud_build.storage.bucket_fields[f"acme-{region}"] = {
            "location": region.upper(),
            "locationType": "region",
        }


def test_each_candidate_is_sent_its_own_job_dir_as_the_dry_run_shows(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    plan = dry_run(training(cloud_build))
    assert [job_dir_of(c["body"]) for c in plan["candidates"]] == [
        "gs://acme-us-central1/out",
        "gs://acme-us-east4/out",
    ]
    assert job_dir_of(plan["job"]) == "gs://acme-us-central1/out"
    in_region(cloud_build, A, B)
    cloud_build.script_region(A, create_error=(429, QUOTA))
    cloud_build.script_region(B, ["JOB_STATE_RUNNING"])
    result = run_cli(training(cloud_build))
    assert result.exit_code == 0, result.stderr
    creates = cloud_build.requests_matching("POST", VERTEX_CREATE)
    assert len(creates) == 2
    sent = {r.path.split("/")[5]: r.json for r in creates}
    for candidate in plan["candidates"]:
        assert sent[candidate["region"]] == pinned(candidate["body"], cloud_build.stored_builds)
    assert job_dir_of(sent[B]) == "gs://acme-us-east4/out"
    # the preflight read each candidate's bucket
    read = {r.path for r in cloud_build.requests_matching("GET", r"^/storage/v1/b/[^/]+$")}
    assert read >= {"/storage/v1/b/acme-us-central1", "/storage/v1/b/acme-us-east4"}


def test_a_candidates_bucket_in_another_region_is_refused_by_the_preflight_before_anything_is_made(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    in_region(cloud_build, A)  # acme-us-east4 answers us-central1, the fake's default
    result = run_cli(training(cloud_build))
    assert result.exit_code != 0
    assert "candidate 1 (us-east4): job dir bucket gs://acme-us-east4" in result.stderr
    assert "Traceback" not in result.output
    assert not cloud_build.requests_matching("POST", VERTEX_CREATE) and not cloud_build.build_bodies


def refused(args: list[str]) -> str:
    """The one error line of a run refused before any request (exit 2)."""
    result = run_cli(args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    return line


def job_dir_in_file(cloud_build: FakeCloudBuild, legacy_project: Path, job_dir: str) -> list[str]:
    """The failover command line with the job dir written in the config file (a YAML scalar) instead of a flag."""
    config = legacy_project / "legacy.yaml"
    config.write_text(
        config.read_text().replace("trainingInput:\n", f"trainingInput:\n  jobDir: {job_dir}\n", 1)
    )
    return [a for a in training(cloud_build) if a not in ("--job-dir", OUT)]


def test_a_fixed_job_dir_is_refused_with_the_way_out(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    line = refused(training(cloud_build, "gs://bkt/out"))
    assert "the job's jobDir gs://bkt/out is for us-central1; give it its own jobDir in us-east4" in line
    assert line.endswith(
        "or write {region} in the job's (gs://BUCKET-{region}/PATH) for each candidate to fill in its own"
    )
    assert not cloud_build.requests


def test_the_file_job_dir_takes_the_placeholder_too(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    plan = dry_run(job_dir_in_file(cloud_build, legacy_project, OUT))
    assert [job_dir_of(c["body"]) for c in plan["candidates"]] == [
        "gs://acme-us-central1/out",
        "gs://acme-us-east4/out",
    ]


def test_the_staging_bucket_takes_the_placeholder_and_each_candidate_stages_in_its_own(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    args = ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--target", "vertex",
            "--region", A, "--staging-bucket", "gs://stage-{region}", "--fallback-regions", B]  # fmt: skip
    plan = dry_run(args)
    assert sorted(plan["uploads"]) == ["stage-us-central1", "stage-us-east4"]
    cloud_build.storage.bucket_fields["stage-us-east4"] = {"location": "US-EAST4", "locationType": "region"}
    cloud_build.script_region(A, create_error=(429, QUOTA))
    cloud_build.script_region(B, ["JOB_STATE_RUNNING"])
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    sent = {r.path.split("/")[5]: r.json for r in cloud_build.requests_matching("POST", VERTEX_CREATE)}
    assert sent == {c["region"]: c["body"] for c in plan["candidates"]}
    uris = [b["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"][0] for b in sent.values()]
    assert [u.split("/")[2] for u in uris] == ["stage-us-central1", "stage-us-east4"]
    assert {f"gs://{u.bucket}/{u.name}" for u in cloud_build.uploads} == set(uris)


def test_other_placeholders_and_ml_v1_are_refused_with_one_line(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    line = refused(training(cloud_build, "gs://acme-{region}/{zone}"))
    assert line.endswith("{region} is the only placeholder it may hold (each failover candidate's region)")
    ml = [
        "training",
        "j1",
        "--config",
        "legacy.yaml",
        "--package-path",
        "trainer",
        "--job-dir",
        OUT,
        "--region",
        A,
    ]
    assert refused(ml) == (
        f"ERROR: --job-dir: $: jobDir {OUT}: {{region}} is filled in with each failover candidate's region, and "
        "only Vertex AI jobs (--target vertex) fail over: write the region itself"
    )
    assert not cloud_build.requests


def test_a_hostile_job_dir_in_the_file_is_said_in_one_bounded_line(
    cloud_build: FakeCloudBuild, legacy_project: Path
) -> None:
    hostile = '"gs://acme-{region}/' + "\\x1b[2J{zone}" * 500 + '"'
    line = refused(job_dir_in_file(cloud_build, legacy_project, hostile))
    assert line.startswith("ERROR: legacy.yaml:") and "\x1b" not in line and len(line) < 400
    assert line.endswith("{region} is the only placeholder it may hold (each failover candidate's region)")
