"""`mlsubmit local train --config` with a `vertex:` block (or `--target vertex`) checks the file by Vertex AI's
rules, as `validate` does: the same messages at the same file lines (docs/vertex.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.cli import RunCli, local_args

VERTEX_JOB = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: {machine}
  workerType: n1-standard-4
  workerCount: 1
vertex:
  framework: pytorch
  frameworkVersion: "2.4"
"""


def local_dry_run(run_cli: RunCli, config: str, *flags: str) -> tuple[int, str, str]:
    result = run_cli(local_args("train", "trainer", config, "--dry-run", *flags))
    return result.exit_code, result.stdout, result.stderr


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ERROR: ")]


def test_a_vertex_config_runs_locally_with_a_chief(workdir: Path, run_cli: RunCli) -> None:
    (workdir / "job.yaml").write_text(VERTEX_JOB.format(machine="n1-standard-4"), encoding="utf-8")
    code, out, err = local_dry_run(run_cli, "job.yaml")
    assert code == 0, err
    names = sorted(r["name"] for r in json.loads(out)["replicas"])
    assert names == ["chief", "worker-0"]
    assert run_cli(["validate", "job.yaml"]).exit_code == 0


def test_local_train_and_validate_apply_vertexs_rules_to_a_vertex_config(
    workdir: Path, run_cli: RunCli
) -> None:
    (workdir / "job.yaml").write_text(VERTEX_JOB.format(machine="n1-highcpu-8"), encoding="utf-8")
    code, out, err = local_dry_run(run_cli, "job.yaml")
    assert code == 2 and out == ""
    assert errors(err) == [
        "ERROR: job.yaml:3: $.trainingInput.masterType: n1-highcpu-8 is not a Vertex AI training machine type "
        "(n1-highcpu starts at 16 vCPUs, n1-standard at 4; see "
        "https://cloud.google.com/vertex-ai/docs/training/configure-compute)"
    ]
    checked = run_cli(["validate", "job.yaml"])
    assert checked.exit_code == 2 and errors(checked.stderr) == errors(err)


def test_target_ml_refuses_the_vertex_block_locally_as_validate_does(workdir: Path, run_cli: RunCli) -> None:
    (workdir / "job.yaml").write_text(VERTEX_JOB.format(machine="n1-standard-4"), encoding="utf-8")
    code, _out, err = local_dry_run(run_cli, "job.yaml", "--target", "ml")
    assert code == 2
    assert errors(err) == [
        "ERROR: job.yaml:6: $.vertex: the vertex: settings apply to --target vertex (and local train --target vertex)"
    ]
    checked = run_cli(["validate", "--target", "ml", "job.yaml"])
    assert errors(checked.stderr) == errors(err)
