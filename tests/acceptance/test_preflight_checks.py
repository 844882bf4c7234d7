"""`mlsubmit preflight` and the preflight of `training --target vertex` against the loopback fakes (every read
checked against its discovery document): each check's ok / refused / warning / could-not-check path, the
``--format json`` shape, and a refused preflight that uploads and creates nothing
(docs/getting-jobs-to-start.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.lifecycle_support import point_cli_at, run_cli
from tests.fakes.preflight_apis import AGENT

REGION = "us-central1"
ACCOUNT = "trainer@p.iam.gserviceaccount.com"
KEY = f"projects/p/locations/{REGION}/keyRings/ring/cryptoKeys/key"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"
JOB = [
    "--region", REGION, "--packages", "gs://pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task",
    "--executor-image-uri", IMAGE, "--job-dir", "gs://out/run1", "--scale-tier", "custom",
    "--master-machine-type", "n1-standard-8", "--master-accelerator", "type=nvidia-tesla-t4,count=2",
]  # fmt: skip


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis) -> None:
    point_cli_at(monkeypatch, fake_apis)


def preflight(*extra: str) -> tuple[int, dict[str, dict[str, str]], Any]:
    """Run `mlsubmit preflight --format json`; (exit code, checks by name, the whole report)."""
    result = run_cli(["preflight", "my_job", *JOB, *extra, "--format", "json"])
    report = json.loads(result.stdout)
    assert result.exit_code == (0 if report["ok"] else 2), result.stderr
    return result.exit_code, {c["name"]: c for c in report["checks"]}, report


def status_of(checks: dict[str, dict[str, str]], prefix: str) -> str:
    (found,) = [c for name, c in checks.items() if name.startswith(prefix)]
    return found["status"]


def test_json_report_shape_and_every_check_ok(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.add_quota(T4, 4)
    fake_apis.preflight.add_quota(CPUS, 24)
    code, checks, report = preflight("--service-account", ACCOUNT, "--kms-key", KEY)
    assert code == 0 and report["ok"] is True
    assert set(report) == {"ok", "checks"}
    assert all(set(c) == {"name", "status", "message"} for c in report["checks"])
    assert {c["status"] for c in report["checks"]} == {"ok"}, report
    assert list(checks) == [
        f"region {REGION}",
        f"NVIDIA_TESLA_T4 in {REGION}",
        "Vertex AI API",
        "job dir bucket gs://out",
        f"service account {ACCOUNT}",
        f"encryption key {KEY}",
        f"quota {CPUS} in {REGION}",
        f"quota {T4} in {REGION}",
    ]
    assert fake_apis.custom_job_bodies == [] and fake_apis.uploads == []


def test_reads_are_read_only_and_the_token_goes_only_to_its_host(fake_apis: FakeGoogleApis) -> None:
    preflight("--service-account", ACCOUNT, "--kms-key", KEY)
    methods = {(r.method, r.path.rsplit(":", 1)[-1] if ":" in r.path else "") for r in fake_apis.requests}
    # the only POST is iam's testIamPermissions (a read by its nature)
    assert {m for m in methods if m[0] != "GET"} == {("POST", "testIamPermissions")}
    assert all(r.headers.get("authorization") == "Bearer fake" for r in fake_apis.requests)


def test_storage_emulator_reads_go_there_without_the_token(
    fake_apis: FakeGoogleApis, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeGoogleApis() as emulator:
        emulator.preflight.set_bucket("out", "EUROPE-WEST4")
        monkeypatch.delenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE")
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emulator.url.rstrip("/"))
        code, checks, _ = preflight()
        assert code == 2 and checks["job dir bucket gs://out"]["status"] == "refused"
        assert emulator.requests and all("authorization" not in r.headers for r in emulator.requests)
    assert not fake_apis.requests_matching(None, r"^/storage/")
    assert all(r.headers.get("authorization") == "Bearer fake" for r in fake_apis.requests)


def test_disabled_api_is_refused(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.update(lambda s: s.services.update({"aiplatform.googleapis.com": "DISABLED"}))
    code, checks, _ = preflight()
    assert code == 2 and checks["Vertex AI API"]["status"] == "refused"
    assert "gcloud services enable aiplatform.googleapis.com" in checks["Vertex AI API"]["message"]


def test_api_read_denied_is_could_not_check(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject_permission_denied("serviceusage.services.get", "GET", r"^/v1/projects/p/services/", None)
    code, checks, _ = preflight()
    assert code == 0 and checks["Vertex AI API"]["status"] == "unchecked"
    assert "the caller may not look" in checks["Vertex AI API"]["message"]


@pytest.mark.parametrize(
    ("location", "kind", "extra", "status", "words"),
    [
        ("US-CENTRAL1", "region", {}, "ok", "in us-central1"),
        ("EUROPE-WEST4", "region", {}, "refused", "not the job's region us-central1"),
        ("EU", "multi-region", {}, "refused", "does not hold us-central1"),
        ("US", "multi-region", {}, "warning", "which holds us-central1"),
        ("NAM4", "dual-region", {}, "warning", "dual-region NAM4"),
        (
            "US",
            "dual-region",
            {"customPlacementConfig": {"dataLocations": ["US-EAST1", "US-WEST1"]}},
            "refused",
            "",
        ),
    ],
)
def test_job_dir_bucket_location(
    fake_apis: FakeGoogleApis, location: str, kind: str, extra: dict[str, Any], status: str, words: str
) -> None:
    fake_apis.preflight.set_bucket("out", location, kind, **extra)
    code, checks, _ = preflight()
    found = checks["job dir bucket gs://out"]
    assert found["status"] == status and words in found["message"]
    assert code == (2 if status == "refused" else 0)


def test_missing_bucket_is_refused_and_denied_read_is_could_not_check(fake_apis: FakeGoogleApis) -> None:
    fake_apis.remove_bucket("out")
    _, checks, _ = preflight()
    assert checks["job dir bucket gs://out"]["status"] == "refused"
    assert "does not exist" in checks["job dir bucket gs://out"]["message"]
    fake_apis.storage.missing_buckets.clear()
    fake_apis.inject("GET", r"^/storage/v1/b/out$", 403)
    _, checks, _ = preflight()
    assert checks["job dir bucket gs://out"]["status"] == "unchecked"


def test_staging_bucket_without_write_is_refused_job_dir_only_warned(
    fake_apis: FakeGoogleApis, trainer: Path
) -> None:
    fake_apis.preflight.update(lambda s: s.bucket_permissions.update({"stage": set(), "out": set()}))
    argv = [a for a in JOB if a not in ("--packages", "gs://pkgs/trainer-0.1.tar.gz")]
    result = run_cli(
        ["preflight", "my_job", *argv, "--package-path", str(trainer), "--staging-bucket", "gs://stage",
         "--format", "json"]
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["staging bucket gs://stage"]["status"] == "refused"
    assert "the upload would fail" in checks["staging bucket gs://stage"]["message"]
    assert checks["job dir bucket gs://out"]["status"] == "warning"


@pytest.mark.parametrize(
    ("change", "status", "words"),
    [
        (lambda s: s.missing_accounts.add(ACCOUNT), "refused", "does not exist"),
        (lambda s: s.disabled_accounts.add(ACCOUNT), "refused", "is disabled"),
        (lambda s: s.no_act_as.add(ACCOUNT), "refused", "lacks iam.serviceAccounts.actAs"),
    ],
)
def test_service_account(fake_apis: FakeGoogleApis, change: Any, status: str, words: str) -> None:
    fake_apis.preflight.update(change)
    code, checks, _ = preflight("--service-account", ACCOUNT)
    found = checks[f"service account {ACCOUNT}"]
    assert code == 2 and found["status"] == status and words in found["message"]
    (sent,) = [r.json for r in fake_apis.requests_matching("POST", r":testIamPermissions$")] or [None]
    assert sent in (None, {"permissions": ["iam.serviceAccounts.actAs"]})


def test_service_account_read_denied_is_could_not_check(fake_apis: FakeGoogleApis) -> None:
    fake_apis.inject("GET", r"/serviceAccounts/", 403)
    code, checks, _ = preflight("--service-account", ACCOUNT)
    assert code == 0 and checks[f"service account {ACCOUNT}"]["status"] == "unchecked"


@pytest.mark.parametrize(
    ("change", "key", "status", "words"),
    [
        (lambda s: s.keys.update({KEY: {"primary": {"state": "DISABLED"}}}), KEY, "refused", "DISABLED"),
        (lambda s: s.missing_keys.add(KEY), KEY, "refused", "does not exist"),
        (lambda s: s.key_policies.update({KEY: []}), KEY, "warning", "does not grant"),
    ],
)
def test_kms_key(fake_apis: FakeGoogleApis, change: Any, key: str, status: str, words: str) -> None:
    fake_apis.preflight.update(change)
    code, checks, _ = preflight("--kms-key", key)
    found = checks[f"encryption key {key}"]
    assert found["status"] == status and words in found["message"], found
    assert code == (2 if status == "refused" else 0)


def test_kms_policy_names_the_vertex_service_agent_from_the_project_number(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.update(lambda s: s.key_policies.update({KEY: []}))
    _, checks, _ = preflight("--kms-key", KEY)
    assert AGENT.split(":", 1)[1] in checks[f"encryption key {KEY}"]["message"]
    fake_apis.inject("GET", r":getIamPolicy$", 403)
    _, checks, _ = preflight("--kms-key", KEY)
    assert checks[f"encryption key {KEY}"]["status"] == "unchecked"


def test_quota_limit_below_request_is_refused_usage_only_warned(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.add_quota(T4, 1)
    code, checks, _ = preflight()
    assert code == 2 and checks[f"quota {T4} in {REGION}"]["status"] == "refused"
    assert "limit 1, the job needs 2" in checks[f"quota {T4} in {REGION}"]["message"]
    fake_apis.preflight.update(lambda s: s.quota.clear())
    fake_apis.preflight.add_quota(T4, 3)
    running = {
        "machineSpec": {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 2,
        }
    }
    fake_apis.add_custom_job(
        {"displayName": "other", "state": "JOB_STATE_RUNNING", "jobSpec": {"workerPoolSpecs": [running]}},
        project="p",
    )
    code, checks, _ = preflight()
    found = checks[f"quota {T4} in {REGION}"]
    assert code == 0 and found["status"] == "warning" and "running jobs use 2" in found["message"]


def test_running_tuning_jobs_count_their_parallel_trials(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.add_quota(T4, 3)
    machine = {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1}
    spec = {"workerPoolSpecs": [{"machineSpec": machine, "replicaCount": "1"}]}
    tuning = {
        "displayName": "study",
        "state": "JOB_STATE_RUNNING",
        "parallelTrialCount": 2,
        "trialJobSpec": spec,
    }
    fake_apis.add_tuning_job(tuning, project="p")
    code, checks, _ = preflight()
    found = checks[f"quota {T4} in {REGION}"]
    assert code == 0 and found["status"] == "warning" and "running jobs use 2" in found["message"]
    (listed,) = fake_apis.requests_matching("GET", r"/hyperparameterTuningJobs$")
    assert listed.query["filter"] == ['state="JOB_STATE_RUNNING"']


def test_quota_unreadable_or_unknown_is_could_not_check(fake_apis: FakeGoogleApis) -> None:
    code, checks, _ = preflight()  # the answer names no metric the job needs
    assert code == 0 and status_of(checks, f"quota {T4}") == "unchecked"
    fake_apis.inject("GET", r"/consumerQuotaMetrics$", 403)
    code, checks, _ = preflight()
    assert code == 0 and status_of(checks, f"quota {T4}") == "unchecked"


def test_accelerator_not_in_an_unconfirmed_row_is_a_warning() -> None:
    _, checks, _ = preflight(
        "--region", "europe-west1", "--master-accelerator", "type=nvidia-tesla-v100,count=1"
    )
    assert checks["NVIDIA_TESLA_V100 in europe-west1"]["status"] == "warning"
    assert "unconfirmed" in checks["NVIDIA_TESLA_V100 in europe-west1"]["message"]


def test_refused_submit_uploads_nothing_and_creates_nothing(fake_apis: FakeGoogleApis, trainer: Path) -> None:
    fake_apis.preflight.set_bucket("stage", "EUROPE-WEST4")
    argv = [a for a in JOB if a not in ("--packages", "gs://pkgs/trainer-0.1.tar.gz")]
    result = run_cli(
        ["training", "my_job", "--target", "vertex", *argv, "--package-path", str(trainer),
         "--staging-bucket", "gs://stage"]
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert "preflight: REFUSED: staging bucket gs://stage: in europe-west4" in result.stderr
    assert "nothing was uploaded or created" in result.stderr and "Traceback" not in result.stderr
    assert fake_apis.uploads == [] and fake_apis.uploaded_bytes == 0
    assert fake_apis.custom_job_bodies == [] and fake_apis.custom_jobs == {}


def test_refused_submit_json_prints_the_report(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.set_bucket("out", "EU", "multi-region")
    result = run_cli(["training", "my_job", "--target", "vertex", *JOB, "--format", "json"])
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["ok"] is False and any(c["status"] == "refused" for c in report["checks"])
    assert fake_apis.custom_job_bodies == []


def test_no_preflight_skips_it_and_dry_run_stays_offline_unless_asked(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.set_bucket("out", "EU", "multi-region")
    result = run_cli(["training", "my_job", "--target", "vertex", *JOB, "--no-preflight"])
    assert result.exit_code == 0, result.stderr
    assert len(fake_apis.custom_job_bodies) == 1
    fake_apis.clear_requests()
    result = run_cli(["training", "other", "--target", "vertex", *JOB, "--dry-run"])
    assert result.exit_code == 0 and fake_apis.requests == []
    result = run_cli(["training", "other", "--target", "vertex", *JOB, "--dry-run", "--preflight"])
    assert result.exit_code == 2 and "preflight: REFUSED: job dir bucket gs://out" in result.stderr
    assert fake_apis.requests and fake_apis.custom_job_bodies == [
        body for body in fake_apis.custom_job_bodies[:1]
    ]


def test_passing_preflight_is_quiet_and_the_job_is_created(fake_apis: FakeGoogleApis) -> None:
    result = run_cli(["training", "my_job", "--target", "vertex", *JOB])
    assert result.exit_code == 0, result.stderr
    assert not re.search(r"preflight: (ok|REFUSED)", result.stderr)
    assert "could not check" in result.stderr  # the quota answer names no metric
    assert len(fake_apis.custom_job_bodies) == 1
    assert fake_apis.requests_matching("GET", r"/services/aiplatform.googleapis.com$")


def test_passing_preflight_is_in_the_json_of_training(fake_apis: FakeGoogleApis) -> None:
    """`training --format json` carries the report `preflight --format json` prints, beside the job."""
    fake_apis.preflight.add_quota(T4, 4)
    fake_apis.preflight.add_quota(CPUS, 24)
    _code, _checks, alone = preflight()
    result = run_cli(["training", "my_job", "--target", "vertex", *JOB, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    job = json.loads(result.stdout)
    assert job["preflight"] == alone and alone["ok"] is True and alone["checks"]
    assert f"/locations/{REGION}/customJobs/" in job["name"] and len(fake_apis.custom_job_bodies) == 1
    text = run_cli(["training", "other", "--target", "vertex", *JOB])  # text output: jobId and state only
    assert text.exit_code == 0 and "preflight" not in text.stdout


def container_job(image: str) -> list[str]:
    return [
        "--region", REGION, "--job-dir", "gs://out/run1", "--scale-tier", "custom",
        "--master-machine-type", "n1-standard-8", "--master-image-uri", image,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("pushed", "fault", "status"), [(True, None, "ok"), (False, None, "refused"), (True, 403, "unchecked")]
)
def test_custom_image(fake_apis: FakeGoogleApis, pushed: bool, fault: int | None, status: str) -> None:
    image = fake_apis.preflight.image("proj/trainer", "v1")
    if not pushed:
        fake_apis.preflight.update(lambda s: s.images.clear())
    if fault:
        fake_apis.inject("HEAD", r"^/v2/", fault)
    result = run_cli(["preflight", "my_job", *container_job(image), "--format", "json"])
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks[f"image {image}"]["status"] == status, checks
    assert result.exit_code == (2 if status == "refused" else 0)
    heads = fake_apis.requests_matching("HEAD", r"^/v2/proj/trainer/manifests/v1$")
    assert heads and all("authorization" not in r.headers for r in heads)  # not a Google registry: no token


def test_text_output_is_one_line_per_check_on_stdout(fake_apis: FakeGoogleApis) -> None:
    fake_apis.preflight.set_bucket("out", "US", "multi-region")
    result = run_cli(["preflight", "my_job", *JOB])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(
        re.match(r"preflight: (ok|REFUSED|WARNING|could not check): ", line) for line in lines
    )
    assert (
        "preflight: WARNING: job dir bucket gs://out: in multi-region US, which holds us-central1"
        in result.stdout
    )


def test_export_does_not_offer_the_preflight() -> None:
    result = run_cli(["export", "--format", "customjob", "j", "--no-preflight"])
    assert result.exit_code == 2 and "No such option '--no-preflight'" in result.stderr
