"""`mlsubmit training` end to end: build, stage to gcp-storage-emulator, create on a loopback ml v1.

The ml API is FakeGoogleApis (schema-checked bodies, 409 on an existing id, injected faults); storage is the real
gcp-storage-emulator, whose socket counts the bytes it receives, so "nothing uploaded" is measured, not reported.
Most runs use click's CliRunner (the real command, in process); one runs `python -m mlsubmit` as a subprocess.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlsubmit import __version__
from tests.fakes.api_server import ML_CREATE, FakeGoogleApis
from tests.fakes.cli import run_cli, run_cli_process
from tests.fakes.gcs import BUCKET, GcsEmulator

PROJECT = "p"
TOKEN = "ya29.mlsubmit-acceptance-SECRET-token-7f3a9c"
SHA256_FOLDER = r"[0-9a-f]{64}"
RETRY_LINE = re.compile(r"^creating job \w+: (HTTP 503|connection error \(\w+\)); retrying in ", re.MULTILINE)
RECOVERED = "already made by an earlier attempt with the same definition"


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


Mlsubmit = Callable[..., Run]


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    """A trainer package with a subpackage and a data file, in a folder without setup.py."""
    package = tmp_path / "src" / "trainer"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('training')\n")
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "net.py").write_text("LAYERS = 3\n")
    (package / "vocab.txt").write_text("a\nb\n")
    return package


@pytest.fixture
def api_env(fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator) -> dict[str, str]:
    """Point mlsubmit at the loopback servers with a fake token (STORAGE_EMULATOR_HOST is set by the fixture)."""
    return {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN,
        "CLOUDSDK_CORE_PROJECT": PROJECT,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": fake_apis.url,
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
    }


@pytest.fixture
def mlsubmit(api_env: dict[str, str]) -> Mlsubmit:
    """Run `mlsubmit ARGS` in process; ``env`` adds to (or with None removes from) the fixture's environment."""

    def run(*args: str, env: dict[str, str | None] | None = None) -> Run:
        result = run_cli(args, env={**api_env, **(env or {})})
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


def training(job: str, trainer: Path, *flags: str) -> list[str]:
    """A valid `training` command line building ``trainer``; ``flags`` add staging and more."""
    return [
        "training", job, "--region", "us-central1", "--package-path", str(trainer),
        "--module-name", "trainer.task", "--runtime-version", "2.11", "--python-version", "3.7", *flags,
    ]  # fmt: skip


def staged(job: str, trainer: Path, *flags: str) -> list[str]:
    return training(job, trainer, "--staging-bucket", f"gs://{BUCKET}", *flags)


def assert_clean_failure(run: Run, exit_code: int = 1) -> None:
    assert run.exit_code == exit_code, run.output
    assert "Traceback" not in run.output
    assert "unexpected" not in run.stderr  # the exit-3 "this is a bug" path
    assert run.stderr.startswith("ERROR: ") or "\nERROR: " in run.stderr, run.stderr
    assert TOKEN not in run.output


def definition(job: dict[str, Any]) -> dict[str, Any]:
    """What a job is, without the fields its lifecycle moves (a read-back advances the fake's script)."""
    return {k: job.get(k) for k in ("jobId", "labels", "trainingInput", "createTime")}


def retry_lines(stderr: str) -> list[str]:
    return RETRY_LINE.findall(stderr)


# -- exactly once under faults -------------------------------------------------------------------------------


def test_two_503s_then_success_make_one_job_and_each_retry_is_logged(
    fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, api_env: dict[str, str], trainer: Path
) -> None:
    """Through the real entry point (`python -m mlsubmit`), as a CI job would run it."""
    fake_apis.inject("POST", ML_CREATE, 503, times=2)

    done = run_cli_process(staged("two_503s", trainer), env=api_env, cwd=trainer.parent)

    assert done.returncode == 0, done.stderr
    assert list(fake_apis.jobs) == ["two_503s"]
    assert len(fake_apis.job_bodies) == 3
    assert retry_lines(done.stderr) == ["HTTP 503", "HTTP 503"]
    assert "attempt 2 of 5" in done.stderr and "attempt 3 of 5" in done.stderr
    assert RECOVERED not in done.stderr
    assert done.stdout == "jobId: two_503s\nstate: QUEUED\n"
    assert "Traceback" not in done.stderr and TOKEN not in done.stdout + done.stderr


def test_a_503_after_the_job_was_made_is_resolved_to_that_job(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    fake_apis.inject("POST", ML_CREATE, 503, after=True)

    run = mlsubmit(*staged("lost_answer", trainer))

    assert run.exit_code == 0, run.output
    assert list(fake_apis.jobs) == ["lost_answer"]
    assert [r.status for r in fake_apis.requests_matching("POST", ML_CREATE)] == [503, 409]
    assert len(fake_apis.requests_matching("GET", r"/jobs/lost_answer$")) == 1  # read back and compared
    assert retry_lines(run.stderr) == ["HTTP 503"]
    assert RECOVERED in run.stderr
    assert "Job [lost_answer] submitted successfully." in run.stderr
    assert run.stdout == "jobId: lost_answer\nstate: QUEUED\n"


@pytest.mark.parametrize("after", [True, False], ids=["after_create", "before_create"])
def test_a_dropped_connection_makes_one_job_and_the_retry_is_logged(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path, after: bool
) -> None:
    """The HTTP library must not re-send the POST behind our back (it would come back 409 on "attempt 1")."""
    fake_apis.inject_drop("POST", ML_CREATE, after=after)

    run = mlsubmit(*staged("dropped", trainer))

    assert run.exit_code == 0, run.output
    assert list(fake_apis.jobs) == ["dropped"]
    assert len(fake_apis.job_bodies) == 2  # the dropped one and exactly one logged retry
    assert len(retry_lines(run.stderr)) == 1 and "connection error" in run.stderr
    assert (RECOVERED in run.stderr) is after
    assert run.stdout == "jobId: dropped\nstate: QUEUED\n"


def test_same_id_with_a_different_job_after_a_retry_is_an_error_and_the_job_is_untouched(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    """Our first attempt failed; meanwhile someone else made a different job with our id."""
    theirs = {
        "jobId": "contested",
        "trainingInput": {
            "region": "us-central1",
            "packageUris": ["gs://someone-else/trainer-1.0.tar.gz"],
            "pythonModule": "other.task",
            "runtimeVersion": "2.11",
        },
    }
    before = fake_apis.add_job(theirs, project=PROJECT)
    fake_apis.inject("POST", ML_CREATE, 503)

    run = mlsubmit(*staged("contested", trainer))

    assert_clean_failure(run)
    assert "already exists with a different definition" in run.stderr
    assert "'contested'" in run.stderr
    assert list(fake_apis.jobs) == ["contested"]  # nothing else created
    assert definition(fake_apis.jobs["contested"]) == definition(before)  # not overwritten
    assert [r.status for r in fake_apis.requests_matching("POST", ML_CREATE)] == [503, 409]
    assert "submitted successfully" not in run.stderr and run.stdout == ""


@pytest.mark.parametrize("same_definition", [True, False], ids=["identical_job", "different_job"])
def test_a_409_on_the_first_attempt_says_the_id_is_taken(
    mlsubmit: Mlsubmit,
    fake_apis: FakeGoogleApis,
    gcs_emulator: GcsEmulator,
    trainer: Path,
    same_definition: bool,
) -> None:
    """Without a retry the 409 cannot be ours: even an identical job is an earlier submission, not success."""
    first = mlsubmit(*staged("taken", trainer, *([] if same_definition else ["--", "--epochs", "1"])))
    assert first.exit_code == 0, first.output
    existing = fake_apis.jobs["taken"]
    fake_apis.clear_requests()

    run = mlsubmit(*staged("taken", trainer))

    assert_clean_failure(run)
    assert f"job id 'taken' is already taken in project {PROJECT}; choose another JOB id." in run.stderr
    assert RECOVERED not in run.stderr and run.stdout == ""
    assert [r.status for r in fake_apis.requests_matching("POST", ML_CREATE)] == [409]
    assert fake_apis.requests_matching("GET", r"/jobs/") == []
    assert fake_apis.jobs == {"taken": existing}


def test_503s_that_never_end_give_up_after_the_bounded_attempts(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    fake_apis.inject("POST", ML_CREATE, 503, times=None)

    run = mlsubmit(*staged("always_503", trainer))

    assert_clean_failure(run)
    assert len(fake_apis.job_bodies) == 5
    assert len(retry_lines(run.stderr)) == 4
    assert "creating job always_503 failed: HTTP 503 UNAVAILABLE: The service is currently unavailable." in (
        run.stderr
    )
    assert "check with `mlsubmit jobs describe always_503` before submitting again" in run.stderr
    assert fake_apis.jobs == {}


# -- the service's refusals -----------------------------------------------------------------------------------


def test_403_names_the_project_and_the_permission(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    """The injected 403 says nothing useful itself ("Injected error 403."): what to fix comes from mlsubmit."""
    fake_apis.inject("POST", ML_CREATE, 403)

    run = mlsubmit(*staged("denied", trainer))

    assert_clean_failure(run)
    assert "creating job denied failed: HTTP 403 PERMISSION_DENIED: Injected error 403." in run.stderr
    assert f"project {PROJECT} exists" in run.stderr
    assert "permission ml.jobs.create" in run.stderr
    assert len(fake_apis.job_bodies) == 1  # a refusal is not retried
    assert fake_apis.jobs == {} and run.stdout == ""


def test_the_services_permission_denied_message_is_shown(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    fake_apis.inject_permission_denied()

    run = mlsubmit(*staged("denied2", trainer), "--project", "otherproj")

    assert_clean_failure(run)
    assert "Permission 'ml.jobs.create' denied on resource 'projects/otherproj'" in run.stderr
    assert "check that project otherproj exists" in run.stderr
    assert fake_apis.requests_matching("POST", ML_CREATE)[0].path == "/v1/projects/otherproj/jobs"


def test_the_services_400_for_an_unknown_field_surfaces_cleanly(
    mlsubmit: Mlsubmit,
    fake_apis: FakeGoogleApis,
    gcs_emulator: GcsEmulator,
    trainer: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mlsubmit refuses unknown fields locally, so the body is doctored on its way to the (schema-checking) fake:
    this checks how a 400 the service really sends is reported."""
    from mlsubmit.services import ml as api
    from mlsubmit.services.backends import CreateResult

    create = api.MlJobs.create

    def doctored(self: api.MlJobs, body: dict[str, Any], job_id: str) -> CreateResult:
        return create(self, {**body, "trainingInput": {**body["trainingInput"], "bogusField": 1}}, job_id)

    monkeypatch.setattr(api.MlJobs, "create", doctored)

    run = mlsubmit(*staged("unknown_field", trainer))

    assert_clean_failure(run)
    assert "creating job unknown_field failed: HTTP 400 INVALID_ARGUMENT: Invalid JSON payload received." in (
        run.stderr
    )
    assert 'Unknown name "bogusField"' in run.stderr
    assert len(fake_apis.job_bodies) == 1 and fake_apis.jobs == {}


# -- nothing leaves the machine for an invalid job ---------------------------------------------------------

INVALID_CONFIG = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerCount: 2
  scheduling: {maxWaitTime: 60s}
"""


@pytest.mark.parametrize(
    "extra",
    [
        ["--config", "{config}"],
        ["--scale-tier", "custom"],
        ["--labels", "Bad Key=x"],
    ],
    ids=["invalid_config_file", "custom_tier_without_master_type", "invalid_label"],
)
def test_an_invalid_job_exits_2_uploads_nothing_and_calls_no_api(
    mlsubmit: Mlsubmit,
    fake_apis: FakeGoogleApis,
    gcs_emulator: GcsEmulator,
    trainer: Path,
    tmp_path: Path,
    extra: list[str],
) -> None:
    config = tmp_path / "invalid.yaml"
    config.write_text(INVALID_CONFIG)

    run = mlsubmit(*staged("invalid", trainer, *(a.format(config=config) for a in extra)))

    assert_clean_failure(run, exit_code=2)
    assert gcs_emulator.bytes_received() == 0
    assert gcs_emulator.requests == []
    assert fake_apis.requests == []
    assert gcs_emulator.objects() == {}


def test_the_invalid_config_errors_are_all_reported_with_their_lines(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path, tmp_path: Path
) -> None:
    config = tmp_path / "invalid.yaml"
    config.write_text(INVALID_CONFIG)

    run = mlsubmit(*staged("invalid", trainer, "--config", str(config)))

    assert run.exit_code == 2
    errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR: ")]
    assert any("workerType" in e and "invalid.yaml:4:" in e for e in errors), errors
    assert any("maxWaitTime" in e and "invalid.yaml:5:" in e for e in errors), errors


# -- staging ---------------------------------------------------------------------------------------------------


def test_the_build_is_staged_under_the_hash_folder_and_the_body_points_there(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    run = mlsubmit(*staged("staged_job", trainer, "--packages", f"gs://{BUCKET}/deps/dep-1.0.tar.gz"))

    assert run.exit_code == 0, run.output
    objects = gcs_emulator.objects()
    [(name, data)] = objects.items()
    assert re.fullmatch(rf"mlsubmit/packages/{SHA256_FOLDER}/trainer-0\.0\.0\.tar\.gz", name), name
    # The folder is the content's address: the sha256 of the uncompressed archive.
    assert name.split("/")[2] == hashlib.sha256(gzip.decompress(data)).hexdigest()
    uris = fake_apis.jobs["staged_job"]["trainingInput"]["packageUris"]
    assert uris == [f"gs://{BUCKET}/deps/dep-1.0.tar.gz", f"gs://{BUCKET}/{name}"]  # gs:// ones first
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = set(tar.getnames())
    assert {
        "trainer-0.0.0/setup.py",
        "trainer-0.0.0/trainer/task.py",
        "trainer-0.0.0/trainer/models/net.py",  # subpackages kept (gcloud drops them)
        "trainer-0.0.0/trainer/vocab.txt",
    } <= members
    assert gcs_emulator.bytes_received() >= len(data)


def test_resubmitting_unchanged_code_sends_zero_bytes(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    job_dir = ["--job-dir", f"gs://{BUCKET}/runs/exp1"]
    first = mlsubmit(*training("run_1", trainer, *job_dir))
    assert first.exit_code == 0, first.output
    assert gcs_emulator.bytes_received() > 0
    gcs_emulator.reset_counters()

    again = mlsubmit(*training("run_2", trainer, *job_dir))

    assert again.exit_code == 0, again.output
    assert gcs_emulator.bytes_received() == 0
    assert gcs_emulator.uploads() == []
    uris = {job: body["trainingInput"]["packageUris"] for job, body in fake_apis.jobs.items()}
    assert uris["run_1"] == uris["run_2"]
    assert re.fullmatch(
        rf"gs://{BUCKET}/mlsubmit/packages/{SHA256_FOLDER}/trainer-0\.0\.0\.tar\.gz", uris["run_1"][0]
    )

    # The measurement can see an upload: changed code goes up again, to a new hash folder.
    (trainer / "task.py").write_text("print('training v2')\n")
    gcs_emulator.reset_counters()
    changed = mlsubmit(*training("run_3", trainer, *job_dir))
    assert changed.exit_code == 0, changed.output
    assert gcs_emulator.bytes_received() > 0
    assert fake_apis.jobs["run_3"]["trainingInput"]["packageUris"] != uris["run_1"]


def test_submitting_again_after_a_refused_create_does_not_upload_again(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    """Same job id, so the same `gs://BUCKET/JOB/` prefix: the second run finds its package already staged."""
    fake_apis.inject("POST", ML_CREATE, 403)
    refused = mlsubmit(*staged("second_try", trainer))
    assert refused.exit_code == 1 and gcs_emulator.bytes_received() > 0
    gcs_emulator.reset_counters()

    run = mlsubmit(*staged("second_try", trainer))

    assert run.exit_code == 0, run.output
    assert gcs_emulator.bytes_received() == 0
    assert list(fake_apis.jobs) == ["second_try"]


# -- output, credentials, user agent ---------------------------------------------------------------------------


def test_text_output_is_like_gclouds(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    run = mlsubmit(*staged("text_out", trainer))

    assert run.exit_code == 0, run.output
    assert run.stdout == "jobId: text_out\nstate: QUEUED\n"
    assert run.stderr.startswith("Job [text_out] submitted successfully.\n")
    assert "mlsubmit jobs describe text_out" in run.stderr
    assert "mlsubmit jobs stream-logs text_out" in run.stderr


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_format_prints_the_created_job(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path, fmt: str
) -> None:
    run = mlsubmit(*staged("fmt_out", trainer), "--format", fmt)

    assert run.exit_code == 0, run.output
    job = json.loads(run.stdout) if fmt == "json" else yaml.safe_load(run.stdout)
    assert job["jobId"] == "fmt_out" and job["state"] == "QUEUED"
    assert job == fake_apis.jobs["fmt_out"]
    assert "Job [fmt_out] submitted successfully." in run.stderr


def test_the_user_agent_names_mlsubmit_and_its_version(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path
) -> None:
    run = mlsubmit(*staged("agent", trainer))

    assert run.exit_code == 0, run.output
    agents = {r.headers.get("user-agent", "") for r in fake_apis.requests}
    assert agents and all(a.startswith(f"mlsubmit/{__version__}") for a in agents), agents
    uploads = gcs_emulator.uploads()
    assert uploads and all(
        f"mlsubmit/{__version__}" in {k.lower(): v for k, v in u.headers.items()}.get("user-agent", "")
        for u in uploads
    )


def test_the_token_authorises_the_calls_but_is_never_printed(
    mlsubmit: Mlsubmit, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    closed_port = FakeGoogleApis().start()
    dead_url = closed_port.url
    closed_port.stop()

    fake_apis.inject("POST", ML_CREATE, 503, match=lambda r: r.json["jobId"] == "t_retried")
    fake_apis.inject("POST", ML_CREATE, 401, match=lambda r: r.json["jobId"] == "t_401")
    fake_apis.inject("POST", ML_CREATE, 403, match=lambda r: r.json["jobId"] == "t_403")
    fake_apis.inject("POST", ML_CREATE, 500, times=None, match=lambda r: r.json["jobId"] == "t_500")
    runs = {
        "ok": mlsubmit(*staged("t_ok", trainer), "--format", "json"),
        "retried": mlsubmit(*staged("t_retried", trainer)),
        "401": mlsubmit(*staged("t_401", trainer)),
        "403": mlsubmit(*staged("t_403", trainer)),
        "500": mlsubmit(*staged("t_500", trainer)),
        "token_file": mlsubmit(
            *staged("t_file", trainer), "--access-token-file", str(token_file),
            env={"CLOUDSDK_AUTH_ACCESS_TOKEN": None},
        ),
        "unreachable": mlsubmit(*staged("t_dead", trainer), "--api-endpoint", dead_url),
        "no_bucket": mlsubmit(*training("t_nobucket", trainer, "--staging-bucket", "gs://no-such-bucket")),
        "invalid": mlsubmit(*staged("t_invalid", trainer, "--scale-tier", "custom")),
        "usage": mlsubmit(*staged("t_usage", trainer, "--no-such-flag")),
    }  # fmt: skip

    exits = {name: run.exit_code for name, run in runs.items()}
    assert exits == {
        "ok": 0, "retried": 0, "401": 1, "403": 1, "500": 1, "token_file": 0,
        "unreachable": 1, "no_bucket": 1, "invalid": 2, "usage": 2,
    }, {name: run.stderr for name, run in runs.items()}  # fmt: skip
    for name, run in runs.items():
        assert TOKEN not in run.output, name
        assert "Bearer" not in run.output and "uthorization" not in run.output, name
        assert "Traceback" not in run.output, name
    assert "nothing is listening at" in runs["unreachable"].stderr  # the refused-connection budget (wire)
    assert "no-such-bucket" in runs["no_bucket"].stderr
    assert "access token is missing, invalid or expired" in runs["401"].stderr
    # Not vacuous: the token did reach the server, from the variable and from the file.
    auth = {
        r.json["jobId"]: r.headers.get("authorization")
        for r in fake_apis.requests_matching("POST", ML_CREATE)
    }
    assert auth["t_ok"] == auth["t_file"] == f"Bearer {TOKEN}"


# -- one retry policy: 408 and Retry-After -------------------------------------------------------------------


def test_a_408_on_create_is_retried_like_a_503(
    fake_apis: FakeGoogleApis, mlsubmit: Mlsubmit, trainer: Path
) -> None:
    fake_apis.inject("POST", ML_CREATE, 408, times=1)
    run = mlsubmit(*staged("after_408", trainer))
    assert run.exit_code == 0, run.output
    assert "creating job after_408: HTTP 408; retrying in 0.01s (attempt 2 of 5)" in run.stderr
    assert list(fake_apis.jobs) == ["after_408"]


def test_retry_after_replaces_the_backoff(
    fake_apis: FakeGoogleApis, mlsubmit: Mlsubmit, trainer: Path
) -> None:
    fake_apis.inject("POST", ML_CREATE, 429, times=1, headers={"Retry-After": "1"})
    run = mlsubmit(*staged("after_429", trainer))
    assert run.exit_code == 0, run.output
    assert "creating job after_429: HTTP 429; retrying in 1s (attempt 2 of 5)" in run.stderr
    assert list(fake_apis.jobs) == ["after_429"]
