"""Exec credential plugins (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-
credential-plugins), bounded in time (``MLSUBMIT_KUBE_EXEC_TIMEOUT``, default 60 s) and output (1 MiB)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from mlsubmit.errors import ExecPluginError, ServiceAnswerError
from mlsubmit.services.answers import read_json
from mlsubmit.services.kubernetes.kubeconfig import ExecSpec
from mlsubmit.services.retry import seconds_from_env

MAX_OUTPUT_BYTES = 1024 * 1024
DEFAULT_TIMEOUT_S = 60.0
TIMEOUT_ENV = "MLSUBMIT_KUBE_EXEC_TIMEOUT"
# Refresh a little before the plugin's expiry, so no request goes out with a dead token.
EXPIRY_MARGIN_S = 10.0


@dataclass(frozen=True)
class Credential:
    """What a plugin gave: a bearer token and/or a client certificate and key (PEM), and until when."""

    token: str | None
    client_cert: bytes | None
    client_key: bytes | None
    expires: float | None  # time.time() seconds; None: valid for the whole command


def _parse_time(text: str, where: str) -> float:
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ExecPluginError(
            f"{where}: status.expirationTimestamp {text[:40]!r} is not an RFC 3339 time."
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()


def parse_credential(raw: bytes, spec: ExecSpec, where: str) -> Credential:
    """The ExecCredential a plugin printed, checked: same apiVersion, a token or a certificate pair."""
    try:
        data = read_json(raw, where)  # bounded: numbers, depth (services/answers.py)
    except ServiceAnswerError:
        raise ExecPluginError(
            f"{where}: printed JSON nested too deep or with an out-of-range number, which no ExecCredential holds."
        ) from None
    if isinstance(data, str):
        raise ExecPluginError(f"{where}: printed no JSON ExecCredential.")
    if not isinstance(data, dict) or data.get("kind") != "ExecCredential":
        raise ExecPluginError(f"{where}: printed something that is not an ExecCredential.")
    if data.get("apiVersion") != spec.api_version:
        raise ExecPluginError(
            f"{where}: answered apiVersion {str(data.get('apiVersion'))[:60]!r}, the kubeconfig asks for {spec.api_version}."
        )
    status = data.get("status")
    if not isinstance(status, dict):
        raise ExecPluginError(f"{where}: the ExecCredential has no status.")
    token = status.get("token")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if token is not None and (not isinstance(token, str) or not all(" " < c < "\x7f" for c in token)):
        raise ExecPluginError(f"{where}: status.token is not one line of visible ASCII (not shown).")
    if not token and not (isinstance(cert, str) and isinstance(key, str) and cert and key):
        raise ExecPluginError(
            f"{where}: the ExecCredential holds neither a token nor a client certificate and key."
        )
    stamp = status.get("expirationTimestamp")
    return Credential(
        token=token or None,
        client_cert=cert.encode() if isinstance(cert, str) and cert else None,
        client_key=key.encode() if isinstance(key, str) and key else None,
        expires=_parse_time(str(stamp), where) if stamp else None,
    )


def run_plugin(spec: ExecSpec, env: Mapping[str, str]) -> Credential:
    """Run the plugin once (bounded) and return its credential; ExecPluginError with one clear line if not."""
    import subprocess

    from mlsubmit.proc.processes import run_bound

    seconds = seconds_from_env(env, TIMEOUT_ENV, above_zero=True) or DEFAULT_TIMEOUT_S
    where = f"{spec.source}: exec plugin {os.path.basename(spec.command)}"
    info = {"apiVersion": spec.api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    child_env = {**env, **dict(spec.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            done = run_bound(
                [spec.command, *spec.args],
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                timeout=seconds,
            )
        except FileNotFoundError:
            hint = f" {spec.install_hint}" if spec.install_hint else ""
            raise ExecPluginError(f"{where}: command not found.{hint}") from None
        except PermissionError:
            raise ExecPluginError(f"{where}: not executable.") from None
        except subprocess.TimeoutExpired:
            raise ExecPluginError(
                f"{where}: gave no credential within {seconds:g}s; it was stopped ({TIMEOUT_ENV})."
            ) from None
        out.seek(0)
        raw = out.read(MAX_OUTPUT_BYTES + 1)
        if done.returncode != 0:
            err.seek(0)
            tail = err.read(4096).decode("utf-8", "replace").strip().splitlines()
            said = f": {tail[-1][:300]}" if tail else ""
            raise ExecPluginError(f"{where}: exited with status {done.returncode}{said}")
    if len(raw) > MAX_OUTPUT_BYTES:
        raise ExecPluginError(f"{where}: printed more than {MAX_OUTPUT_BYTES} bytes; refused.")
    return parse_credential(raw, spec, where)
