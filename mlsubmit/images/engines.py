"""Local image engines behind :class:`~mlsubmit.images.image.Builder`: the docker, podman and buildah CLIs.

docs/containers.md. Each builds the unpacked context for ``linux/amd64`` under the content tag, pushes it and
returns the manifest digest the registry now serves. buildah runs rootless-style, with no daemon: vfs storage
and ``--isolation chroot`` (it works in containers and CI runners where overlay mounts and user namespaces do
not). podman and buildah push to a loopback registry with ``--tls-verify=false``, as docker does by default for
127.0.0.0/8; any other registry is spoken to over TLS.

Output is streamed line by line (each line bounded), the last lines are kept for the error message, and every
process runs under :mod:`mlsubmit.proc.processes`, so nothing outlives the command. A missing engine or a daemon
that does not answer is one line naming the way out (``--builder cloud-build``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mlsubmit.errors import BuilderUnavailableError, ImageBuildError, PackagingError
from mlsubmit.images.image import Builder, ImageSpec
from mlsubmit.job.imageref import is_loopback, split_repository
from mlsubmit.job.vocab import BUILDERS, ENGINES
from mlsubmit.proc.processes import run_bound, run_streamed, temporary_directory

TAIL_LINES = 40  # lines of a failed build shown in its error
PROBE_SECONDS = 15.0  # a daemon socket that accepts but never answers must not hang the command
#: buildah's storage: vfs copies layers instead of mounting them (no overlay, no fuse), which works anywhere.
BUILDAH_ARGS = ("--storage-driver", "vfs")
_PUSHED_DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
WAY_OUT = "pass --builder cloud-build to build on Google Cloud instead"


@dataclass
class LocalEngine:
    """One engine CLI. ``global_args`` go before every subcommand (buildah's storage; tests add ``--root``)."""

    name: str
    executable: str
    global_args: tuple[str, ...] = ()
    output: Callable[[str], None] = field(default=lambda line: None)
    env: Mapping[str, str] | None = None

    def command(self, *args: str) -> list[str]:
        return [self.executable, *self.global_args, *args]

    def _tls(self, host: str) -> list[str]:
        return ["--tls-verify=false"] if self.name != "docker" and is_loopback(host) else []

    # --- Builder -----------------------------------------------------------------------------------------

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        """Build ``spec.tagged`` from the context, push it, and return its manifest digest."""
        with temporary_directory("mlsubmit-image-") as tmp:
            self._build(spec, context_tar, Path(tmp))
            return self._push(spec, Path(tmp, "digest"))

    def build_local(self, spec: ImageSpec, context_tar: Path) -> bool:
        """Build ``spec.tagged`` into this engine's own storage only (no registry), unless it is already
        there; whether it was built. ``local train --build-image`` without ``--output-image-uri``."""
        if self.has_image(spec.tagged):
            return False
        with temporary_directory("mlsubmit-image-") as tmp:
            self._build(spec, context_tar, Path(tmp))
        return True

    def _build(self, spec: ImageSpec, context_tar: Path, tmp: Path) -> None:
        context = tmp / "context"
        unpack_context(context_tar, context)
        if self.name == "buildah":
            build = self.command("bud", "--isolation", "chroot")
        else:
            build = self.command("build")
        build += ["--platform", spec.platform, "-t", spec.tagged, str(context)]
        self._run(build, f"{self.name} build of {spec.tagged}")

    def has_image(self, ref: str) -> bool:
        """Whether this engine's storage holds ``ref`` (nothing is pulled)."""
        check = ["inspect", "--type", "image"] if self.name == "buildah" else ["image", "inspect"]
        done = run_bound(
            self.command(*check, ref), env=self.env, stdin=subprocess.DEVNULL, capture_output=True
        )
        return bool(done.returncode == 0)

    def _push(self, spec: ImageSpec, digest_file: Path) -> str:
        host, _ = split_repository(spec.repository)
        if self.name == "docker":  # no --digestfile: docker push prints "TAG: digest: sha256:... size: N"
            lines = self._run(self.command("push", spec.tagged), f"docker push of {spec.tagged}")
            found = [m.group(1) for line in lines for m in [_PUSHED_DIGEST.search(line)] if m]
            digest = found[-1] if found else ""
        else:
            push = self.command("push", *self._tls(host), "--digestfile", str(digest_file), spec.tagged)
            self._run(push, f"{self.name} push of {spec.tagged}")
            try:
                digest = digest_file.read_text(encoding="ascii", errors="replace")[:100].strip()
            except OSError:
                digest = ""
        if not _DIGEST.fullmatch(digest):
            raise ImageBuildError(
                f"{self.name} pushed {spec.tagged} but did not say its digest; push it again, or {WAY_OUT}"
            )
        return digest

    def _run(self, argv: Sequence[str], what: str) -> list[str]:
        tail: deque[str] = deque(maxlen=TAIL_LINES)

        def line(text: str) -> None:
            tail.append(text)
            self.output(text)

        try:
            status = run_streamed(argv, line, env=self.env)
        except OSError as exc:
            raise BuilderUnavailableError(f"cannot run {argv[0]}: {exc.strerror or exc}; {WAY_OUT}") from exc
        if status != 0:
            last = "\n".join(tail) or "(it printed nothing)"
            raise ImageBuildError(f"{what} failed (exit {status}); its last lines:\n{last}")
        return list(tail)


def unpack_context(context_tar: Path, into: Path) -> None:
    """Unpack a context tar written by :func:`~mlsubmit.images.context.plan_image` (regular files only)."""
    into.mkdir(parents=True)
    try:
        with tarfile.open(context_tar, mode="r:gz") as tar:
            members = tar.getmembers()
            if any(not m.isfile() for m in members):
                raise PackagingError(f"{context_tar.name}: a build context holds only regular files")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, members=members, filter="data")
            else:  # Python < 3.10.12: the names were checked when mlsubmit wrote this tar
                tar.extractall(into, members=members)
    except (tarfile.TarError, OSError) as exc:
        raise PackagingError(f"cannot unpack the build context {context_tar.name}: {exc}") from exc


def engine(name: str, *, output: Callable[[str], None], env: Mapping[str, str] | None = None) -> LocalEngine:
    """The engine ``name`` if its CLI is on PATH, else BuilderUnavailableError naming the way out."""
    path = shutil.which(name, path=None if env is None else env.get("PATH"))
    if path is None:
        raise BuilderUnavailableError(f"--builder {name}: {name} is not installed (not on PATH); {WAY_OUT}")
    extra = BUILDAH_ARGS if name == "buildah" else ()
    return LocalEngine(name, path, extra, output, env)


def probe(found: LocalEngine) -> str | None:
    """None when the engine answers; else why not (a daemon that is down, a broken install), one line."""
    check = ["version"] if found.name != "docker" else ["version", "--format", "{{.Server.Version}}"]
    try:
        done = run_bound(
            found.command(*check),
            env=found.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
        )
    except OSError as exc:
        return str(exc.strerror or exc)
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_SECONDS:g} s"
    if done.returncode == 0:
        return None
    text = (done.stderr or done.stdout or b"").decode("utf-8", errors="replace").strip().splitlines()
    return (text[-1][:300] if text else f"exit status {done.returncode}") + (
        " (is its daemon running?)" if found.name == "docker" else ""
    )


def answering(
    name: str, *, output: Callable[[str], None], env: Mapping[str, str] | None = None
) -> LocalEngine:
    """:func:`engine`, checked to answer (a docker CLI with no daemon behind it does not)."""
    found = engine(name, output=output, env=env)
    problem = probe(found)
    if problem is not None:
        raise BuilderUnavailableError(f"--builder {name}: {name} does not answer: {problem}; {WAY_OUT}")
    return found


def select_builder(
    choice: str,
    *,
    cloud_build: Callable[[], Builder],
    output: Callable[[str], None],
    log: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    doing: str = "Building the image",
) -> Builder:
    """The builder for ``--builder CHOICE``; ``auto`` is the first local engine that answers, else Cloud Build.
    The choice is told through ``log`` (``doing`` words what it is chosen for)."""
    if choice == "cloud-build":
        return cloud_build()
    if choice in ENGINES:
        return answering(choice, output=output, env=env)
    if choice != "auto":
        raise BuilderUnavailableError(f"--builder {choice!r}: choose one of {', '.join(BUILDERS)}")
    tried = []
    for name in ENGINES:
        try:
            found = answering(name, output=output, env=env)
        except BuilderUnavailableError:
            tried.append(name)
            continue
        log(f"{doing} with {name} (--builder auto: the first local engine that answers).")
        return found
    log(f"{doing} with Cloud Build (--builder auto: no local engine answers: {', '.join(tried)}).")
    return cloud_build()
