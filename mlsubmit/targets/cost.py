"""What a job costs before it runs (docs/cost.md): per pool, replicas x (vCPUs and GiB at the family's rates +
GPUs) from the dated price table; the upper bound runs every trial to the timeout (else 7 days). A persistent
resource or reservation costs $0 marginal; what the table cannot price is said, never counted as $0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsubmit.job.values import api_duration_nanos
from mlsubmit.job.vocab import (
    LEGACY_MACHINE_TYPES,
    ROLE_BY_KEY,
    TIER_POOLS,
    as_dict,
    replica_counts,
    scale_tier,
)
from mlsubmit.targets.prices import PriceTable, shape
from mlsubmit.targets.vertex_locations import count, job_spec

DEFAULT_TIMEOUT_HOURS = 168.0  # 7 days: ml v1 maxRunningTime's and Vertex AI timeout's default
_STRATEGY_USAGE = {"SPOT": "spot", "FLEX_START": "flex-start"}


def usd(value: float) -> str:
    """Dollars for people: ``$104.33`` (floats: a dry run loads no ``decimal``; estimates need no more)."""
    return f"${round(value, 2):,.2f}"


def rate(value: float) -> str:
    """Dollars per hour to the table's 8 places: ``$0.62099885/h``."""
    return f"${round(value, 8):.8f}".rstrip("0").rstrip(".") + "/h"


class Estimate:
    """A job's cost: per pool (its dry run's JSON, usdPerHour unrounded), per hour, bound, expected; ``reason``: why
    $0. (A plain class: a dataclass costs a dry run about half a millisecond, benchmarks/bench_dry_run.py.)"""

    def __init__(
        self,
        region: str | None,
        usage: str,
        pools: tuple[dict[str, Any], ...],
        timeout_hours: float,
        trials: int,
        parallel_trials: int,
        expected_hours: float | None,
        table_read: str,
        reason: str | None,
    ) -> None:
        self.region, self.usage, self.pools, self.timeout_hours = region, usage, pools, timeout_hours
        self.trials, self.parallel_trials, self.expected_hours = trials, parallel_trials, expected_hours
        self.table_read, self.reason = table_read, reason

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for p in self.pools for m in p.get("notPriced", ())))

    @property
    def usd_per_hour(self) -> float | None:
        """The job's (one trial's) $/h; None when something could not be priced."""
        if self.reason:
            return 0.0
        if self.missing or not self.pools:
            return None
        return sum(p["usdPerHour"] or 0.0 for p in self.pools)

    @property
    def upper_bound(self) -> float | None:
        """Every trial running to the timeout (None when not priced)."""
        per = self.usd_per_hour
        return None if per is None else per * self.timeout_hours * self.trials

    @property
    def expected(self) -> float | None:
        per = self.usd_per_hour
        return None if per is None or self.expected_hours is None else per * self.expected_hours * self.trials

    def as_dict(self) -> dict[str, Any]:
        """The ``cost`` object of a dry run's JSON/YAML."""
        out: dict[str, Any] = {
            "currency": "USD",
            "region": self.region,
            "usage": self.usage,
            "pools": [{**p, "usdPerHour": _num(p["usdPerHour"])} for p in self.pools],
            "usdPerHour": _num(self.usd_per_hour),
            "timeoutHours": float(self.timeout_hours),
            "upperBound": _num(self.upper_bound, 2),
        }
        if self.trials > 1:  # wallHours: rounds of parallel trials, each up to the timeout
            rounds = -(-self.trials // max(self.parallel_trials, 1))
            out.update(
                trials=self.trials, parallelTrials=self.parallel_trials, wallHours=self.timeout_hours * rounds
            )
        if self.expected_hours is not None:
            out["expectedHours"] = float(self.expected_hours)
            out["expected"] = _num(self.expected, 2)
        if self.reason:
            out["marginal"] = self.reason
        if self.missing:
            out["notPriced"] = list(self.missing)
        out["pricesRead"] = self.table_read
        return out

    def line(self) -> str:
        """The dry run's one line of text."""
        where = f"{self.region or 'no region'}, {self.usage}"
        if self.reason:
            return f"Cost: $0 marginal ({self.reason}; {where})"
        per = self.usd_per_hour
        if per is None:
            return f"Cost: not priced ({'; '.join(self.missing) or 'no pools'}; {where})"
        trials = f" for {self.trials} trials, {self.parallel_trials} at a time" if self.trials > 1 else ""
        expected = f"; expected {usd(self.expected or 0.0)} in {hours_text(self.expected_hours)}"
        expected = "" if self.expected is None else expected
        return (
            f"Cost: {rate(per)}{trials}; at most {usd(self.upper_bound or 0.0)} in "
            f"{hours_text(self.timeout_hours)} (timeout){expected} ({where}; prices read {self.table_read})"
        )


def _num(value: float | None, places: int = 8) -> float | None:
    return None if value is None else round(value, places)


def hours_text(value: float | None) -> str:
    return f"{value or 0:g} h"


def price_pool(
    table: PriceTable,
    region: str | None,
    usage: str,
    role: str,
    replicas: int,
    machine: str,
    gpu: tuple[str | None, int],
) -> dict[str, Any]:
    """One pool's $/h from the table: replicas x (vCPUs, GiB and ``gpu`` (type, count) of one replica)."""
    accelerator, accelerator_count = gpu
    out: dict[str, Any] = {"role": role, "replicas": replicas, "machineType": machine}
    if accelerator:
        out["accelerator"] = {"type": accelerator, "count": accelerator_count}
    missing: list[str] = [] if region is not None else ["no region"]
    size, kind = shape(machine), machine.split("-", 1)[0]  # the price family: n1-standard-4 -> n1
    if size is None:
        missing.append(f"machine {machine or '(none)'} is not in the price table's machine shapes")
    wanted = [(f"vcpu:{kind}", size[0]), (f"gib:{kind}", size[1])] if size else []
    if accelerator and accelerator_count > 0:
        wanted.append((f"gpu:{accelerator}", accelerator_count))
    per_replica = 0.0
    for resource, amount in wanted:
        row = table.price(region, resource, usage) if region is not None else None
        if row is not None:
            per_replica += row.usd_per_hour * amount
        elif region is not None:
            missing.append(f"{resource.removeprefix('gpu:')} {usage} in {region}")
    out["usdPerHour"] = None if missing else per_replica * replicas
    return {**out, "notPriced": missing} if missing else out


def _ml_pools(
    ti: Mapping[str, Any], table: PriceTable, region: str | None, usage: str
) -> list[dict[str, Any]]:
    """ml v1: the scale tier's pools, or CUSTOM's roles (legacy machine names as the machines they are)."""
    tier = scale_tier(ti)
    if tier not in TIER_POOLS and tier != "CUSTOM":
        pool = {"role": "master", "replicas": 1, "machineType": tier, "usdPerHour": None}
        return [{**pool, "notPriced": [f"scaleTier {tier} (TPU) is not priced"]}]
    out: list[dict[str, Any]] = []
    for role, replicas in replica_counts(ti).items():
        if tier in TIER_POOLS:
            _n, machine, implied = TIER_POOLS[tier][role]
        else:
            written = str(ti.get(ROLE_BY_KEY[role].type_field) or "")
            machine, implied = LEGACY_MACHINE_TYPES.get(written, (written, None))
        gpu: tuple[str | None, int] = implied or (None, 0)
        acc = as_dict(as_dict(ti.get(ROLE_BY_KEY[role].config_field)).get("acceleratorConfig"))
        if acc.get("type"):
            gpu = str(acc["type"]), count(acc.get("count"), 1)
        out.append(price_pool(table, region, usage, role, replicas, machine, gpu))
    return out


def _vertex_pools(
    spec: Mapping[str, Any], table: PriceTable, region: str | None, usage: str
) -> list[dict[str, Any]]:
    names = ("chief", "worker", "parameter_server", "evaluator")
    found = spec.get("workerPoolSpecs")
    out: list[dict[str, Any]] = []
    for index, pool in enumerate(found if isinstance(found, list) else []):
        if not isinstance(pool, dict) or not pool:
            continue  # an empty pool keeps the positions of the next ones
        spec = as_dict(pool.get("machineSpec"))
        role = names[index] if index < len(names) else f"pool {index}"
        gpu = str(spec.get("acceleratorType") or "") or None, count(spec.get("acceleratorCount"), 0)
        machine = str(spec.get("machineType") or "")
        out.append(price_pool(table, region, usage, role, count(pool.get("replicaCount"), 1), machine, gpu))
    return out


def _reserved(spec: Mapping[str, Any]) -> str | None:
    if spec.get("persistentResourceId"):
        return f"runs on persistent resource {spec['persistentResourceId']}, paid for whether the job runs or not"
    for pool in spec.get("workerPoolSpecs") or []:
        affinity = as_dict(as_dict(as_dict(pool).get("machineSpec")).get("reservationAffinity"))
        if affinity.get("reservationAffinityType") == "SPECIFIC_RESERVATION":
            return "consumes a reservation, paid for whether the job runs or not"
    return None


def estimate(
    body: Mapping[str, Any], table: PriceTable, *, region: str | None, expected_hours: float | None = None
) -> Estimate:
    """The cost of an ml v1 Job, a Vertex AI CustomJob or HyperparameterTuningJob body in ``region``."""
    expected = None if expected_hours is None else float(expected_hours)
    if "trainingInput" in body:
        ti = as_dict(body["trainingInput"])
        sched, usage, reason = as_dict(ti.get("scheduling")), "on-demand", None
        pools = _ml_pools(ti, table, region, usage)
        hp = as_dict(ti.get("hyperparameters"))
        trials, parallel = (hp.get("maxTrials"), hp.get("maxParallelTrials")) if hp else (1, 1)
        timeout = sched.get("maxRunningTime")
    else:
        tuning = "trialJobSpec" in body
        spec = job_spec(body)
        sched = as_dict(spec.get("scheduling"))
        usage = _STRATEGY_USAGE.get(str(sched.get("strategy") or ""), "on-demand")
        pools, reason = _vertex_pools(spec, table, region, usage), _reserved(spec)
        trials, parallel = (body.get("maxTrialCount"), body.get("parallelTrialCount")) if tuning else (1, 1)
        timeout = sched.get("timeout")
    hours = (api_duration_nanos(timeout) or 0) / 3.6e12 or DEFAULT_TIMEOUT_HOURS
    trial_counts = max(count(trials, 1), 1), max(count(parallel, 1), 1)
    return Estimate(region, usage, tuple(pools), hours, *trial_counts, expected, table.read, reason)
