"""The cloud-build builder against the loopback Cloud Build fake, through the production HTTP transport."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlsubmit.console import Console, using
from mlsubmit.errors import CloudBuildFailedError, FollowInterrupted
from mlsubmit.services.cloudbuild_builder import CloudBuilder, printable
from mlsubmit.services.retry import PollPolicy, RetryPolicy
from mlsubmit.services.settings import Settings
from tests.fakes.cloudbuild_api import BUILDS_CREATE, FakeCloudBuild
from tests.fakes.gcloud_oracle import requires_gcloud, run_gcloud

TAG = "ctx-0123456789abcdef"


@dataclass(frozen=True)
class Spec:
    tagged: str


def context_tar(folder: Path, dockerfile: str = "FROM python:3.10\n") -> Path:
    path = folder / "context.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def server() -> Iterator[FakeCloudBuild]:
    with FakeCloudBuild() as fake:
        yield fake


def builder(server: FakeCloudBuild, lines: list[str], **kwargs: object) -> CloudBuilder:
    env = {
        "CLOUDSDK_CORE_PROJECT": "myproj",
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "fake-token",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD": server.url,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": server.url + "storage/v1/",
        "MLSUBMIT_RETRY_INITIAL_DELAY": "0",
    }
    settings = Settings.from_flags(env, notify=lines.append)
    with using(Console(notify=lines.append)):  # the builder's status lines and its log's [build] lines
        return CloudBuilder(
            settings.cloud_builds(),
            staging_bucket="gs://stage",
            poll=PollPolicy.fixed(0),
            storage_retry=RetryPolicy(attempts=2, initial=0),
            **kwargs,  # type: ignore[arg-type]
        )


def image(server: FakeCloudBuild) -> str:
    return f"127.0.0.1:{server.port}/myproj/mlsubmit/trainer:{TAG}"


def test_success_uploads_once_builds_once_and_returns_the_pushed_digest(
    server: FakeCloudBuild, tmp_path: Path
) -> None:
    lines: list[str] = []
    digest = builder(server, lines).build(Spec(image(server)), context_tar(tmp_path))
    assert digest.startswith("sha256:") and len(digest) == 71
    (body,) = server.build_bodies
    assert body["images"] == [image(server)]
    assert body["tags"] == ["mlsubmit", TAG]
    assert body["steps"][0]["args"][-3:] == ["-t", image(server), "."]
    assert "--platform" in body["steps"][0]["args"]
    source = body["source"]["storageSource"]
    assert f"gs://{source['bucket']}/{source['object']}" in server.objects
    assert "[build] Successfully built" in lines  # the log was streamed
    # the same context again: the archive is already there (nothing uploaded), one more build
    uploaded = server.uploaded_bytes
    builder(server, lines).build(Spec(image(server)), context_tar(tmp_path))
    assert server.uploaded_bytes == uploaded
    assert len(server.build_bodies) == 2


def test_failure_names_build_step_and_last_log_lines(server: FakeCloudBuild, tmp_path: Path) -> None:
    server.script_build(
        TAG, "FAILURE", log_lines=["Step 1/4 : FROM base", "ERROR: No matching distribution \x1b[31m"]
    )
    with pytest.raises(CloudBuildFailedError) as caught:
        builder(server, []).build(Spec(image(server)), context_tar(tmp_path))
    text = str(caught.value)
    build_id = server.stored_builds[0]["id"]
    assert build_id in text and "FAILURE" in text
    assert "step 0 (gcr.io/cloud-builders/docker build)" in text
    assert "USER_BUILD_STEP" in text
    assert "ERROR: No matching distribution \\x1b[31m" in text  # the escape sequence is not passed on
    assert caught.value.exit_status == 1


def test_unanswered_create_still_starts_one_build(server: FakeCloudBuild, tmp_path: Path) -> None:
    server.inject_drop("POST", BUILDS_CREATE, after=True)  # the build starts, the answer is lost
    lines: list[str] = []
    digest = builder(server, lines).build(Spec(image(server)), context_tar(tmp_path))
    assert len(server.stored_builds) == 1
    assert len(server.build_bodies) == 1  # looked up by tag instead of sent again
    assert digest == server.stored_builds[0]["results"]["images"][0]["digest"]
    assert any("not starting another" in line for line in lines)


def test_a_running_build_of_the_same_context_is_followed(server: FakeCloudBuild, tmp_path: Path) -> None:
    builder(server, []).build(Spec(image(server)), context_tar(tmp_path))
    server.script_build(TAG, "SUCCESS")
    first = server.stored_builds[0]
    server.builds[first["id"]].pos = 0  # as if it were still queued
    server.builds[first["id"]].resource["status"] = "QUEUED"
    lines: list[str] = []
    builder(server, lines).build(Spec(image(server)), context_tar(tmp_path))
    assert len(server.build_bodies) == 1
    assert any("already building" in line for line in lines)


def test_unknown_field_is_refused_by_the_fake(server: FakeCloudBuild) -> None:
    import json
    import urllib.request

    request = urllib.request.Request(
        server.url + "v1/projects/myproj/locations/global/builds",
        data=json.dumps({"steps": [{"name": "x"}], "platform": "linux/amd64"}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert "platform" in caught.value.read().decode()


def ctrl_c_at_poll(n: int) -> Callable[[float], None]:
    """A builder's ``sleep`` that raises KeyboardInterrupt (Ctrl-C) at its ``n``-th wait between polls."""
    polls = 0

    def sleep(_s: float) -> None:
        nonlocal polls
        polls += 1
        if polls == n:
            raise KeyboardInterrupt

    return sleep


@pytest.mark.parametrize("cancel", [True, False])
def test_ctrl_c_cancels_the_build_only_when_asked(
    server: FakeCloudBuild, tmp_path: Path, cancel: bool
) -> None:
    server.hold_builds(TAG)
    made = builder(server, [], cancel_on_interrupt=cancel)
    with using(Console(sleep=ctrl_c_at_poll(3))), pytest.raises(FollowInterrupted) as caught:
        made.build(Spec(image(server)), context_tar(tmp_path))
    status = server.stored_builds[0]["status"]
    assert (status == "CANCELLED") is cancel
    assert ("cancel" in str(caught.value)) and ("no job was created" in str(caught.value))


def test_printable_drops_control_characters() -> None:
    assert printable("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07"


def test_polls_that_keep_failing_name_the_build_not_a_job(server: FakeCloudBuild, tmp_path: Path) -> None:
    from mlsubmit.errors import ApiError

    server.hold_builds(TAG)
    server.inject("GET", r"/builds/[^/]+$", 503, times=None)
    made = builder(server, [])
    made.poll = PollPolicy.fixed(0, error_budget=2)
    made.builds.caller.policy = RetryPolicy(attempts=1)
    with pytest.raises(ApiError) as caught:
        made.build(Spec(image(server)), context_tar(tmp_path))
    text = str(caught.value)
    assert "gcloud builds describe" in text and "no job was created" in text
    assert "mlsubmit jobs" not in text


def test_ctrl_c_never_cancels_a_build_another_run_started(server: FakeCloudBuild, tmp_path: Path) -> None:
    server.hold_builds(TAG)
    other = builder(server, [])
    stop_at_once = Console(sleep=lambda _s: (_ for _ in ()).throw(KeyboardInterrupt))  # the other run stops
    with using(stop_at_once), pytest.raises(FollowInterrupted):
        other.build(Spec(image(server)), context_tar(tmp_path))
    ours = builder(server, [], cancel_on_interrupt=True)
    with using(Console(sleep=ctrl_c_at_poll(2))), pytest.raises(FollowInterrupted, match="another run"):
        ours.build(Spec(image(server)), context_tar(tmp_path))
    (build,) = server.stored_builds
    assert build["status"] == "WORKING"


def test_a_build_that_never_ends_is_not_waited_for_forever(server: FakeCloudBuild, tmp_path: Path) -> None:
    server.hold_builds(TAG)
    now = [0.0]
    made = builder(server, [])
    ten_minutes_a_poll = Console(clock=lambda: now[0], sleep=lambda _s: now.__setitem__(0, now[0] + 600.0))
    with using(ten_minutes_a_poll), pytest.raises(CloudBuildFailedError, match="has not ended"):
        made.build(Spec(image(server)), context_tar(tmp_path))


@pytest.mark.parametrize(
    "answer",
    [{"metadata": {}}, {"metadata": {"build": {"id": "../../x"}}}, {"metadata": {"build": "text"}}],
)
def test_a_create_answer_without_a_usable_build_is_an_answer_error(
    server: FakeCloudBuild, tmp_path: Path, answer: dict[str, object]
) -> None:
    from mlsubmit.errors import ServiceAnswerError

    server.inject("POST", BUILDS_CREATE, 200, body=answer)
    with pytest.raises(ServiceAnswerError):
        builder(server, []).build(Spec(image(server)), context_tar(tmp_path))


# -- parity with gcloud builds submit ----------------------------------------
# Parity: mlsubmit's Cloud Build means what `gcloud builds submit --tag IMAGE DIR` means for the same context.
#
# Both run against the same loopback fake (gcloud 528 through CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBUILD/_STORAGE).
# Same: the builder image, `build --network cloudbuild -t IMAGE .`, `images: [IMAGE]`, the files of the source
# archive. Deliberate differences (services/cloudbuild.py docstring), each checked here so a change is noticed:
# `--platform linux/amd64` instead of `--no-cache`; `tags: [mlsubmit, CONTENT_TAG]`; a `timeout`; the archive at
# its content address in the staging bucket, without a pinned generation, instead of
# `gs://PROJECT_cloudbuild/source/<timestamp>-<uuid>.tgz`.


PARITY_TAG = "ctx-parity"
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


@pytest.mark.gcloud
@requires_gcloud
def test_same_steps_images_and_source_as_gcloud_builds_submit(tmp_path: Path) -> None:
    context = _context(tmp_path / "ctx")
    with FakeCloudBuild() as server:
        image = f"us-central1-docker.pkg.dev/myproj/mlsubmit/trainer:{PARITY_TAG}"  # gcloud wants pkg.dev or gcr.io
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
    assert ours["tags"] == ["mlsubmit", PARITY_TAG] and "tags" not in theirs
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
