"""The Python API sends what the CLI sends (docs/api.md): for every config in examples/ and in the real-world
corpus (tests/corpus), for ml and Vertex AI, ``mlsubmit.api.plan`` with a mapping of flags gives the body (and
the image) `training --dry-run --format json` prints for the same flags, or refuses it with the same ERROR lines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlsubmit import api
from mlsubmit.errors import MlsubmitError
from tests.fakes.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
CASES: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "cases.yaml").read_text(encoding="utf-8"))
IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
BUCKET = "gs://api-bucket"
PACKAGES = {"packages": ["gs://api-bucket/pkgs/trainer-0.0.0.tar.gz"], "job_dir": "gs://api-bucket/out"}
# each example config with the flags its own comment (or README) gives it
EXAMPLES: dict[str, dict[str, Any]] = {
    "examples/configs/custom_tier.yaml": {
        "package_path": "examples/trainer_basic/trainer",
        "staging_bucket": BUCKET,
        "args": ["--epochs", "5"],
        "labels": {"team": "api", "run": "one"},
    },
    "examples/configs/hyperparameters.yaml": PACKAGES,
    "examples/configs/container.yaml": {"worker_count": 2, "scale_tier": "custom"},
    "examples/configs/vertex_today.yaml": {
        "package_path": "examples/trainer_tf/trainer",
        "staging_bucket": BUCKET,
        "job_dir": f"{BUCKET}/out",
    },
    "examples/trainer_tune/config.yaml": {
        "package_path": "examples/trainer_tune/trainer",
        "staging_bucket": BUCKET,
    },
    "examples/trainer_tune/grid.yaml": {
        **PACKAGES,
        "master_accelerator": {"type": "nvidia-tesla-t4", "count": 1},
    },
}


def argv(flags: Mapping[str, Any]) -> list[str]:
    """The command line of a mapping of flags (what a user types for the same job)."""
    out: list[str] = []
    for name, value in flags.items():
        if name == "args":
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            out += [flag, ",".join(value)]
        elif isinstance(value, dict):
            out += [flag, ",".join(f"{k}={v}" for k, v in value.items())]
        else:
            out += [flag, str(value)]
    return [*out, "--", *flags["args"]] if "args" in flags else out


def api_flags(cli_flags: list[str]) -> dict[str, Any]:
    """A corpus case's command-line flags (``--module-name X --packages Y``) as the API's mapping."""
    pairs = zip(cli_flags[::2], cli_flags[1::2], strict=True)
    flags = {name.removeprefix("--").replace("-", "_"): value for name, value in pairs}
    if "packages" in flags:
        flags["packages"] = flags["packages"].split(",")
    return flags


def outcome_of_cli(job_id: str, config: str, flags: Mapping[str, Any]) -> tuple[str, Any]:
    result = run_cli(["training", job_id, "--config", config, "--dry-run", "--format", "json", *argv(flags)])
    if result.exit_code != 0:
        assert result.exit_code == 2, result.output
        return "refused", [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
    printed = json.loads(result.stdout)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING: ")]
    job, image = (printed["job"], printed["image"]) if "image" in printed else (printed, None)
    return "body", (job, image, warnings)


def outcome_of_api(job_id: str, config: str, flags: Mapping[str, Any]) -> tuple[str, Any]:
    try:
        planned = api.plan(job_id, config, flags)
    except MlsubmitError as err:
        return "refused", err.report_lines()
    warnings = [f"WARNING: {w}" for w in planned.warnings]
    return "body", (json.loads(json.dumps(planned.body)), planned.image, warnings)


def same_outcome(job_id: str, config: str, flags: Mapping[str, Any]) -> str:
    cli, through_api = outcome_of_cli(job_id, config, flags), outcome_of_api(job_id, config, flags)
    assert through_api == cli
    return cli[0]


@pytest.fixture(autouse=True)
def _project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDSDK_CORE_PROJECT", "apiproj")  # --build-image names the image's repository by it


@pytest.mark.parametrize("target", ["ml", "vertex"])
def test_every_example_config_gives_the_cli_body(monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    monkeypatch.chdir(REPO)
    vertex = {"target": "vertex", "executor_image_uri": IMAGE} if target == "vertex" else {}
    seen = []
    for config, flags in EXAMPLES.items():
        builds = "vertex_today" in config or "container" in config  # an image of its own: no executor image
        extra = {"target": "vertex"} if builds and target == "vertex" else vertex
        seen.append(same_outcome("api_example", config, {**flags, **extra}))
    assert seen.count("body") >= 5, seen  # the equality is about bodies, not only about refusals


@pytest.mark.parametrize("target", ["ml", "vertex"])
def test_every_corpus_config_gives_the_cli_body(monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    monkeypatch.chdir(CORPUS)
    vertex = {"target": "vertex", "executor_image_uri": IMAGE} if target == "vertex" else {}
    seen = {}
    for name, case in CASES.items():
        cli_flags = [
            str(f)
            for f in case.get(
                "flags",
                ["--module-name", "trainer.task", "--packages", "gs://corpus-bucket/trainer-0.1.tar.gz"],
            )
        ]
        container = not cli_flags  # the image is the config's own: no executor image
        flags = {
            "region": "us-central1",
            **api_flags(cli_flags),
            **({"target": target} if container else vertex),
        }
        seen[name] = same_outcome("corpus_" + name.replace(".", "_"), name, flags)
    assert list(seen.values()).count("body") >= 12, seen


def test_flags_given_as_none_are_flags_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``None`` value is a flag not typed: the file's value stands (docs/gcloud.md)."""
    monkeypatch.chdir(REPO)
    config = "examples/configs/hyperparameters.yaml"
    left_out = api.plan("api_none", config, {**PACKAGES, "region": None, "scale_tier": None, "labels": None})
    assert left_out.body == api.plan("api_none", config, PACKAGES).body
    assert left_out.body["trainingInput"]["region"] == "us-central1"
