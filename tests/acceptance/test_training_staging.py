"""Staging against gcp-storage-emulator: both layouts, zero-byte re-submits across jobs, forged objects,
resumable chunks, retries, errors.

Bytes are counted at the emulator's socket (tests/fakes/gcs.py), not taken from mlsubmit's own report.
Every upload goes through the storage client `mlsubmit training` builds (``Settings.storage()``, the production
wire). Most tests use the emulator wiring (STORAGE_EMULATOR_HOST: anonymous); the last ones use the
real-service wiring (a token, an endpoint override) against the same emulator. The first ones run
the whole `mlsubmit training` command against the emulator and a loopback ml API.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import google_crc32c
import pytest
from click.testing import CliRunner, Result

from mlsubmit.cli import cli
from mlsubmit.errors import StagingError
from mlsubmit.job.vocab import split_gcs_uri, staging_prefix
from mlsubmit.sdist import tarball
from mlsubmit.sdist.build import build_sdist
from mlsubmit.services.media import multipart_insert
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.settings import Settings
from mlsubmit.services.staging import plan_staging
from mlsubmit.services.storage import upload
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.gcs import BUCKET, GcsEmulator
from tests.fakes.storage_api import crc32c_b64, md5_b64

FAST_RETRY = RetryPolicy(attempts=None, initial=0.01, cap=0.05, factor=2.0, deadline=5.0)
SHORT_RETRY = RetryPolicy(attempts=None, initial=0.01, cap=0.02, factor=2.0, deadline=0.3)


def is_upload(method: str, path: str) -> bool:
    return path.startswith("/upload/")


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def headers_of(request: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


@pytest.fixture
def client(gcs_emulator: GcsEmulator) -> Any:
    """The storage v1 service as `mlsubmit training` builds it with STORAGE_EMULATOR_HOST set."""
    return Settings.from_flags(dict(os.environ)).storage()


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "trainer"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('training')\n")
    (package / "models" / "__init__.py").write_text("")
    return package


# -- the whole command: jobs share the staged package ----------------------------------------------------

SHARED = rf"gs://{BUCKET}/mlsubmit/packages/[0-9a-f]{{64}}/trainer-0\.0\.0\.tar\.gz"


@pytest.fixture
def submit(fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator, trainer: Path) -> Any:
    """Run `mlsubmit training JOB --package-path TRAINER FLAGS...` against the loopback servers."""
    env = {
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "tok",
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": fake_apis.url,
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0.01",
    }

    def run(job: str, *flags: str) -> Result:
        args = [
            "training", job, "--region", "us-central1", "--package-path", str(trainer),
            "--module-name", "trainer.task", "--runtime-version", "2.11", "--python-version", "3.7", *flags,
        ]  # fmt: skip
        result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    return run


def package_uris(fake_apis: FakeGoogleApis, job: str) -> list[str]:
    return list(fake_apis.jobs[job]["trainingInput"]["packageUris"])


@pytest.mark.parametrize(
    "location",
    [
        ("--staging-bucket", f"gs://{BUCKET}"),
        ("--job-dir", f"gs://{BUCKET}/runs/JOB"),  # a job dir per job: still one copy in the bucket
    ],
    ids=["staging-bucket", "job-dir"],
)
def test_a_second_job_with_unchanged_code_sends_nothing_and_points_at_the_same_object(
    submit: Any,
    fake_apis: FakeGoogleApis,
    gcs_emulator: GcsEmulator,
    trainer: Path,
    location: tuple[str, str],
) -> None:
    flag, where = location
    submit("job_a", flag, where.replace("JOB", "job_a"))
    assert gcs_emulator.bytes_received() > 0
    gcs_emulator.reset_counters()

    submit("job_b", flag, where.replace("JOB", "job_b"))

    assert gcs_emulator.bytes_received() == 0
    assert gcs_emulator.uploads() == []
    assert [r.method for r in gcs_emulator.requests] == ["GET"]  # the one skip check, nothing else
    [uri] = package_uris(fake_apis, "job_a")
    assert package_uris(fake_apis, "job_b") == [uri]
    assert re.fullmatch(SHARED, uri), uri
    assert [f"gs://{BUCKET}/{name}" for name in gcs_emulator.objects()] == [uri]

    # One byte of source changed: one upload, to a new content address.
    task = trainer / "task.py"
    task.write_bytes(task.read_bytes().replace(b"training", b"trainind"))
    gcs_emulator.reset_counters()
    submit("job_c", flag, where.replace("JOB", "job_c"))

    assert len(gcs_emulator.uploads()) == 1
    [changed] = package_uris(fake_apis, "job_c")
    assert changed != uri and re.fullmatch(SHARED, changed)
    assert len(gcs_emulator.objects()) == 2


def test_the_gcloud_layout_stages_per_job_as_gcloud_does(
    submit: Any, fake_apis: FakeGoogleApis, gcs_emulator: GcsEmulator
) -> None:
    submit("job_a", "--staging-bucket", f"gs://{BUCKET}", "--staging-layout", "gcloud")
    submit("job_b", "--job-dir", f"gs://{BUCKET}/runs/b", "--staging-layout", "gcloud")

    [a] = package_uris(fake_apis, "job_a")
    [b] = package_uris(fake_apis, "job_b")
    assert re.fullmatch(rf"gs://{BUCKET}/job_a/[0-9a-f]{{64}}/trainer-0\.0\.0\.tar\.gz", a), a
    assert re.fullmatch(rf"gs://{BUCKET}/runs/b/packages/[0-9a-f]{{64}}/trainer-0\.0\.0\.tar\.gz", b), b
    data = gcs_emulator.objects()[a.removeprefix(f"gs://{BUCKET}/")]
    assert a.split("/")[-2] == hashlib.sha256(data).hexdigest()  # gcloud's rule: the sha256 of the file
    assert len(gcs_emulator.uploads()) == 2  # per job: the second job uploads its own copy


# -- content addresses -----------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [(1, 9), (6, 0)])
def test_the_content_address_does_not_depend_on_the_compressor(
    trainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels: tuple[int, int]
) -> None:
    """Two zlib levels (0: stored, as a compressor without deflate would write it) give different bytes,
    one address: the sha256 of the uncompressed archive."""
    built = []
    for level in levels:
        monkeypatch.setattr(tarball, "COMPRESS_LEVEL", level)
        built.append(build_sdist(trainer, tmp_path / f"level{level}"))
    plans = [plan_staging([path], f"gs://{BUCKET}/j/") for path in built]

    assert built[0].read_bytes() != built[1].read_bytes()
    assert plans[0][0].uri == plans[1][0].uri
    digest = hashlib.sha256(gzip.decompress(built[0].read_bytes())).hexdigest()
    assert plans[0][0].uri == f"gs://{BUCKET}/mlsubmit/packages/{digest}/trainer-0.0.0.tar.gz"
    assert [p[0].digests.md5 for p in plans if p[0].digests] == [md5_b64(b.read_bytes()) for b in built]


def test_packages_land_in_the_gcloud_hash_folder_with_their_names(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    extra = write(tmp_path / "dist" / "extra-1.0.tar.gz", b"extra package")
    other = write(tmp_path / "other-2.0.whl", b"wheel bytes")
    plan = plan_staging(
        ["gs://elsewhere/dep.tar.gz", extra, other], staging_prefix(f"gs://{BUCKET}", "job_1", None), "gcloud"
    )

    report = upload(plan, client, retry=FAST_RETRY)

    digest = hashlib.sha256(b"extra package" + b"wheel bytes").hexdigest()
    assert report.uris == [
        "gs://elsewhere/dep.tar.gz",
        f"gs://{BUCKET}/job_1/{digest}/extra-1.0.tar.gz",
        f"gs://{BUCKET}/job_1/{digest}/other-2.0.whl",
    ]
    assert gcs_emulator.objects() == {
        f"job_1/{digest}/extra-1.0.tar.gz": b"extra package",
        f"job_1/{digest}/other-2.0.whl": b"wheel bytes",
    }
    assert report.bytes_sent == len(b"extra package") + len(b"wheel bytes")
    assert report.skipped == []


def test_packages_land_in_their_own_content_folders_in_the_shared_layout(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    extra = write(tmp_path / "dist" / "extra-1.0.tar.gz", b"extra package")
    other = write(tmp_path / "other-2.0.whl", b"wheel bytes")
    plan = plan_staging(["gs://elsewhere/dep.tar.gz", extra, other], f"gs://{BUCKET}/job_1/")

    report = upload(plan, client, retry=FAST_RETRY)

    names = [
        f"mlsubmit/packages/{hashlib.sha256(b'extra package').hexdigest()}/extra-1.0.tar.gz",
        f"mlsubmit/packages/{hashlib.sha256(b'wheel bytes').hexdigest()}/other-2.0.whl",
    ]
    assert report.uris == ["gs://elsewhere/dep.tar.gz"] + [f"gs://{BUCKET}/{n}" for n in names]
    assert gcs_emulator.objects() == dict(zip(names, [b"extra package", b"wheel bytes"], strict=True))


def test_resubmitting_an_unchanged_package_sends_zero_bytes(
    gcs_emulator: GcsEmulator, client: Any, trainer: Path, tmp_path: Path
) -> None:
    prefix = staging_prefix(None, "job_1", f"gs://{BUCKET}/runs/1")
    first = upload(plan_staging([build_sdist(trainer, tmp_path / "a")], prefix), client, retry=FAST_RETRY)
    assert gcs_emulator.bytes_received() > 0
    gcs_emulator.reset_counters()

    # A new build of the same tree (fresh mtimes, another out dir) must be recognised as already there.
    for path in trainer.rglob("*"):
        os.utime(path)
    second = upload(plan_staging([build_sdist(trainer, tmp_path / "b")], prefix), client, retry=FAST_RETRY)

    assert gcs_emulator.bytes_received() == 0
    assert gcs_emulator.uploads() == []
    assert second.uris == first.uris
    assert second.uris[0].startswith(f"gs://{BUCKET}/mlsubmit/packages/")
    assert second.skipped == second.uris
    assert second.bytes_sent == 0


# -- what counts as already staged -----------------------------------------------------------------------


def _crc(data: bytes) -> int:
    return int(google_crc32c.value(data))


def forge_same_crc32c(target: bytes, payload: bytes) -> bytes:
    """Other content of `target`'s size, starting with `payload`, with `target`'s CRC32C.

    CRC32C is affine over GF(2): flipping bit i of the last four bytes flips a fixed set of CRC bits, so
    solving 32 linear equations picks the four bytes that make any content match (what an attacker does).
    """
    n = len(target)
    assert len(payload) <= n - 4
    base = payload + b"\0" * (n - len(payload))
    zeros = _crc(b"\0" * n)
    want = _crc(target) ^ _crc(base)
    # (column value, which patch bits produce it), reduced to a basis by Gaussian elimination.
    basis: list[tuple[int, int]] = []
    for bit in range(32):
        value = _crc(b"\0" * (n - 4) + (1 << bit).to_bytes(4, "little")) ^ zeros
        combo = 1 << bit
        for b_value, b_combo in basis:
            if value ^ b_value < value:
                value, combo = value ^ b_value, combo ^ b_combo
        if value:
            basis.append((value, combo))
            basis.sort(reverse=True)
    patch = 0
    for b_value, b_combo in basis:
        if want ^ b_value < want:
            want, patch = want ^ b_value, patch ^ b_combo
    assert want == 0
    forged = base[: n - 4] + patch.to_bytes(4, "little")
    assert len(forged) == n and forged != target and _crc(forged) == _crc(target)
    return forged


def test_an_object_with_our_size_and_a_forged_crc32c_is_not_trusted(
    gcs_emulator: GcsEmulator, client: Any, trainer: Path, tmp_path: Path
) -> None:
    """Someone who can write to the bucket puts other code at the predictable name, same size and CRC32C."""
    plan = plan_staging([build_sdist(trainer, tmp_path / "out")], f"gs://{BUCKET}/j/")
    assert plan[0].local is not None
    ours = plan[0].local.read_bytes()
    evil = forge_same_crc32c(ours, b"import os; os.system('steal the credentials')\n")
    _, name = split_gcs_uri(plan[0].uri)
    multipart_insert(client, BUCKET, {"name": name}, evil, fields="name")
    found = client.objects().get(bucket=BUCKET, object=name).execute()
    assert (found["size"], found["crc32c"]) == (str(len(ours)), crc32c_b64(ours))  # the forgery holds
    gcs_emulator.reset_counters()

    report = upload(plan, client, retry=FAST_RETRY)

    assert report.skipped == []
    assert gcs_emulator.objects()[name] == ours
    assert len(gcs_emulator.uploads()) == 1
    gcs_emulator.reset_counters()
    assert upload(plan, client, retry=FAST_RETRY).skipped == [plan[0].uri]  # ours, now: skipped
    assert gcs_emulator.uploads() == []


def test_changed_code_is_uploaded_to_a_new_hash_folder(
    gcs_emulator: GcsEmulator, client: Any, trainer: Path, tmp_path: Path
) -> None:
    prefix = staging_prefix(f"gs://{BUCKET}", "job_1", None)
    first = upload(plan_staging([build_sdist(trainer, tmp_path / "a")], prefix), client, retry=FAST_RETRY)
    gcs_emulator.reset_counters()
    (trainer / "task.py").write_text("print('training harder')\n")

    second = upload(plan_staging([build_sdist(trainer, tmp_path / "b")], prefix), client, retry=FAST_RETRY)

    assert second.uris != first.uris
    assert gcs_emulator.bytes_received() >= second.bytes_sent > 0
    assert len(gcs_emulator.objects()) == 2


def test_an_object_with_other_bytes_at_the_same_name_is_replaced(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    package = write(tmp_path / "t.tar.gz", b"the real package")
    plan = plan_staging([package], f"gs://{BUCKET}/j/")
    _, name = split_gcs_uri(plan[0].uri)
    multipart_insert(client, BUCKET, {"name": name}, b"truncated", fields="name")  # e.g. someone else's
    gcs_emulator.reset_counters()

    report = upload(plan, client, retry=FAST_RETRY)

    assert report.skipped == []
    assert gcs_emulator.objects()[name] == b"the real package"
    assert gcs_emulator.bytes_received() >= len(b"the real package")


def test_large_files_go_up_resumably_in_chunks(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    data = os.urandom(9 * 1024 * 1024 + 123)
    package = write(tmp_path / "big.tar.gz", data)
    seen: list[int] = []

    report = upload(  # 1 MiB chunks (MLSUBMIT_UPLOAD_CHUNK_MIB=1) so a 9 MiB file needs several
        plan_staging([package], f"gs://{BUCKET}/j/"),
        client,
        progress=lambda u, d, t: seen.append(d),
        chunk_size=1024 * 1024,
    )

    chunks = [r.body_bytes for r in gcs_emulator.uploads() if r.method == "PUT"]
    assert len(chunks) == 10
    assert max(chunks) == 1024 * 1024
    assert sum(chunks) == len(data)
    assert next(iter(gcs_emulator.objects().values())) == data
    assert seen == sorted(seen) and seen[-1] == len(data)
    assert report.bytes_sent == len(data)


def test_transient_errors_are_retried_and_logged(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    package = write(tmp_path / "t.tar.gz", b"payload")
    gcs_emulator.fail_next(1, status=429, match=is_upload)
    gcs_emulator.fail_next(1, status=503, match=is_upload)

    with caplog.at_level(logging.WARNING, logger="mlsubmit.services.storage"):
        upload(plan_staging([package], f"gs://{BUCKET}/j/"), client, retry=FAST_RETRY)

    assert [r.injected_status for r in gcs_emulator.uploads()] == [429, 503, None]
    assert list(gcs_emulator.objects().values()) == [b"payload"]
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == 2


def test_a_failed_chunk_is_resent_and_the_object_is_intact(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    data = os.urandom(9 * 1024 * 1024)
    package = write(tmp_path / "big.tar.gz", data)
    gcs_emulator.fail_next(1, status=503, match=lambda method, path: method == "PUT")

    upload(plan_staging([package], f"gs://{BUCKET}/j/"), client, retry=FAST_RETRY, chunk_size=1024 * 1024)

    assert next(iter(gcs_emulator.objects().values())) == data


def test_persistent_errors_give_up_with_a_staging_error(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    package = write(tmp_path / "t.tar.gz", b"payload")
    gcs_emulator.fail_next(10_000, status=503, match=is_upload)

    with pytest.raises(StagingError, match="kept failing") as raised:
        upload(plan_staging([package], f"gs://{BUCKET}/j/"), client, retry=SHORT_RETRY)
    assert "503" in str(raised.value)
    assert gcs_emulator.objects() == {}


def test_permission_denied_names_the_bucket_and_permission(
    gcs_emulator: GcsEmulator, client: Any, tmp_path: Path
) -> None:
    package = write(tmp_path / "t.tar.gz", b"payload")
    gcs_emulator.fail_next(1, status=403, match=is_upload)

    with pytest.raises(StagingError) as raised:
        upload(plan_staging([package], f"gs://{BUCKET}/j/"), client, retry=FAST_RETRY)
    message = str(raised.value)
    assert "403" in message
    assert f"bucket {BUCKET}" in message
    assert "storage.objects.create" in message
    assert len(gcs_emulator.uploads()) == 1, "a 403 is not retried"


def test_a_missing_bucket_is_reported(gcs_emulator: GcsEmulator, client: Any, tmp_path: Path) -> None:
    package = write(tmp_path / "t.tar.gz", b"payload")

    with pytest.raises(StagingError, match="bucket no-such-bucket does not exist"):
        upload(plan_staging([package], "gs://no-such-bucket/j/"), client, retry=FAST_RETRY)


def test_the_emulator_never_sees_a_token(gcs_emulator: GcsEmulator, tmp_path: Path) -> None:
    env = {"STORAGE_EMULATOR_HOST": gcs_emulator.host, "CLOUDSDK_AUTH_ACCESS_TOKEN": "tok-env"}
    service = Settings.from_flags(env).storage()

    upload(plan_staging([write(tmp_path / "t.tar.gz", b"payload")], f"gs://{BUCKET}/j/"), service)

    assert gcs_emulator.requests
    for request in gcs_emulator.requests:
        assert "authorization" not in headers_of(request)
        assert headers_of(request)["user-agent"].startswith("mlsubmit/")


@pytest.fixture
def signed(gcs_emulator: GcsEmulator, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real-service wiring: the API calls' token, storage at an endpoint override."""
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")
    env = {
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": gcs_emulator.host,
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "tok-123",
    }
    return Settings.from_flags(env).storage()


def test_the_api_credentials_sign_every_storage_call_with_our_user_agent(
    gcs_emulator: GcsEmulator, signed: Any, tmp_path: Path
) -> None:
    upload(plan_staging([write(tmp_path / "t.tar.gz", b"payload")], f"gs://{BUCKET}/j/"), signed)

    assert [r.method for r in gcs_emulator.requests] == ["GET", "POST"]
    for request in gcs_emulator.requests:
        assert headers_of(request)["authorization"] == "Bearer tok-123"
        assert headers_of(request)["user-agent"].startswith("mlsubmit/")


def test_resumable_chunks_signed_through_the_production_wire(
    gcs_emulator: GcsEmulator, signed: Any, tmp_path: Path
) -> None:
    """Each "308 Resume Incomplete" is the next step of the upload, never a redirect."""
    data = os.urandom(9 * 1024 * 1024 + 5)
    gcs_emulator.fail_next(1, status=503, match=lambda method, path: method == "PUT")

    report = upload(
        plan_staging([write(tmp_path / "big.tar.gz", data)], f"gs://{BUCKET}/j/"),
        signed,
        retry=FAST_RETRY,
        chunk_size=1024 * 1024,
    )

    assert next(iter(gcs_emulator.objects().values())) == data
    assert (
        len([r for r in gcs_emulator.uploads() if r.method == "PUT" and r.body_bytes]) == 11
    )  # 10 + 1 again
    assert report.bytes_sent == len(data) + 1024 * 1024
    assert all(headers_of(r)["authorization"] == "Bearer tok-123" for r in gcs_emulator.uploads())


def test_staging_loads_no_storage_client_library(gcs_emulator: GcsEmulator, tmp_path: Path) -> None:
    """google-cloud-storage and google-api-core's retry/exceptions cost ~150 ms of a submit."""
    package = write(tmp_path / "t.tar.gz", b"payload")
    script = (
        "import os, sys\n"
        "from mlsubmit.services import staging, storage\n"
        "from mlsubmit.services.settings import Settings\n"
        f"plan = staging.plan_staging([{str(package)!r}], 'gs://{BUCKET}/j/')\n"
        "storage.upload(plan, Settings.from_flags(os.environ).storage())\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", script],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )

    loaded = set(done.stdout.split())
    assert gcs_emulator.objects()  # it did upload
    heavy = {
        "googleapiclient.discovery",
        "googleapiclient.http",
        "httplib2",
        "google.auth",
        "google.cloud.storage",
        "google.resumable_media",
        "google.api_core.retry",
        "google.api_core.exceptions",
    }
    assert loaded.isdisjoint(heavy), loaded & heavy
