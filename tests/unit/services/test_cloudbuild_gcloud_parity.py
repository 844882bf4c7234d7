"""Parity: mlsubmit's Cloud Build means what `gcloud builds submit --tag IMAGE DIR` means for the same context.

Both run against the same loopback fake (gcloud 528 through CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD/_STORAGE).
Same: the builder image, `build --network cloudbuild -t IMAGE .`, `images: [IMAGE]`, the files of the source
archive. Deliberate differences (services/cloudbuild.py docstring), each checked here so a change is noticed:
`--platform linux/amd64` instead of `--no-cache`; `tags: [mlsubmit, CONTENT_TAG]`; a `timeout`; the archive at
its content address in the staging bucket, without a pinned generation, instead of
`gs://PROJECT_cloudbuild/source/<timestamp>-<uuid>.tgz`.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from mlsubmit.console import Console, using
from mlsubmit.services.cloudbuild_builder import CloudBuilder
from mlsubmit.services.retry import PollPolicy
from mlsubmit.services.settings import Settings
from tests.fakes.cloudbuild_api import FakeCloudBuild
from tests.fakes.gcloud_oracle import requires_gcloud, run_gcloud

pytestmark = [pytest.mark.gcloud, requires_gcloud]

TAG = "ctx-parity"
# mlsubmit's step args = gcloud's with these swapped (and nothing else)
GCLOUD_ONLY_ARGS = ["--no-cache"]
MLSUBMIT_ONLY_ARGS = ["--platform", "linux/amd64"]


class _Spec:
    def __init__(self, tagged: str) -> None:
        self.tagged = tagged


def _files(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(archive))) as tar:
        out: dict[str, bytes] = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                out[member.name.removeprefix("./")] = handle.read()
        return out


def _context(folder: Path) -> Path:
    (folder / "trainer").mkdir(parents=True)
    (folder / "Dockerfile").write_text(
        'FROM python:3.10\nCOPY trainer /app/trainer\nENTRYPOINT ["python3", "-m", "trainer.task"]\n'
    )
    (folder / "trainer" / "__init__.py").write_text("")
    (folder / "trainer" / "task.py").write_text("print('hello')\n")
    return folder


def _tar_of(folder: Path, out: Path) -> Path:
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(folder)))
    return out


def test_same_steps_images_and_source_as_gcloud_builds_submit(tmp_path: Path) -> None:
    context = _context(tmp_path / "ctx")
    with FakeCloudBuild() as server:
        image = f"us-central1-docker.pkg.dev/myproj/mlsubmit/trainer:{TAG}"  # gcloud wants pkg.dev or gcr.io
        run = run_gcloud(
            ["builds", "submit", "--async", "--tag", image, "."],
            server,
            cwd=context,
            env={"CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD": server.url},
        )
        assert run.returncode == 0, run.stderr
        env = {
            "CLOUDSDK_CORE_PROJECT": "myproj",
            "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake-token",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD": server.url,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": server.url + "storage/v1/",
        }
        lines: list[str] = []
        settings = Settings.from_flags(env, notify=lines.append)
        with using(Console(notify=lines.append)):
            builder = CloudBuilder(
                settings.cloud_builds(), staging_bucket="gs://stage", poll=PollPolicy.fixed(0)
            )
        builder.build(_Spec(image), _tar_of(context, tmp_path / "context.tar"))
        theirs, ours = server.build_bodies
        objects = server.objects

    their_args = [a for a in theirs["steps"][0]["args"] if a not in GCLOUD_ONLY_ARGS]
    our_args = list(ours["steps"][0]["args"])
    at = our_args.index(MLSUBMIT_ONLY_ARGS[0])
    assert our_args[at : at + 2] == MLSUBMIT_ONLY_ARGS
    del our_args[at : at + 2]
    assert our_args == their_args
    assert GCLOUD_ONLY_ARGS[0] in theirs["steps"][0]["args"]
    assert ours["steps"][0]["name"] == theirs["steps"][0]["name"]
    assert ours["images"] == theirs["images"] == [image]
    assert ours["tags"] == ["mlsubmit", TAG] and "tags" not in theirs
    assert ours["timeout"] == "3600s" and "timeout" not in theirs
    assert set(ours) - set(theirs) == {"tags", "timeout"} and set(theirs) <= set(ours)

    their_source, our_source = theirs["source"]["storageSource"], ours["source"]["storageSource"]
    assert their_source["bucket"] == "myproj_cloudbuild" and their_source["object"].startswith("source/")
    assert "generation" in their_source and "generation" not in our_source
    assert our_source["bucket"] == "stage"
    assert our_source["object"].startswith("mlsubmit/packages/") and our_source["object"].endswith(
        "/context.tar.gz"
    )
    their_files = _files(bytes(objects[f"gs://{their_source['bucket']}/{their_source['object']}"].data))
    our_files = _files(bytes(objects[f"gs://{our_source['bucket']}/{our_source['object']}"].data))
    assert our_files == their_files
    assert "Dockerfile" in our_files
