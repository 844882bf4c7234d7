"""The pure parts of failover (docs/getting-jobs-to-start.md): candidates, overlay, checks, classifier, backoff."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job.jobfile import check_job_file
from mlsubmit.targets.failover import (
    Candidate,
    candidate_problems,
    candidates_of,
    overlaid,
    round_delay,
)
from mlsubmit.targets.vertex_rules import vertex_rules

IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"


def job(**ti: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "region": "us-central1",
        "scaleTier": "CUSTOM",
        "masterType": "g2-standard-8",
        "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_L4", "count": "1"}},
        "packageUris": ["gs://bkt/pkg.tar.gz"],
        "pythonModule": "trainer.task",
        "scheduling": {"maxRunningTime": "3600s"},
    }
    base.update(ti)
    return {"jobId": "j", "trainingInput": base, "vertex": {"executorImageUri": IMAGE}}


def test_candidates_are_the_job_then_the_file_then_the_flag() -> None:
    body = job()
    body["vertex"]["failover"] = {
        "candidates": [
            {"region": "europe-west4", "stagingBucket": "gs://eu-bucket/"},
            {"scheduling": {"strategy": "SPOT"}},
        ]
    }
    found = candidates_of(body, ["asia-east1"])
    assert [(c.number, c.region, c.source) for c in found] == [
        (0, "us-central1", "the job"),
        (1, "europe-west4", "$.vertex.failover.candidates[0]"),
        (2, "us-central1", "$.vertex.failover.candidates[1]"),
        (3, "asia-east1", "--fallback-regions"),
    ]
    assert found[1].staging_bucket == "gs://eu-bucket"


def test_overlay_merges_objects_key_by_key_and_leaves_the_job_alone() -> None:
    body = job()
    spot = Candidate(1, "us-central1", {"scheduling": {"strategy": "SPOT"}, "masterType": "g2-standard-12"})
    out = overlaid(body, spot)
    assert out["trainingInput"]["scheduling"] == {"maxRunningTime": "3600s", "strategy": "SPOT"}
    assert out["trainingInput"]["masterType"] == "g2-standard-12"
    assert (
        body["trainingInput"]["masterType"] == "g2-standard-8"
        and "strategy" not in body["trainingInput"]["scheduling"]
    )


def test_a_candidate_breaking_a_vertex_rule_is_located_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "vertex:\n"
        "  failover:\n"
        "    candidates:\n"
        "      - region: us-central1\n"
        "        masterType: n1-standard-8\n"  # an L4 needs a g2 machine
        "        scheduling: {strategy: SPOT}\n"
    )
    file, problems = check_job_file(str(path))
    assert problems == []
    body = job()
    body["vertex"]["failover"] = file.data["vertex"]["failover"]
    found = candidate_problems(body, candidates_of(body), rules=vertex_rules(), file=file)
    assert found, "the L4 on an n1 machine must be refused"
    assert all(p.file == str(path) for p in found)
    assert any(p.line in (4, 5) and "failover candidate 1 (us-central1)" in p.message for p in found), found


@pytest.mark.parametrize(
    ("extra", "bucket", "wanted"),
    [
        ({}, "gs://us-bucket", "give it its own stagingBucket in europe-west4"),
        ({"jobDir": "gs://us-bucket/out"}, None, "give it its own jobDir in europe-west4"),
        (
            {"encryptionConfig": {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"}},
            None,
            "KMS key is in us-central1",
        ),
    ],
)
def test_region_bound_values_refuse_a_candidate_elsewhere(
    extra: dict[str, Any], bucket: str | None, wanted: str
) -> None:
    body = job(**extra)
    found = candidate_problems(
        body, candidates_of(body, ["europe-west4"]), rules=vertex_rules(), job_bucket=bucket
    )
    assert any(wanted in p.message and p.file == "--fallback-regions" for p in found), found


def test_a_candidate_with_its_own_bucket_and_job_dir_is_fine() -> None:
    body = job(jobDir="gs://us-bucket/out")
    body["vertex"]["failover"] = {
        "candidates": [
            {"region": "europe-west4", "stagingBucket": "gs://eu-bucket", "jobDir": "gs://eu-bucket/out"}
        ]
    }
    assert (
        candidate_problems(body, candidates_of(body), rules=vertex_rules(), job_bucket="gs://us-bucket") == []
    )


def test_a_reservation_in_another_region_refuses_the_candidate() -> None:
    body = job()
    body["vertex"]["reservationAffinity"] = {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/p/zones/us-central1-a/reservations/r"],
    }
    found = candidate_problems(body, candidates_of(body, ["europe-west4"]), rules=vertex_rules())
    assert any("reservation" in p.message for p in found)


def test_backoff_grows_by_1_6_to_300_with_40_percent_jitter() -> None:
    assert [round(round_delay(n, 0.5), 1) for n in range(1, 7)] == [60.0, 96.0, 153.6, 245.8, 300.0, 300.0]
    assert round_delay(1, 0.0) == pytest.approx(36.0) and round_delay(1, 0.5) == pytest.approx(60.0)
    assert round_delay(5, 0.999999) == pytest.approx(420.0, rel=1e-5)


def test_the_number_of_candidates_is_bounded() -> None:
    body = job()
    regions = [f"europe-west{n}" for n in range(1, 20)]
    (problem,) = candidate_problems(body, candidates_of(body, regions), rules=vertex_rules())
    assert "at most 16 failover candidates" in problem.message and problem.file == "--fallback-regions"


def test_each_candidate_fills_in_its_own_region_where_it_sets_no_value_of_its_own() -> None:
    body = job(jobDir="gs://acme-us-central1/out")
    body["vertex"]["failover"] = {
        "candidates": [
            {"region": "europe-west4", "jobDir": "gs://eu-{region}/run", "stagingBucket": "gs://eu-b"}
        ]
    }
    found = candidates_of(
        body, ["us-east4"], job_dir="gs://acme-{region}/out", staging_bucket="gs://s-{region}"
    )
    assert [(c.overlay.get("jobDir"), c.staging_bucket) for c in found] == [
        (None, None),
        ("gs://eu-europe-west4/run", "gs://eu-b"),
        ("gs://acme-us-east4/out", "gs://s-us-east4"),
    ]
    assert candidate_problems(body, found, rules=vertex_rules(), job_bucket="gs://s-us-central1") == []
