"""Kubeconfig as kubectl reads it (https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-
kubeconfig/): ``KUBECONFIG`` merged first-wins, else ``~/.kube/config``; each problem is one line naming the file
and key; tokens are never shown."""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError

MAX_FILE_BYTES = 4 * 1024 * 1024  # a kubeconfig with dozens of clusters is a few hundred KiB
MAX_TOKEN_BYTES = 64 * 1024
MAX_EVENTS = 200_000  # YAML values; a kubeconfig with a hundred clusters has a few thousand
MAX_DEPTH = 32  # nesting levels; a kubeconfig is under 8 deep
# RFC 1123 label (kubectl's namespace rule) and the DNS-1035 label of a TFJob's name.
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


@dataclass(frozen=True)
class ExecSpec:
    """A user's ``exec`` credential plugin: what to run and with what."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = EXEC_API_VERSIONS[0]
    source: str = ""  # the file it was read from, for messages
    install_hint: str = ""


@dataclass(frozen=True)
class KubeContext:
    """One resolved context: where the API server is, how to trust it, who we are, and the namespace."""

    name: str
    server: str
    namespace: str
    source: str  # the file the context came from (messages only)
    ca_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    client_cert: bytes | None = None
    client_key: bytes | None = None
    token: str | None = field(default=None, repr=False)
    token_file: str | None = None
    exec: ExecSpec | None = None


def kubeconfig_paths(env: Mapping[str, str]) -> list[Path]:
    """``KUBECONFIG``'s paths in order (empty entries skipped), else ``$HOME/.kube/config``."""
    if value := env.get("KUBECONFIG"):
        return [Path(p) for p in value.split(os.pathsep) if p]
    return [Path(home) / ".kube" / "config"] if (home := env.get("HOME")) else []


def _load(path: Path) -> dict[str, Any] | None:
    import yaml

    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None  # kubectl skips missing KUBECONFIG entries
    except OSError as err:
        raise UsageError(f"{path}: cannot read the kubeconfig ({err.strerror}).") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{path}: the kubeconfig is larger than {MAX_FILE_BYTES} bytes; refused.")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _check_shape(data, path, loader)
        loaded = yaml.load(data, Loader=loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(
            f"{path}{where}: not a valid kubeconfig (YAML: {getattr(err, 'problem', err)})."
        ) from None
    if not isinstance(loaded, dict | None):
        raise UsageError(f"{path}: a kubeconfig is a mapping (apiVersion, clusters, contexts, users).")
    return loaded or {}


def _check_shape(data: bytes, path: Path, loader: Any) -> None:
    """Refuse nesting past MAX_DEPTH (PyYAML's composer recurses) or over MAX_EVENTS values, from events."""
    import yaml

    events = loader(data)
    depth = count = 0
    try:
        while True:
            event = events.get_event()
            count += 1
            if count > MAX_EVENTS:
                raise UsageError(f"{path}: holds more than {MAX_EVENTS} values; not a kubeconfig.")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    raise UsageError(
                        f"{path}:{line}: values nest deeper than {MAX_DEPTH} levels; not a kubeconfig."
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.StreamEndEvent):
                return
    finally:
        events.dispose()


@dataclass
class _Merged:
    """Named entries of every file, first file wins per name; each remembers the file it came from."""

    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    current: str | None = None
    files: list[Path] = field(default_factory=list)


def _named(data: dict[str, Any], key: str, inner: str, path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    entries = data.get(key) or []
    if not isinstance(entries, list):
        raise UsageError(f"{path}: {key}: expected a list of {{name, {inner}}}.")
    for i, entry in enumerate(entries):
        name, body = (entry.get("name"), entry.get(inner)) if isinstance(entry, dict) else (None, None)
        if not isinstance(name, str) or not name:
            raise UsageError(f"{path}: {key}[{i}].name: expected a non-empty string.")
        if not isinstance(body, dict | None):
            raise UsageError(f"{path}: {key}[{i}].{inner}: expected a mapping.")
        yield name, body or {}


def merge_files(paths: Sequence[Path]) -> _Merged:
    """Every file's clusters, users and contexts, the first file to name one winning (kubectl's merge)."""
    merged = _Merged()
    for path in paths:
        if (data := _load(path)) is None:
            continue
        merged.files.append(path)
        for key, inner, target in (
            ("clusters", "cluster", merged.clusters),
            ("users", "user", merged.users),
            ("contexts", "context", merged.contexts),
        ):
            for name, body in _named(data, key, inner, path):
                target.setdefault(name, (body, path))
        current = data.get("current-context")
        if merged.current is None and isinstance(current, str) and current:
            merged.current = current
    return merged


def _beside(name: Any, kubeconfig: Path) -> Path:
    """A path the kubeconfig names: ``~`` expanded, a relative one taken from the kubeconfig's folder (kubectl)."""
    path = Path(str(name)).expanduser()
    return path if path.is_absolute() else kubeconfig.parent / path


def _read(path: Path | str, limit: int, where: str) -> bytes:
    """At most ``limit + 1`` bytes of ``path``; one line naming ``where`` if it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit + 1)
    except OSError as err:
        raise UsageError(f"{where}: cannot read {path} ({err.strerror}).") from None


def _bytes_of(entry: dict[str, Any], key: str, base: Path, where: str) -> bytes | None:
    """``key-data`` (base64) or the file ``key`` (relative to the kubeconfig's folder); data wins, as kubectl."""
    if data := entry.get(f"{key}-data"):
        try:
            return base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError):
            raise UsageError(f"{where}.{key}-data: not base64.") from None
    if not (name := entry.get(key)):
        return None
    path = _beside(name, base)
    content = _read(path, MAX_FILE_BYTES, f"{where}.{key}")
    if len(content) > MAX_FILE_BYTES:
        raise UsageError(f"{where}.{key}: {path} is larger than {MAX_FILE_BYTES} bytes.")
    return content


def _exec_spec(spec: Any, path: Path, where: str) -> ExecSpec:
    if not isinstance(spec, dict) or not isinstance(spec.get("command"), str) or not spec["command"]:
        raise UsageError(f"{where}.exec.command: expected the plugin's command.")
    version = spec.get("apiVersion") or EXEC_API_VERSIONS[0]
    if version not in EXEC_API_VERSIONS:
        raise UsageError(
            f"{where}.exec.apiVersion: {version} is not supported; expected {' or '.join(EXEC_API_VERSIONS)}."
        )
    args = spec.get("args") or []
    env = spec.get("env") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"{where}.exec.args: expected a list of strings.")
    if not isinstance(env, list) or not all(isinstance(e, dict) and "name" in e for e in env):
        raise UsageError(f"{where}.exec.env: expected a list of {{name, value}}.")
    command = spec["command"]
    if os.sep in command and not Path(command).is_absolute():
        command = str(path.parent / command)  # kubectl: a relative path is relative to the kubeconfig
    return ExecSpec(
        command=command,
        args=tuple(args),
        env=tuple((str(e["name"]), str(e.get("value", ""))) for e in env),
        api_version=str(version),
        source=str(path),
        install_hint=str(spec.get("installHint") or "")[:500],
    )


def namespace_problem(namespace: str) -> str | None:
    """Why ``namespace`` is not a Kubernetes namespace name (an RFC 1123 label), or None."""
    if not DNS_LABEL.fullmatch(namespace):
        return (
            f"{namespace[:80]!r} is not a namespace name (lowercase letters, digits and '-', starting and ending "
            "with a letter or digit, at most 63 characters)"
        )
    return None


def load_context(
    env: Mapping[str, str], *, context: str | None = None, namespace: str | None = None
) -> KubeContext:
    """The context kubectl would use with the same ``KUBECONFIG``, ``--context`` and ``--namespace``; a
    UsageError (exit 2) naming the file and key for anything missing or malformed."""
    paths = kubeconfig_paths(env)
    merged = merge_files(paths)
    if not merged.files:
        shown = os.pathsep.join(str(p) for p in paths) or "(KUBECONFIG and HOME unset)"
        raise UsageError(
            f"no kubeconfig found at {shown}; set KUBECONFIG or run `gcloud container clusters get-credentials`."
        )
    name = context or merged.current
    known = ", ".join(sorted(merged.contexts)) or "none"
    if not name:
        raise UsageError(f"{merged.files[0]}: no current-context; pass --context (one of: {known}).")
    if name not in merged.contexts:
        import difflib

        close = difflib.get_close_matches(name, list(merged.contexts), n=1)
        hint = f"; did you mean {close[0]}?" if close else f" (contexts: {known})"
        raise UsageError(
            f"context {name!r} is in no kubeconfig ({os.pathsep.join(map(str, merged.files))}){hint}"
        )
    ctx, ctx_path = merged.contexts[name]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if not isinstance(cluster_name, str) or cluster_name not in merged.clusters:
        raise UsageError(
            f"{ctx_path}: context {name}: cluster {cluster_name!r} is not defined in any kubeconfig."
        )
    cluster, cluster_path = merged.clusters[cluster_name]
    where = f"{cluster_path}: clusters[{cluster_name}]"
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise UsageError(f"{where}.server: the API server URL is missing.")
    if cluster.get("proxy-url"):
        raise UsageError(
            f"{where}.proxy-url: a proxy to the API server is not supported by mlsubmit; reach the server directly."
        )
    ca = _bytes_of(cluster, "certificate-authority", cluster_path, where)
    ns = namespace or ctx.get("namespace") or "default"
    if not isinstance(ns, str):
        raise UsageError(f"{ctx_path}: context {name}: namespace must be a string.")
    if problem := namespace_problem(ns):
        source = "--namespace" if namespace else f"{ctx_path}: context {name}: namespace"
        raise UsageError(f"{source}: {problem}.")
    if user_name and (not isinstance(user_name, str) or user_name not in merged.users):
        raise UsageError(f"{ctx_path}: context {name}: user {user_name!r} is not defined in any kubeconfig.")
    user, user_path = merged.users[user_name] if user_name else ({}, ctx_path)
    uwhere = f"{user_path}: users[{user_name}]"
    if user.get("auth-provider"):  # removed from kubectl in 1.26
        raise UsageError(
            f"{uwhere}.auth-provider: auth providers are gone from kubectl (1.26); use an exec plugin such as "
            "gke-gcloud-auth-plugin (gcloud container clusters get-credentials writes it)."
        )
    token = user.get("token")
    if token is not None and not isinstance(token, str):
        raise UsageError(f"{uwhere}.token: expected a string (not shown).")
    spec = _exec_spec(user["exec"], user_path, uwhere) if user.get("exec") else None
    cert, key = (_bytes_of(user, k, user_path, uwhere) for k in ("client-certificate", "client-key"))
    if (cert is None) != (key is None):
        raise UsageError(f"{uwhere}: client-certificate and client-key go together; one of them is missing.")
    return KubeContext(
        name=name,
        server=server.rstrip("/"),
        namespace=ns,
        source=str(ctx_path),
        ca_data=ca,
        insecure=cluster.get("insecure-skip-tls-verify") is True,
        tls_server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        client_cert=cert,
        client_key=key,
        token=token or None,
        token_file=None if user.get("tokenFile") is None else str(_beside(user["tokenFile"], user_path)),
        exec=spec,
    )


def read_token_file(path: str, where: str) -> str:
    """A ``tokenFile``'s token, read on each use (projected tokens rotate), bounded, one line (never shown)."""
    raw = _read(path, MAX_TOKEN_BYTES, f"{where}.tokenFile")
    token = raw.decode("ascii", "replace").strip()
    if len(raw) > MAX_TOKEN_BYTES or not token or not all(" " < c < "\x7f" for c in token):
        raise UsageError(
            f"{where}.tokenFile: {path} does not hold one line of visible ASCII (the token is not shown)."
        )
    return token
