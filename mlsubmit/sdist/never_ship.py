"""What never ships in the sdist, the image context or ``migrate``'s output (docs/security.md): credentials, by
name or folder, by content or as a file mlsubmit reads, are left out with a warning naming them; a ``--packages``
archive holding one is refused (:func:`refuse_archive`)."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from mlsubmit.errors import PackagingError

#: How much of a file's beginning the content rule reads (a key file is a few KiB).
SNIFF_BYTES = 64 * 1024

_SECRET_NAMES = {".env": "an environment file", ".envrc": "an environment file", ".netrc": "a login file"}
_SECRET_NAMES |= {"_netrc": "a login file", ".pypirc": "a package index login file"}
_SECRET_NAMES |= {".git-credentials": "a git credential store", ".boto": "a cloud storage credential file"}
_SECRET_NAMES |= {".dockercfg": "a registry login file", "credentials.db": "a gcloud credential store"}
_SECRET_NAMES |= {"access_tokens.db": "a gcloud credential store"}
_SECRET_NAMES |= {"application_default_credentials.json": "Application Default Credentials"}
_SECRET_NAMES |= {"id_rsa": "an SSH private key", "id_dsa": "an SSH private key"}
_SECRET_NAMES |= {"id_ecdsa": "an SSH private key", "id_ed25519": "an SSH private key"}
_ENV_TEMPLATES = (".example", ".sample", ".template", ".dist", ".defaults")
_SECRET_SUFFIXES = {".p12": "a PKCS #12 key store", ".pfx": "a PKCS #12 key store"}
#: Folders of cloud CLIs and key tools: nothing inside them ships.
_SECRET_FOLDERS = {".aws": "the AWS CLI's configuration", ".azure": "the Azure CLI's configuration"}
_SECRET_FOLDERS |= {".kube": "a Kubernetes configuration", ".ssh": "SSH keys", ".gnupg": "GnuPG keys"}
_SECRET_FOLDERS |= {".docker": "a registry login configuration"}
#: ``type`` of a Google credential file (google-auth's ``_default.py`` and ``external_account.py``).
_CREDENTIAL_TYPES = {"service_account", "authorized_user", "external_account", "impersonated_service_account"}
_CREDENTIAL_TYPES |= {"external_account_authorized_user", "gdch_service_account"}
# Patterns, compiled by re on first use (a dry run without a package to build loads this module, never them).
_PEM_KEY = rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_ACCESS_TOKEN = rb"\s*ya29\.[A-Za-z0-9._~+/=-]{16,}\s*"
_TYPE_FIELD = rb'"type"\s*:\s*"([a-z_]+)"'

_credential_files: set[str] = set()


def add_credential_file(path: str | os.PathLike[str]) -> None:
    """Remember a file mlsubmit reads a credential from (``--access-token-file``): it never ships."""
    _credential_files.add(os.path.abspath(os.fspath(path)))


class Credentials:
    """The credential files (by path or inode) and folders mlsubmit and its libraries read."""

    def __init__(self, within: Path | None = None) -> None:
        env = os.environ
        files = set(_credential_files) | {p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p}
        names = ("GOOGLE_APPLICATION_CREDENTIALS", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")
        files |= {env[name] for name in names if env.get(name)}
        self.files: set[str] = set()
        self.inodes: set[tuple[int, int]] = set()
        for path in sorted(files):
            real = os.path.realpath(os.path.abspath(path))
            try:
                info = os.stat(real)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                self.files.add(real)
                self.inodes.add((info.st_dev, info.st_ino))
        config = env.get("CLOUDSDK_CONFIG")
        folder = os.path.realpath(os.path.abspath(config)) if config else ""
        inside = os.path.realpath(within) if within is not None else ""
        self.folders = [folder] if folder and not _under(inside, folder, True) else []

    def holds(self, path: Path, inode: tuple[int, int] | None = None) -> bool:
        """Whether ``path`` is one of the credential files or inside a credential folder."""
        if inode is not None and inode in self.inodes:
            return True
        real = os.path.realpath(path)
        return real in self.files or any(_under(real, f) for f in self.folders)


def _under(path: str, folder: str, itself: bool = False) -> bool:
    return (itself and path == folder) or path.startswith(folder.rstrip(os.sep) + os.sep)


def reason_by_name(rel: str) -> str | None:
    """Why the file at ``rel`` (posix, relative to the package's parent) never ships, by its name, or None."""
    parts = PurePosixPath(rel).parts
    name = parts[-1] if parts else ""
    for index, folder in enumerate(parts[:-1]):
        if folder in _SECRET_FOLDERS:
            return f"inside {folder}/, {_SECRET_FOLDERS[folder]}"
        if folder == ".config" and index + 1 < len(parts) - 1 and parts[index + 1] == "gcloud":
            return "inside .config/gcloud/, gcloud's configuration and credentials"
    if name in _SECRET_NAMES:
        return _SECRET_NAMES[name]
    if (name.startswith(".env.") or name.endswith(".env")) and not name.endswith(_ENV_TEMPLATES):
        return "an environment file"  # .env.production, prod.env
    return _SECRET_SUFFIXES.get(PurePosixPath(name).suffix.lower())


def reason_by_content(head: bytes) -> str | None:
    """Why a file beginning with ``head`` (its first :data:`SNIFF_BYTES`) never ships, by its content, or None."""
    match = re.search(_TYPE_FIELD, head)
    if match and match.group(1).decode() in _CREDENTIAL_TYPES:
        try:
            data = json.loads(head.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("type") in _CREDENTIAL_TYPES:
            kind = str(data["type"]).replace("_", " ")
            return "a service-account key" if kind == "service account" else f"a Google {kind} credential"
    if re.search(_PEM_KEY, head):
        return "a PEM private key"
    if re.fullmatch(_ACCESS_TOKEN, head):
        return "an OAuth access token"
    return None


def reason(
    rel: str,
    path: Path,
    credentials: Credentials,
    inode: tuple[int, int] | None = None,
    head: bytes | None = None,
) -> str | None:
    """Why ``path`` (``rel`` in the package) never ships: by name, as a credential file, by ``head``."""
    found = reason_by_name(rel)
    if found is None and credentials.holds(path, inode):
        found = "a credential file mlsubmit reads"
    if found is None and head is not None:
        found = reason_by_content(head)
    return found


def refuse_archive(package: Path) -> None:
    """PackagingError when a ``--packages`` archive the user built holds what never ships."""
    import tarfile
    import zipfile

    found: dict[str, str] = {}

    def sniff(name: str, head: bytes) -> None:  # each member checked as it is read: memory stays one head
        if why := reason_by_name(name) or reason_by_content(head):
            found[name] = why

    try:
        if zipfile.is_zipfile(package):
            with zipfile.ZipFile(package) as zipped:
                for item in (i for i in zipped.infolist() if not i.is_dir()):
                    with zipped.open(item) as handle:
                        sniff(item.filename, handle.read(SNIFF_BYTES))
        elif tarfile.is_tarfile(package):
            with tarfile.open(package, mode="r:*") as tar:
                for member in (m for m in tar if m.isfile()):
                    if (member_file := tar.extractfile(member)) is not None:
                        sniff(member.name, member_file.read(SNIFF_BYTES))
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile):
        pass
    if found:
        raise PackagingError(
            f"--packages {package} holds what never ships: {_listing(found, 5)}. mlsubmit does not rewrite a "
            "package you built: rebuild it without them (the job authenticates as its service account)."
        )


def _listing(found: Mapping[str, str], most: int | None = None) -> str:
    # A file name may hold escapes or bidi marks: shown quoted and escaped then, never raw on a terminal.
    shown = sorted(found.items())[:most]
    return "; ".join(f"{n if n.isprintable() else repr(n)} ({why})" for n, why in shown)


def tell(left_out: Mapping[str, str], where: str) -> None:
    """One warning on stderr naming each file left out of ``where`` and why (never a byte of its content)."""
    if not left_out:
        return
    import logging  # only when something is left out: a dry run otherwise never loads it

    message = "left out of %s, as secrets never ship: %s. The job authenticates as its service account; a "
    message += "trainer that needs one of these values should get it another way (job args, Secret Manager). "
    logging.getLogger(__name__).warning(
        message + "List the files in .mlsubmitignore to silence this.", where, _listing(left_out)
    )
