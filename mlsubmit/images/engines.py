"""The docker, podman and buildah CLIs behind :class:`~mlsubmit.images.image.Builder` (docs/containers.md).
buildah needs no daemon (vfs storage, ``--isolation chroot``); podman and buildah reach a loopback registry with
``--tls-verify=false`` (as docker does for 127.0.0.0/8), any other over TLS."""

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
# buildah's storage: vfs copies layers instead of mounting them (no overlay, no fuse), which works anywhere
BUILDAH_ARGS = ("--storage-driver", "vfs")
_PUSHED_DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
WAY_OUT = "pass --builder cloud-build to build on Google Cloud instead"
PROBE_COMMAND = "/mlsubmit-probe"  # absent from the probe's empty root file system
NOT_FOUND_IN_CONTAINER = 127  # podman: "the contained command cannot be found" (the runtime got that far)


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

    def quiet(self, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """The engine's answer to ``args``, captured (stdin closed)."""
        return run_bound(
            self.command(*args), env=self.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout
        )

    def tls(self, host: str) -> list[str]:
        """``--tls-verify=false`` for podman and buildah at a loopback registry (module docstring)."""
        return ["--tls-verify=false"] if self.name != "docker" and is_loopback(host) else []

    def build(self, spec: ImageSpec, context_tar: Path) -> str:
        """Build ``spec.tagged`` from the context, push it, and return its manifest digest."""
        with temporary_directory("mlsubmit-image-") as tmp:
            self._build(spec, context_tar, Path(tmp))
            return self._push(spec, Path(tmp, "digest"))

    def build_local(self, spec: ImageSpec, context_tar: Path) -> bool:
        """Build ``spec.tagged`` into the engine's own storage unless it is there: whether it was built."""
        check = ["inspect", "--type", "image"] if self.name == "buildah" else ["image", "inspect"]
        if self.quiet(*check, spec.tagged).returncode == 0:
            return False
        with temporary_directory("mlsubmit-image-") as tmp:
            self._build(spec, context_tar, Path(tmp))
        return True

    def _build(self, spec: ImageSpec, context_tar: Path, tmp: Path) -> None:
        context = tmp / "context"
        context.mkdir()
        try:  # the context tar mlsubmit wrote (images.context): regular files only
            with tarfile.open(context_tar, mode="r:gz") as tar:
                members = tar.getmembers()
                if any(not m.isfile() for m in members):
                    raise PackagingError(f"{context_tar.name}: a build context holds only regular files")
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(context, members=members, filter="data")
                else:  # Python < 3.10.12: the names were checked when mlsubmit wrote this tar
                    tar.extractall(context, members=members)
        except (tarfile.TarError, OSError) as exc:
            raise PackagingError(f"cannot unpack the build context {context_tar.name}: {exc}") from exc
        build = ["bud", "--isolation", "chroot"] if self.name == "buildah" else ["build"]
        argv = self.command(*build, "--platform", spec.platform, "-t", spec.tagged, str(context))
        self._run(argv, f"{self.name} build of {spec.tagged}")

    def _push(self, spec: ImageSpec, digest_file: Path) -> str:
        host, _ = split_repository(spec.repository)
        if self.name == "docker":  # no --digestfile: docker push prints "TAG: digest: sha256:... size: N"
            lines = self._run(self.command("push", spec.tagged), f"docker push of {spec.tagged}")
            found = [m.group(1) for line in lines for m in [_PUSHED_DIGEST.search(line)] if m]
            digest = found[-1] if found else ""
        else:
            push = self.command("push", *self.tls(host), "--digestfile", str(digest_file), spec.tagged)
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


def engine(name: str, *, output: Callable[[str], None], env: Mapping[str, str] | None = None) -> LocalEngine:
    """The engine ``name`` if its CLI is on PATH, else BuilderUnavailableError naming the way out."""
    path = shutil.which(name, path=None if env is None else env.get("PATH"))
    if path is None:
        raise BuilderUnavailableError(f"--builder {name}: {name} is not installed (not on PATH); {WAY_OUT}")
    return LocalEngine(name, path, BUILDAH_ARGS if name == "buildah" else (), output, env)


def _ask(found: LocalEngine, args: Sequence[str]) -> subprocess.CompletedProcess[bytes] | str:
    """The engine's answer to ``args`` within :data:`PROBE_SECONDS`, or why there was none."""
    try:
        return found.quiet(*args, timeout=PROBE_SECONDS)
    except OSError as exc:
        return str(exc.strerror or exc)
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_SECONDS:g} s"


def _last_line(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stderr or done.stdout or b"").decode("utf-8", errors="replace").strip().splitlines()
    return text[-1][:300] if text else f"exit status {done.returncode}"


def _run_probe(found: LocalEngine) -> str | None:
    """Whether podman can start containers: an absent command must stop at exec (exit 127)."""
    with temporary_directory("mlsubmit-probe-") as root:
        done = _ask(found, ["run", "--rm", "--rootfs", str(root), "--network", "none", PROBE_COMMAND])
    if isinstance(done, str):
        return f"it cannot start containers here ({done})"
    if done.returncode == NOT_FOUND_IN_CONTAINER:
        return None
    return f"it cannot start containers here ({_last_line(done)})"


def answering(
    name: str, *, output: Callable[[str], None], env: Mapping[str, str] | None = None
) -> LocalEngine:
    """:func:`engine`, checked to answer (a docker CLI with no daemon behind it does not)."""
    found = engine(name, output=output, env=env)
    done = _ask(found, ["version"] if name != "docker" else ["version", "--format", "{{.Server.Version}}"])
    if isinstance(done, str):
        problem: str | None = done
    elif done.returncode == 0:
        problem = _run_probe(found) if name == "podman" else None
    else:  # a daemon that is down, a broken install
        problem = _last_line(done) + (" (is its daemon running?)" if name == "docker" else "")
    if problem is not None:  # the way out: the other engines installed here, and Cloud Build
        path = None if env is None else env.get("PATH")
        others = [f"--builder {o}" for o in ENGINES if o != name and shutil.which(o, path=path)]
        way_out = f"try {' or '.join(others)}, or {WAY_OUT}" if others else WAY_OUT
        raise BuilderUnavailableError(f"--builder {name}: {name} does not answer: {problem}; {way_out}")
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
    """The builder for ``--builder CHOICE`` (``auto``: a local engine that answers, else Cloud Build)."""
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
        passed = f"; {', '.join(tried)} did not" if tried else ""
        log(f"{doing} with {name} (--builder auto: the first local engine that answers{passed}).")
        return found
    log(f"{doing} with Cloud Build (--builder auto: no local engine answers: {', '.join(tried)}).")
    return cloud_build()
