"""The registry check: HEAD /v2/NAME/manifests/TAG, its digest or None, and where the token may go."""

from __future__ import annotations

import pytest

from mlsubmit.console import Console, using
from mlsubmit.errors import ApiError, ServiceAnswerError
from mlsubmit.job.imageref import is_loopback
from mlsubmit.services.registry import (
    MANIFEST_TYPES,
    manifest_digest,
    manifest_url,
    registry_lookup,
    signs_for,
)
from mlsubmit.services.retry import RetryPolicy
from mlsubmit.services.wire import Wire
from tests.fakes.registry import scripted_registry

DIGEST = "sha256:" + "c" * 64
PATH = "/v2/team/trainer/manifests/ctx-1"


@pytest.mark.parametrize(
    ("host", "signed"),
    [
        ("us-central1-docker.pkg.dev", True),
        ("gcr.io", True),
        ("eu.gcr.io", True),
        ("docker.io", False),
        ("evil-docker.pkg.dev.example.com", False),
        ("gcr.io.example.com:443", False),
        ("127.0.0.1:5000", False),
    ],
)
def test_the_token_goes_only_to_google_registries(host: str, signed: bool) -> None:
    assert signs_for(host) is signed


@pytest.mark.parametrize(
    ("repository", "url"),
    [
        ("127.0.0.1:5000/a/b", "http://127.0.0.1:5000/v2/a/b/manifests/t"),
        ("localhost:5000/a", "http://localhost:5000/v2/a/manifests/t"),
        ("[::1]:5000/a", "http://[::1]:5000/v2/a/manifests/t"),
        ("us-docker.pkg.dev/p/r/n", "https://us-docker.pkg.dev/v2/p/r/n/manifests/t"),
        ("registry.example.com:5000/a", "https://registry.example.com:5000/v2/a/manifests/t"),
    ],
)
def test_plain_http_only_on_loopback(repository: str, url: str) -> None:
    assert manifest_url(repository, "t") == url
    assert is_loopback(repository.split("/")[0]) is url.startswith("http://")


def test_found_tag_gives_its_digest_and_asks_for_oci_and_docker_manifests() -> None:
    with scripted_registry() as registry:
        registry.answers[PATH] = (200, {"Docker-Content-Digest": DIGEST})
        found = manifest_digest(
            f"{registry.host}/team/trainer", "ctx-1", wire=Wire(deadline=5), token=lambda: "tok"
        )
        missing = manifest_digest(f"{registry.host}/team/trainer", "ctx-2", wire=Wire(deadline=5), token=None)
    assert (found, missing) == (DIGEST, None)
    method, _, headers = registry.seen[0]
    assert method == "HEAD"
    assert set(headers["accept"].split(", ")) == set(MANIFEST_TYPES)
    assert "authorization" not in headers  # a loopback registry never sees the token


@pytest.mark.parametrize(
    ("status", "headers", "error", "words"),
    [
        (302, {"Location": "http://127.0.0.1:1/elsewhere"}, ApiError, "HTTP 302"),
        (401, {}, ApiError, "mlsubmit signs only Artifact Registry"),
        (200, {"Docker-Content-Digest": "md5:abc"}, ServiceAnswerError, "without a sha256"),
        (200, {}, ServiceAnswerError, "without a sha256"),
    ],
)
def test_other_answers_are_errors_and_redirects_are_not_followed(
    status: int, headers: dict[str, str], error: type[Exception], words: str
) -> None:
    with scripted_registry() as registry:
        registry.answers[PATH] = (status, headers)
        with pytest.raises(error, match=words):
            manifest_digest(f"{registry.host}/team/trainer", "ctx-1", wire=Wire(deadline=5), token=None)
    assert [path for _, path, _ in registry.seen] == [PATH]  # the redirect's target was never asked


def test_lookup_retries_a_transient_answer() -> None:
    with scripted_registry() as registry:
        registry.answers[PATH] = (503, {})
        sleeps: list[float] = []
        lookup = registry_lookup(Wire(deadline=5), None, RetryPolicy(attempts=3, initial=0.01))
        with using(Console(sleep=sleeps.append)), pytest.raises(ApiError, match="HTTP 503"):
            lookup(f"{registry.host}/team/trainer", "ctx-1")
    assert len(registry.seen) == 3 and len(sleeps) == 2
