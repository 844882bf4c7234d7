"""Kubeconfig files for the ``--target kubernetes`` tests (no emulator needed: tests/fakes/kube_api.py is one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_kubeconfig(
    path: Path,
    server: str,
    *,
    user: dict[str, Any] | None = None,
    namespace: str = "default",
    context: str = "test",
    current: bool = True,
    cluster: dict[str, Any] | None = None,
) -> Path:
    """A kubeconfig at ``path`` with one cluster, user and context (JSON is YAML)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"{context}-cluster", "cluster": {"server": server, **(cluster or {})}}],
        "users": [
            {"name": f"{context}-user", "user": user if user is not None else {"token": "kube-secret-token"}}
        ],
        "contexts": [
            {
                "name": context,
                "context": {
                    "cluster": f"{context}-cluster",
                    "user": f"{context}-user",
                    "namespace": namespace,
                },
            }
        ],
    }
    if current:
        doc["current-context"] = context
    path.write_text(json.dumps(doc))
    return path
