"""Does the registry already hold this tag? One ``HEAD``
(https://distribution.github.io/distribution/spec/api/#existing-manifests); the token only to Google's
registries over https, plain http only to loopback (https://docs.docker.com/engine/daemon/insecure-registries/)."""

from __future__ import annotations

import re
from collections.abc import Callable

from mlsubmit.errors import ApiError, HostNotFoundError, ServiceAnswerError
from mlsubmit.job.imageref import hostname, is_loopback, split_repository
from mlsubmit.services.retry import RetryPolicy, call, unresolved
from mlsubmit.services.wire import DEADLINE_ENV, TokenSource, Wire, origin_of

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def signs_for(host: str) -> bool:
    """Whether the access token may be sent to ``host``: Artifact Registry and Container Registry only."""
    name = hostname(host).lower()
    return name.endswith("-docker.pkg.dev") or name == "gcr.io" or name.endswith(".gcr.io")


def manifest_url(repository: str, tag: str) -> str:
    """``https://HOST/v2/NAME/manifests/TAG`` (``http://`` for a loopback registry)."""
    host, name = split_repository(repository)
    if not _TAG.fullmatch(tag):
        raise ValueError(f"not an image tag: {tag!r}")
    scheme = "http" if is_loopback(host) else "https"
    return f"{scheme}://{host}/v2/{name}/manifests/{tag}"


def manifest_digest(repository: str, tag: str, *, wire: Wire, token: TokenSource | None) -> str | None:
    """The manifest digest of ``REPOSITORY:TAG``, None when the tag does not exist; else ApiError."""
    url = manifest_url(repository, tag)
    host, _ = split_repository(repository)
    signed = token is not None and signs_for(host) and url.startswith("https://")
    response, _ = wire.send(
        "HEAD",
        url,
        headers={"accept": ", ".join(MANIFEST_TYPES)},
        origin=origin_of(url) if signed else None,
        token=token if signed else None,
    )
    if response.status == 404:
        return None
    if response.status == 200:
        digest = response.get("docker-content-digest", "")
        if not _DIGEST.fullmatch(digest):
            raise ServiceAnswerError(
                f"{host} answered HEAD {repository}:{tag} without a sha256 Docker-Content-Digest "
                f"({digest[:80]!r}); is it a Docker Registry v2?",
                status=200,
            )
        return digest
    if response.status in (401, 403):
        how = (
            "check that the account can read the repository (roles/artifactregistry.reader) and that the "
            "token has not expired"
            if signed
            else "mlsubmit signs only Artifact Registry (*-docker.pkg.dev) and gcr.io requests; push to one, "
            "or to a registry on 127.0.0.1"
        )
        raise ApiError(
            f"{host} refused HEAD {repository}:{tag} (HTTP {response.status}): {how}", response.status
        )
    raise ApiError(
        f"{host} answered HEAD {repository}:{tag} with HTTP {response.status} {response.reason}".rstrip(),
        response.status,
    )


def registry_lookup(
    wire: Wire,
    token: TokenSource | None,
    policy: RetryPolicy,
) -> Callable[[str, str], str | None]:
    """The ``lookup`` of :func:`mlsubmit.images.ensure_image`: one HEAD, retried on transient failures."""

    def lookup(repository: str, tag: str) -> str | None:
        what = f"checking {repository}:{tag}"
        try:
            return call(lambda: manifest_digest(repository, tag, wire=wire, token=token), what, policy)
        except OSError as err:  # TimeoutError (a registry that drips or never answers), refused, reset...
            host, _ = split_repository(repository)
            if unresolved(err):  # nothing was sent: said as such (docs/getting-jobs-to-start.md)
                raise HostNotFoundError(
                    f"{host}: the registry's host name does not resolve ({str(err)[:200]}): no network, no DNS, "
                    "or a wrong name"
                ) from None
            raise ApiError(
                f"{host} did not answer HEAD {repository}:{tag} ({type(err).__name__}: {str(err)[:200]}), "
                "after every retry. Check that the registry is up and reachable from here (a proxy, a "
                f"firewall), or raise {DEADLINE_ENV} (seconds per call) for a slow one."
            ) from None

    return lookup
