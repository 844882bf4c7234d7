"""Real container parts for the image tests: a private image store, a Debian base image made offline, and a
Docker registry on 127.0.0.1 (docs/containers.md). Registered through ``pytest_plugins`` in tests/conftest.py.

* ``container_storage``: a storage.conf (vfs driver, graph and run roots in a session folder, removed at the
  end) that ``CONTAINERS_STORAGE_CONF`` points buildah and podman at, so tests never touch the machine's store;
  the folder is in /dev/shm where that memory has room: vfs copies the whole rootfs for every build and
  container, which in memory takes less than half the time it takes on disk (and removing it, none);
* ``base_image``: ``mmdebstrap --variant=essential --include=python3-minimal,python3-pip bookworm`` (30-50 s),
  kept across runs in a folder of the temp dir named by the hash of the command (``MLSUBMIT_TEST_IMAGE_CACHE``
  moves it), then ``podman import``-ed into the session's store (about 10 s);
* ``loopback_registry``: Debian's ``docker-registry serve`` on a free 127.0.0.1 port, no auth block.

Each skips cleanly (the reason says which tool) where the tool is absent or cannot work on the machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlsubmit.images import BaseWanted, ImageSpec, plan_image
from mlsubmit.images.engines import BUILDAH_ARGS, LocalEngine
from mlsubmit.sdist.build import build_sdist

# No apt, docs, manuals or translations: every layer and every container is a full copy of the rootfs with vfs,
# so its size (about 170 MB instead of 240 MB) is paid on every build, push and run.
MMDEBSTRAP = [
    "mmdebstrap",
    "--variant=essential",
    "--include=python3-minimal,python3-pip",
    *(f"--dpkgopt=path-exclude=/usr/share/{folder}/*" for folder in ("doc", "man", "locale", "info")),
    "bookworm",
]
BASE_NAME = "localhost/mlsubmit-test-base:bookworm"
CACHE_ENV = "MLSUBMIT_TEST_IMAGE_CACHE"
# A session's store peaks near 1.6 GB (every build and replica container is a copy of its image): it goes to
# memory only where more than twice that is free.
MEMORY_STORE = Path("/dev/shm")
MEMORY_STORE_ROOM = 4 << 30


def _need(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (apt-get install {' '.join(missing)})")


@dataclass(frozen=True)
class Storage:
    """A private containers/storage configuration and the environment that selects it."""

    conf: Path
    env: dict[str, str]

    def engine(self, output: list[str] | None = None) -> LocalEngine:
        """buildah on this store, its output lines collected in ``output``."""
        sink = output.append if output is not None else (lambda line: None)
        path = shutil.which("buildah")
        assert path is not None
        return LocalEngine("buildah", path, BUILDAH_ARGS, sink, self.env)


@pytest.fixture(scope="session")
def container_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Storage]:
    _need("buildah")
    root = _in_memory() or tmp_path_factory.mktemp("containers")
    conf = root / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{root / "graph"}"\nrunroot = "{root / "run"}"\n',
        encoding="utf-8",
    )
    env = {**os.environ, "CONTAINERS_STORAGE_CONF": str(conf)}
    yield Storage(conf, env)
    shutil.rmtree(root, ignore_errors=True)  # vfs keeps a full copy per layer: hundreds of MB


def _in_memory() -> Path | None:
    """A fresh folder in /dev/shm, or None where it is missing or short of room. The folders of sessions that
    were killed before their teardown are removed first: memory is not cleaned up by anyone else."""
    prefix = "mlsubmit-test-containers-"
    try:
        for stale in MEMORY_STORE.glob(f"{prefix}*-*"):
            pid = stale.name[len(prefix) :].split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
        if shutil.disk_usage(MEMORY_STORE).free < MEMORY_STORE_ROOM:
            return None
        return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=MEMORY_STORE))
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rootfs() -> Path:
    """The bookworm rootfs tar, made once per machine (a lock keeps two runs from making it together)."""
    key = hashlib.sha256(" ".join(MMDEBSTRAP).encode()).hexdigest()[:16]
    folder = Path(os.environ.get(CACHE_ENV) or tempfile.gettempdir()) / f"mlsubmit-test-rootfs-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    tar = folder / "rootfs.tar"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not tar.is_file():
            partial = folder / "rootfs.partial.tar"  # mmdebstrap picks the format by extension
            done = subprocess.run(
                [*MMDEBSTRAP, str(partial)], capture_output=True, text=True, timeout=600, check=False
            )
            if done.returncode != 0:
                shutil.rmtree(partial, ignore_errors=True) if partial.is_dir() else partial.unlink(
                    missing_ok=True
                )
                pytest.skip(f"mmdebstrap cannot make a base image here: {done.stderr.strip()[-300:]}")
            partial.replace(tar)
    return tar


@pytest.fixture(scope="session")
def base_image(container_storage: Storage) -> str:
    """A local image with Debian's python3 and pip, in ``container_storage``."""
    _need("mmdebstrap", "podman")
    tar = _rootfs()
    done = subprocess.run(
        ["podman", "--storage-driver", "vfs", "import", str(tar), BASE_NAME],
        capture_output=True,
        text=True,
        env=container_storage.env,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"podman import cannot work here: {done.stderr.strip()[-300:]}")
    return BASE_NAME


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def loopback_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a running Docker registry (storage in a session folder)."""
    _need("docker-registry")
    root = tmp_path_factory.mktemp("registry")
    port = _free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n",
        encoding="utf-8",
    )
    log = open(root / "registry.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        ["docker-registry", "serve", str(config)], stdout=log, stderr=log, start_new_session=True
    )
    try:
        ends = time.monotonic() + 15
        while True:
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer,
            ):
                if answer.status == 200:
                    break
            if proc.poll() is not None or time.monotonic() > ends:
                pytest.skip(f"docker-registry did not start: {(root / 'registry.log').read_text()[-300:]}")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def plan_package_image(workdir: Path, package: Path, repository: str, base: str) -> tuple[ImageSpec, Path]:
    """The image plan of the trainer ``package`` (its sdist built under ``workdir``, module ``trainer.task``) on
    ``base``, pushed to ``repository``."""
    return plan_image(
        module="trainer.task",
        sdist=build_sdist(package, workdir / "sdist"),
        packages=(),
        base=BaseWanted(base_image=base),
        repository=repository,
        workdir=workdir,
    )
