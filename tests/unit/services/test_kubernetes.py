"""The Kubernetes path costs nothing elsewhere: a dry run for ml or Vertex AI, in a fresh process, loads no module
of it (docs/kubernetes.md "Why our own client")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import MLSUBMIT_ROOT

PROBE = """
import json, runpy, sys
sys.argv = ["mlsubmit", *json.loads(sys.argv[1])]
try:
    runpy.run_module("mlsubmit", run_name="__main__")
except SystemExit as done:
    code = done.code
print("MODULES=" + json.dumps([m for m in sys.modules if "kube" in m or m.startswith(("kmock", "aiohttp"))]))
"""
KUBE_MODULES = (
    "mlsubmit.services.kubernetes",
    "mlsubmit.cli.kubernetes",
    "mlsubmit.follow.kubernetes",
    "mlsubmit.submit.kubernetes",
)


@pytest.mark.parametrize("target", ["ml", "vertex", "kubernetes"])
def test_a_dry_run_loads_the_kubernetes_path_only_for_kubernetes(tmp_path: Path, target: str) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "trainingInput:\n  scaleTier: BASIC\n  region: us-central1\n  masterConfig: {imageUri: gcr.io/p/t:1}\n"
    )
    args = ["training", "job_1", "--config", str(config), "--target", target, "--dry-run"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(MLSUBMIT_ROOT), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    line = [x for x in done.stdout.splitlines() if x.startswith("MODULES=")]
    assert line, done.stderr
    loaded = json.loads(line[0].removeprefix("MODULES="))
    if target == "kubernetes":
        assert "mlsubmit.cli.kubernetes" in loaded
        assert "mlsubmit.services.kubernetes.client" not in loaded  # a dry run sends nothing
    else:
        assert not [m for m in loaded if m.startswith(KUBE_MODULES)], loaded
