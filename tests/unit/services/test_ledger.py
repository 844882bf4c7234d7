"""The run ledger's pure pieces (services.ledger): secrets out of the command line, the end line's cost."""

from __future__ import annotations

import pytest

from mlsubmit.services.ledger import REDACTED, end_record, scrub_argv


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["--api-key", "abc", "--epochs", "3"], ["--api-key", REDACTED, "--epochs", "3"]),
        (["--db-password=hunter2"], [f"--db-password={REDACTED}"]),
        (["--access-token-file", "/x/token"], ["--access-token-file", REDACTED]),
        (["--note", "ya29.a0AfB_secret"], ["--note", REDACTED]),
        (["--key", "AKIAABCDEFGHIJKLMNOP"], ["--key", REDACTED]),
        (
            ["--kms-key", "projects/p/keys/k", "--region", "us-central1"],
            ["--kms-key", "projects/p/keys/k", "--region", "us-central1"],
        ),
    ],
)
def test_secrets_are_removed_from_the_command_line(argv: list[str], shown: list[str]) -> None:
    assert scrub_argv(argv) == shown


def test_end_line_prices_the_run_by_its_times() -> None:
    job = {
        "state": "JOB_STATE_FAILED",
        "startTime": "2026-11-27T08:00:00.123Z",
        "endTime": "2026-11-27T11:00:00Z",
        "error": {"code": 3},
    }
    line = end_record("j", job, {"estimate": {"usdPerHour": 0.5}})
    assert line["state"] == "FAILED" and line["hours"] == pytest.approx(3, abs=1e-4) and line["cost"] == 1.5
    assert line["exitCode"] == 3
    assert end_record("j", {"state": "CANCELLED"}, None)["cost"] is None  # no times, no price: said, not 0
