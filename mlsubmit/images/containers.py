"""Replicas inside the training image for ``local train --image`` (docs/containers.md): each in its own container
on the host network, the job dir mounted at the same path, the image's entrypoint given the trainer's arguments
(none: ``python3 -m MODULE``), as Vertex AI runs a custom container."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mlsubmit.errors import LocalRunError
from mlsubmit.images.engines import LocalEngine

MAX_INSPECT_BYTES = 4 * 1024 * 1024


@dataclass
class ReplicaContainers:
    """The containers of one run, all removed when its block ends; :meth:`argv` runs one replica in its own."""

    engine: LocalEngine
    image: str
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    created: list[str] = field(default_factory=list)

    def argv(
        self, replica: str, env: Mapping[str, str], mounts: Sequence[str], module: str, args: Sequence[str]
    ) -> list[str]:
        """The command line running ``replica`` in a container of the image (created now for buildah)."""
        name = f"mlsubmit-{self.run_id}-{replica}"
        pull = self.engine.tls(self.image.split("/", 1)[0] if "/" in self.image else "")
        options = [f"--env={key}={value}" for key, value in sorted(env.items())]
        options += [f"--volume={path}:{path}" for path in mounts]
        if self.engine.name != "buildah":
            self.created.append(name)  # removed at the end even if --rm never ran (a killed engine)
            run = ["run", "--rm", "--name", name, "--network", "host", *pull]
            return self.engine.command(*run, *options, self.image, *args)
        self._run("from", "--name", name, "--quiet", *pull, self.image)
        self.created.append(name)
        entrypoint = self._entrypoint(name) or ["python3", "-m", module]
        return self.engine.command("run", "--isolation", "chroot", *options, name, "--", *entrypoint, *args)

    def _run(self, *args: str) -> bytes:
        done = self.engine.quiet(*args)
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["(no output)"]
            raise LocalRunError(
                f"{self.engine.name} {args[0]} {self.image} failed: {lines[-1][:300]}; check the image "
                "name and that the engine can pull it"
            )
        return bytes(done.stdout)

    def _entrypoint(self, container: str) -> list[str]:
        out = self._run("inspect", "--type", "container", container)
        try:
            entrypoint = json.loads(out[:MAX_INSPECT_BYTES])["OCIv1"]["config"].get("Entrypoint") or []
        except (ValueError, KeyError, TypeError, AttributeError):
            return []
        return [str(part) for part in entrypoint] if isinstance(entrypoint, list) else []

    def __enter__(self) -> ReplicaContainers:
        return self

    def __exit__(self, *_exc: object) -> None:
        """Remove every container of this run when the block ends, however it ends (those gone are skipped)."""
        if not self.created:
            return
        remove = ["rm"] if self.engine.name == "buildah" else ["rm", "--force"]
        with contextlib.suppress(OSError):
            self.engine.quiet(*remove, *self.created)
        self.created.clear()
