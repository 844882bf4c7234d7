"""Image names ``REGISTRY/PATH/NAME`` (docs/containers.md), read in one place for images and services.registry.
The grammar is the distribution project's (https://github.com/distribution/reference/blob/main/regexp.go)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from mlsubmit.errors import UsageError


@dataclass(frozen=True)
class ImageOptions:
    """The image flags every command that builds an image shares: where it goes, what it is built on, by whom."""

    output_image_uri: str | None = None
    base_image: str | None = None
    builder: str = "auto"


_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:]+\])(?::[0-9]{{1,5}})?"
# patterns, compiled (and cached by re) on first use: a job without images never pays for them
_REPOSITORY = rf"({_HOST})/({_COMPONENT}(?:/{_COMPONENT})*)"


def check_repository(repository: str, what: str = "--output-image-uri") -> str:
    """``repository`` if it is REGISTRY/PATH/NAME without a tag or digest, else a UsageError (exit 2)."""
    if len(repository) > 255 or "@" in repository or re.fullmatch(_REPOSITORY, repository) is None:
        hint = (
            "without a tag or digest: mlsubmit adds the content tag"
            if "@" in repository or ":" in repository.rsplit("/", 1)[-1]
            else "as REGISTRY/PATH/NAME in lower case (e.g. us-central1-docker.pkg.dev/PROJECT/REPO/NAME)"
        )
        raise UsageError(f"{what} {repository[:300]!r}: give the image name {hint}")
    return repository


_IMAGE = r"[A-Za-z0-9][A-Za-z0-9._/:@-]*"


def check_image(image: str, what: str) -> str:
    """``image`` if it reads as ``NAME[:TAG][@DIGEST]``, else a UsageError (exit 2). Loose on purpose, but never a
    value that starts like an option or holds spaces or newlines: it goes on a command line and into ``FROM``."""
    if len(image) > 512 or re.fullmatch(_IMAGE, image) is None:
        raise UsageError(f"{what} {image[:300]!r} is not an image name (like python:3.11-slim)")
    return image


def split_repository(repository: str) -> tuple[str, str]:
    """``(host[:port], name)`` of a checked repository (``127.0.0.1:5000/a/b``: its host, then ``a/b``)."""
    host, _, name = check_repository(repository).partition("/")
    return host, name


def hostname(host: str) -> str:
    """The host part of ``host[:port]`` (an IPv6 literal without its brackets)."""
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback(host: str) -> bool:
    """Whether ``host[:port]`` is this machine: ``localhost`` or a loopback address. Only such a registry is
    spoken to over plain http, as docker allows (https://docs.docker.com/engine/daemon/insecure-registries/)."""
    name = hostname(host).lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
