"""The estimate (targets.cost) and the shipped price table (targets.prices): golden figures, coverage, order."""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsubmit.errors import UsageError
from mlsubmit.targets import price_seed
from mlsubmit.targets.cost import estimate
from mlsubmit.targets.prices import SHIPPED, load, parse, read_table, shape, stale_warning
from mlsubmit.targets.vertex_locations import REGIONS
from mlsubmit.targets.vertex_tables import FLEX_START_GPUS, GPU_MACHINES, TRAINING_MACHINES

TABLE = load()


def custom_job(*pools: dict[str, Any], **scheduling: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"workerPoolSpecs": list(pools)}
    if scheduling:
        spec["scheduling"] = scheduling
    return {"displayName": "j", "jobSpec": spec}


def pool(machine: str, replicas: int = 1, gpu: str | None = None, gpus: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine}
    if gpu:
        spec.update(acceleratorType=gpu, acceleratorCount=gpus)
    return {"machineSpec": spec, "replicaCount": str(replicas)}


def test_golden_n1_standard_4_with_one_t4_in_us_central1() -> None:
    found = estimate(
        custom_job(pool("n1-standard-4", gpu="NVIDIA_TESLA_T4", gpus=1)), TABLE, region="us-central1"
    )
    assert round(found.usd_per_hour or 0, 8) == 0.62099885
    assert found.timeout_hours == 168
    assert found.as_dict()["upperBound"] == 104.33
    assert "$0.62099885/h; at most $104.33 in 168 h" in found.line()


def test_custom_tier_chief_two_workers_one_ps_summed_by_hand() -> None:
    ti = {
        "scaleTier": "CUSTOM",
        "masterType": "n1-highmem-8",
        "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_V100", "count": "2"}},
        "workerCount": "2",
        "workerType": "n1-standard-16",
        "parameterServerCount": "1",
        "parameterServerType": "n1-highcpu-16",
        "region": "europe-west4",
        "scheduling": {"maxRunningTime": "36000s"},
    }
    rate = {  # europe-west4 on-demand rows of the shipped table
        key: usd
        for _region, key, usage, usd, _read, _src in json.loads((SHIPPED / "europe-west4.json").read_text())[
            "rows"
        ]
        if usage == "on-demand"
    }
    cpu, gib, v100 = rate["vcpu:n1"], rate["gib:n1"], rate["gpu:NVIDIA_TESLA_V100"]
    chief = 8 * cpu + 52 * gib + 2 * v100  # n1-highmem-8: 8 vCPUs, 52 GiB
    workers = 2 * (16 * cpu + 60 * gib)  # n1-standard-16: 16 vCPUs, 60 GiB
    ps = 16 * cpu + 14.4 * gib  # n1-highcpu-16: 16 vCPUs, 14.4 GiB
    found = estimate({"trainingInput": ti}, TABLE, region="europe-west4", expected_hours=3)
    assert found.usd_per_hour == pytest.approx(chief + workers + ps, abs=1e-12)
    assert [p["replicas"] for p in found.pools] == [1, 2, 1]
    assert found.upper_bound == pytest.approx((chief + workers + ps) * 10, abs=1e-9)
    assert found.expected == pytest.approx((chief + workers + ps) * 3, abs=1e-9)


def test_every_machine_and_accelerator_priced_in_every_region_on_demand_and_spot() -> None:
    for machine in TRAINING_MACHINES:
        assert shape(machine) is not None, machine
    for region in REGIONS:
        for usage in ("on-demand", "spot"):
            for machine in TRAINING_MACHINES:
                found = estimate(custom_job(pool(machine)), TABLE, region=region)
                assert found.usd_per_hour, (region, machine)
            for gpu in GPU_MACHINES:
                assert TABLE.price(region, f"gpu:{gpu}", usage), (region, gpu, usage)
        for gpu in FLEX_START_GPUS:
            assert TABLE.price(region, f"gpu:{gpu}", "flex-start"), (region, gpu)


def test_spot_never_above_on_demand() -> None:
    for (region, resource, usage), row in TABLE.rows.items():
        if usage != "on-demand":
            assert row.usd_per_hour <= TABLE.rows[region, resource, "on-demand"].usd_per_hour


def test_every_row_says_its_source_and_date() -> None:
    sources = {row.source for row in TABLE.rows.values()}
    assert any(s.startswith("pricing page") for s in sources)
    assert all(s.startswith(("pricing page", "inferred: Compute Engine x 1.15", "catalog")) for s in sources)
    assert TABLE.price("us-central1", "gpu:NVIDIA_TESLA_T4", "on-demand").source.startswith("pricing page")  # type: ignore[union-attr]
    assert TABLE.price("europe-west4", "gpu:NVIDIA_TESLA_T4", "on-demand").source.startswith("inferred")  # type: ignore[union-attr]


def test_shipped_table_is_what_the_seed_makes() -> None:
    made = price_seed.files()
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted(made)
    for name, content in made.items():
        assert json.loads((SHIPPED / name).read_text()) == json.loads(json.dumps(content)), name
    assert {
        region for region, _r, _u in TABLE.rows
    } == REGIONS  # every Vertex AI training region, and only those


def test_a_region_the_index_does_not_list_is_never_a_file_name() -> None:
    assert TABLE.price("../prices/us-central1", "vcpu:n1", "on-demand") is None
    assert TABLE.price("index", "vcpu:n1", "on-demand") is None


def test_spot_flex_start_and_tuning() -> None:
    a100 = pool("a2-highgpu-1g", gpu="NVIDIA_TESLA_A100", gpus=1)
    on_demand = estimate(custom_job(a100), TABLE, region="us-central1")
    spot = estimate(custom_job(a100, strategy="SPOT"), TABLE, region="us-central1")
    flex = estimate(custom_job(a100, strategy="FLEX_START", timeout="7200s"), TABLE, region="us-central1")
    assert spot.usage == "spot" and flex.usage == "flex-start"
    assert spot.usd_per_hour < on_demand.usd_per_hour  # type: ignore[operator]
    assert flex.timeout_hours == 2
    trial = custom_job(pool("n1-standard-4"), timeout="3600s")["jobSpec"]
    tuning = estimate(
        {"trialJobSpec": trial, "maxTrialCount": 10, "parallelTrialCount": 3}, TABLE, region="us-central1"
    )
    assert tuning.upper_bound == pytest.approx(tuning.usd_per_hour * 10)  # type: ignore[operator]
    assert tuning.as_dict()["wallHours"] == 4  # 4 rounds of at most 3 trials, an hour each
    assert "for 10 trials, 3 at a time" in tuning.line()


def test_persistent_resource_and_reservation_are_zero_marginal() -> None:
    body = custom_job(pool("n1-standard-4"))
    body["jobSpec"]["persistentResourceId"] = "pr-1"
    found = estimate(body, TABLE, region="us-central1")
    assert found.upper_bound == 0 and "persistent resource pr-1" in found.line()
    reserved = pool("n1-standard-4")
    reserved["machineSpec"]["reservationAffinity"] = {"reservationAffinityType": "SPECIFIC_RESERVATION"}
    assert "reservation" in (estimate(custom_job(reserved), TABLE, region="us-central1").reason or "")


@pytest.mark.parametrize(
    ("body", "region", "said"),
    [
        (custom_job(pool("ct5lp-hightpu-4t")), "us-central1", "machine ct5lp-hightpu-4t is not in the price"),
        (custom_job(pool("n1-standard-4")), "mars-north1", "vcpu:n1 on-demand in mars-north1"),
        (custom_job(pool("n1-standard-4")), None, "no region"),
        ({"trainingInput": {"scaleTier": "BASIC_TPU"}}, "us-central1", "BASIC_TPU (TPU) is not priced"),
    ],
)
def test_what_cannot_be_priced_is_said_never_zero(
    body: dict[str, Any], region: str | None, said: str
) -> None:
    found = estimate(body, TABLE, region=region)
    assert found.usd_per_hour is None and found.upper_bound is None
    assert said in found.line() and found.as_dict()["upperBound"] is None


@settings(max_examples=60, deadline=None)
@given(
    machine=st.sampled_from(sorted(m for m in TRAINING_MACHINES if m.startswith("n1-"))),
    replicas=st.integers(1, 50),
    gpus=st.sampled_from([1, 2, 4]),
    hours=st.integers(1, 500),
    region=st.sampled_from(sorted(REGIONS)),
    usage=st.sampled_from(["STANDARD", "SPOT"]),
)
def test_cost_monotone_in_replicas_accelerators_and_hours(
    machine: str, replicas: int, gpus: int, hours: int, region: str, usage: str
) -> None:
    def bound(n: int, g: int, h: int) -> float:
        job = custom_job(pool(machine, n, "NVIDIA_TESLA_T4", g), strategy=usage, timeout=f"{h * 3600}s")
        found = estimate(job, TABLE, region=region).upper_bound
        assert found is not None
        return found

    base = bound(replicas, gpus, hours)
    assert bound(replicas + 1, gpus, hours) > base
    assert bound(replicas, gpus * 2, hours) > base
    assert bound(replicas, gpus, hours + 1) > base


def test_team_table_over_the_shipped_one(tmp_path: Path) -> None:
    own = tmp_path / "contract.json"
    own.write_text(
        json.dumps(
            {
                "format": 1,
                "read": "2026-11-01",
                "rows": [["us-central1", "gpu:NVIDIA_TESLA_T4", "on-demand", 0.3, "2026-11-01", "contract"]],
            }
        )
    )
    table = load(str(own))
    found = estimate(
        custom_job(pool("n1-standard-4", gpu="NVIDIA_TESLA_T4", gpus=1)), table, region="us-central1"
    )
    assert found.usd_per_hour == pytest.approx(0.51849885)
    assert table.price("us-central1", "gpu:NVIDIA_TESLA_T4", "on-demand").source == "contract"  # type: ignore[union-attr]
    from_env = load(env={"MLSUBMIT_PRICES": str(own)}).price(
        "us-central1", "gpu:NVIDIA_TESLA_T4", "on-demand"
    )
    assert from_env is not None and from_env.usd_per_hour == 0.3


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{", "not JSON"),
        ('{"format": 2, "rows": []}', "not a price table"),
        ('{"format": 1, "read": "yesterday", "rows": []}', "$.read: 'yesterday' is not a date"),
        (
            '{"format": 1, "read": "2026-01-01", "rows": [["r", "x", "often", 1, "2026-01-01", "s"]]}',
            "$.rows[0]: usage 'often'",
        ),
        (
            '{"format": 1, "read": "2026-01-01", "rows": [["r", "x", "spot", -1, "2026-01-01", "s"]]}',
            "$.rows[0]: usd_per_hour -1",
        ),
        ('{"format": 1, "read": "2026-01-01", "rows": [["r"]]}', "$.rows[0]: want [region"),
    ],
)
def test_bad_team_table_is_one_line_naming_the_file(tmp_path: Path, content: str, said: str) -> None:
    own = tmp_path / "prices.json"
    own.write_text(content)
    with pytest.raises(UsageError) as err:
        read_table(own)
    assert str(own) in str(err.value) and said in str(err.value)


@pytest.mark.timeout(10)
def test_a_team_table_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "prices.json"
    os.mkfifo(fifo)
    with pytest.raises(
        UsageError, match=r"prices.json: is a FIFO \(named pipe\), not a regular file; pass a price"
    ):
        read_table(fifo)


def test_stale_table_warns() -> None:
    table = parse({"format": 1, "read": "2026-01-01", "rows": []}, "t.json")
    assert stale_warning(table.read, date(2026, 3, 1)) is None
    assert "days ago" in (stale_warning(table.read, date(2026, 6, 1)) or "")
