"""services.cloudbuild: the Build body, the content-addressed context, and reading answers that lie."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from mlsubmit.errors import ServiceAnswerError, UsageError
from mlsubmit.services.cloudbuild import (
    MARK,
    failure_text,
    image_digest,
    plan_build,
    state_of,
)
from mlsubmit.services.settings import Settings

IMAGE = "us-central1-docker.pkg.dev/p/mlsubmit/trainer:ctx-" + "1" * 64


def context(folder: Path, text: str = "FROM python:3.10\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "context.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text)
        info.mtime = 0
        tar.addfile(info, io.BytesIO(text.encode()))
    return path


def test_the_same_context_has_the_same_address_and_one_byte_changes_it(tmp_path: Path) -> None:
    first = plan_build(IMAGE, context(tmp_path / "a"), "gs://stage/jobs", tmp_path / "a")
    again = plan_build(IMAGE, context(tmp_path / "b"), "gs://stage", tmp_path / "b")
    other = plan_build(IMAGE, context(tmp_path / "c", "FROM python:3.11\n"), "gs://stage", tmp_path / "c")
    assert first.staged.uri == again.staged.uri != other.staged.uri
    assert first.staged.uri.startswith("gs://stage/mlsubmit/packages/")
    assert first.body["source"] == {
        "storageSource": {"bucket": "stage", "object": first.staged.uri.removeprefix("gs://stage/")}
    }
    assert first.body["tags"] == [MARK, "ctx-" + "1" * 64]
    assert first.body["images"] == [IMAGE]


@pytest.mark.parametrize(
    "image", ["us-docker.pkg.dev/p/r/t", "127.0.0.1:5000/p/t", "x:" + "a" * 200, "x:bad/tag"]
)
def test_an_image_without_a_usable_tag_is_refused(tmp_path: Path, image: str) -> None:
    with pytest.raises(UsageError):
        plan_build(image, context(tmp_path), "gs://stage", tmp_path)


def test_without_a_staging_bucket_the_way_out_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--staging-bucket"):
        plan_build(IMAGE, context(tmp_path), None, tmp_path)


@pytest.mark.parametrize(
    "results",
    [
        None,
        {"images": "not a list"},
        {"images": [{"name": IMAGE, "digest": "sha256:short"}]},
        {"images": [{"name": "another/image:tag", "digest": "sha256:" + "a" * 64}]},
    ],
)
def test_a_success_without_our_digest_is_an_answer_error(results: object) -> None:
    with pytest.raises(ServiceAnswerError):
        image_digest({"id": "b1", "status": "SUCCESS", "results": results}, IMAGE)


def test_states_and_the_failure_message() -> None:
    assert [state_of({"status": s}) for s in ("QUEUED", "WORKING", "SUCCESS", "TIMEOUT", "odd")] == [
        "QUEUED",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "STATE_UNSPECIFIED",
    ]
    text = failure_text(
        {
            "id": "b1",
            "status": "FAILURE",
            "steps": [{"name": "gcr.io/cloud-builders/docker", "args": ["build"], "status": "FAILURE"}],
            "failureInfo": {"type": "USER_BUILD_STEP", "detail": "exit 1"},
        },
        ["last line"],
    )
    assert text.startswith("Cloud Build b1 ended FAILURE; step 0 (gcr.io/cloud-builders/docker build)")
    assert "USER_BUILD_STEP: exit 1" in text and text.endswith("  last line")


def test_the_endpoint_override_is_honoured_and_checked() -> None:
    env = {"CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD": "http://127.0.0.1:9/", "CLOUDSDK_CORE_PROJECT": "p"}
    assert Settings.from_flags(env).endpoint("cloudbuild") == "http://127.0.0.1:9/"
    assert Settings.from_flags({}).endpoint("cloudbuild") == "https://cloudbuild.googleapis.com/"
    with pytest.raises(UsageError, match="CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD"):
        Settings.from_flags({"CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD": "ftp://x"})
