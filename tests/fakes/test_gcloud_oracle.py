"""The oracle runs the real gcloud against the fake and captures exactly what it sent."""

from __future__ import annotations

import io
import os
import re
import shlex
import tarfile
from pathlib import Path

import pytest

from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.compare import normalize_job_body
from tests.fakes.fixtures import GcloudOracle
from tests.fakes.gcloud_oracle import requires_gcloud

pytestmark = [pytest.mark.gcloud, requires_gcloud]


def submit(args: str) -> list[str]:
    """``gcloud ai-platform jobs submit training ARGS`` as an argument list."""
    return ["ai-platform", "jobs", "submit", "training", *shlex.split(args)]


HASH = r"[0-9a-f]{64}"


def make_trainer(root: Path) -> None:
    (root / "trainer").mkdir()
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "task.py").write_text("print('training')\n")


def test_submit_bodies_uploads_and_attribution(gcloud_oracle: GcloudOracle, tmp_path: Path) -> None:
    make_trainer(tmp_path)
    remote, built = gcloud_oracle.batch(
        [
            submit(
                "j1 --region us-central1 --packages gs://bkt/p.tar.gz --module-name trainer.task -- --epochs 3"
            ),
            submit(
                "j2 --package-path trainer --module-name trainer.task --staging-bucket gs://bkt --scale-tier custom"
                " --master-machine-type n1-standard-8 --worker-count 2 --worker-machine-type n1-standard-4"
                " --labels team=ml"
            ),
        ],
        region="europe-west1",
    )
    assert remote.returncode == 0, remote.stderr
    assert remote.job_body == {
        "jobId": "j1",
        "trainingInput": {
            "args": ["--epochs", "3"],
            "enableWebAccess": False,  # gcloud always sends it
            "packageUris": ["gs://bkt/p.tar.gz"],
            "pythonModule": "trainer.task",
            "region": "us-central1",  # the flag beats CLOUDSDK_COMPUTE_REGION
        },
    }
    assert remote.uploads == []
    assert "jobId: j1" in remote.stdout and "state: QUEUED" in remote.stdout
    assert "Job [j1] submitted successfully." in remote.stderr
    assert {r.headers["authorization"] for r in remote.requests} == {"Bearer fake-oracle-token"}

    assert built.returncode == 0, built.stderr
    body = built.job_body
    assert body["trainingInput"]["region"] == "europe-west1"  # from CLOUDSDK_COMPUTE_REGION
    assert body["trainingInput"]["workerCount"] == "2"  # int64 as a JSON string
    (uri,) = body["trainingInput"]["packageUris"]
    assert re.fullmatch(rf"gs://bkt/j2/{HASH}/trainer-0\.0\.0\.tar\.gz", uri)
    (upload,) = built.uploads
    assert upload.uri == uri and upload.upload_type == "multipart"
    with tarfile.open(fileobj=io.BytesIO(upload.data), mode="r:gz") as tar:
        assert "trainer-0.0.0/trainer/task.py" in tar.getnames()
    assert normalize_job_body(body)["trainingInput"]["packageUris"] == [
        "gs://bkt/j2/<sha256>/trainer-0.0.0.tar.gz"
    ]
    # Each run saw only its own requests.
    assert [r.path for r in remote.requests] == ["/v1/projects/myproj/jobs"]
    assert [r.path for r in built.requests] == ["/upload/storage/v1/b/bkt/o", "/v1/projects/myproj/jobs"]


def test_local_packages_upload_byte_exact_large_ones_resumably(
    gcloud_oracle: GcloudOracle, tmp_path: Path
) -> None:
    big = os.urandom(5 * 1024 * 1024 + 7)  # above apitools' 5 MiB resumable threshold
    small = b"not really a tarball\r\n--boundary\n"
    (tmp_path / "big-1.0.tar.gz").write_bytes(big)
    (tmp_path / "small-1.0.tar.gz").write_bytes(small)
    run = gcloud_oracle(
        submit(
            "j3 --region us-central1 --module-name trainer.task --job-dir gs://bkt/out"
            " --packages big-1.0.tar.gz,small-1.0.tar.gz,gs://bkt/remote.tar.gz"
        )
    )
    assert run.returncode == 0, run.stderr
    uploads = {u.name.rsplit("/", 1)[1]: u for u in run.uploads}
    assert uploads["big-1.0.tar.gz"].data == big and uploads["big-1.0.tar.gz"].upload_type == "resumable"
    assert (
        uploads["small-1.0.tar.gz"].data == small and uploads["small-1.0.tar.gz"].upload_type == "multipart"
    )
    uris = run.job_body["trainingInput"]["packageUris"]
    assert uris[0] == "gs://bkt/remote.tar.gz"  # gcloud lists gs:// packages first
    assert [re.sub(HASH, "H", u) for u in uris[1:]] == [
        "gs://bkt/out/packages/H/big-1.0.tar.gz",
        "gs://bkt/out/packages/H/small-1.0.tar.gz",
    ]
    assert run.job_body["trainingInput"]["jobDir"] == "gs://bkt/out"


def test_gcloud_against_faults_and_schema_errors(
    gcloud_oracle: GcloudOracle, fake_apis: FakeGoogleApis, tmp_path: Path
) -> None:
    fake_apis.inject(
        "POST", r"^/v1/projects/myproj/jobs$", 503, after=True, match=lambda r: r.json["jobId"] == "lost"
    )
    (tmp_path / "config.yaml").write_text("trainingInput:\n  bogusField: 1\n")
    base = "--region us-central1 --packages gs://bkt/p.tar.gz --module-name trainer.task"
    lost, unknown = gcloud_oracle.batch(
        [submit(f"lost {base}"), submit(f"unknown {base} --config config.yaml")]
    )
    # gcloud retries the create whose answer was lost, then fails on its own job with a conflict.
    assert lost.returncode == 1
    assert len(lost.job_bodies) == 2 and "lost" in fake_apis.jobs
    assert "A job with this id already exists." in lost.stderr
    # gcloud does not check config keys: the server's schema check is what refuses them.
    assert unknown.returncode == 1
    assert unknown.job_body["trainingInput"]["bogusField"] == 1
    assert "Unknown name \"bogusField\" at 'job.training_input'" in unknown.stderr
