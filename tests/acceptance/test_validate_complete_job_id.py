"""`validate --complete` on a file without a jobId says it is missing, not "job id None is invalid" (issue 27,
smaller items)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.cli import run_cli


def test_a_missing_job_id_is_said_missing(tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "trainingInput:\n  region: us-central1\n  pythonModule: trainer.task\n"
        "  packageUris: [gs://my-bucket/trainer-0.1.tar.gz]\n  runtimeVersion: '2.11'\n"
    )
    result = run_cli(["validate", "--complete", str(config)])
    assert result.exit_code == 2
    assert "$.jobId: is missing: a job needs an id" in result.stderr
    assert "None" not in result.stderr
