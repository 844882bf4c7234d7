"""How the shipped price table (``prices/``) was made: ``python -m mlsubmit.targets.price_seed
mlsubmit/targets/prices`` after editing the figures below (a maintainer's script; docs/cost.md cites each figure).
Each row's source says whether it was read from the pricing page or how it was inferred (SOURCES)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

from mlsubmit.targets.prices import COLUMNS
from mlsubmit.targets.vertex_tables import FLEX_START_GPUS  # the GPUs Flex-start serves, once

TABLE_READ = "2026-11-27"  # the day this table was put together
PAGE_READ = "2026-10-01"  # public copies of the Vertex AI pricing page, 2026-09/10
# Vertex AI custom training bills each resource at 1.15x the Compute Engine list price
# (https://cloud.google.com/vertex-ai/pricing, "Custom-trained models"; public copies of 2026-09/10).
VERTEX_MARKUP = Decimal("1.15")

# Compute Engine us-central1 on-demand list prices, USD per hour: (per vCPU, per GiB) by machine family.
# n1 is the pricing page's figure (0.031611, 0.004237); the others are Compute Engine's
# list prices as last read (https://cloud.google.com/compute/vm-instance-pricing), to confirm with the refresh.
CE_CORES: dict[str, tuple[str, str]] = {
    "n1": ("0.031611", "0.004237"),
    "n2": ("0.031611", "0.004237"),
    "e2": ("0.021811", "0.002923"),
    "c2": ("0.03398", "0.00455"),
    "m1": ("0.0348", "0.0051"),
    "g2": ("0.024988", "0.002928"),
    "g4": ("0.024988", "0.002928"),
    "a2": ("0.031611", "0.004237"),
    "a3": ("0.031611", "0.004237"),
    "a4": ("0.031611", "0.004237"),
    "a4x": ("0.031611", "0.004237"),
}
# Compute Engine us-central1 on-demand GPU prices, USD per GPU-hour (T4 0.35 from the pricing page).
CE_GPUS: dict[str, str] = {
    "NVIDIA_TESLA_T4": "0.35",
    "NVIDIA_TESLA_P4": "0.60",
    "NVIDIA_TESLA_P100": "1.46",
    "NVIDIA_TESLA_V100": "2.48",
    "NVIDIA_TESLA_A100": "2.933908",
    "NVIDIA_A100_80GB": "3.9692",
    "NVIDIA_L4": "0.56",
    "NVIDIA_H100_80GB": "9.1657",
    "NVIDIA_H100_MEGA_80GB": "9.7",
    "NVIDIA_H200_141GB": "10.6",
    "NVIDIA_B200": "11.3",
    "NVIDIA_GB200": "12.5",
    "NVIDIA_RTX_PRO_6000": "3.2",
}
# Spot and Flex-start as a fraction of on-demand (Spot prices move; Flex-start GPUs are discounted about half:
# https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws). T4 Spot 0.175 is the pricing page's.
SPOT_FRACTION = Decimal("0.4")
SPOT_FRACTION_T4 = Decimal("0.5")
FLEX_FRACTION = Decimal("0.53")
FLEX_FAMILIES = ("g2", "a2", "a3", "a4")
# Regional factor: the region's Compute Engine n1 price over us-central1's (approximate, as last read).
REGION_FACTORS: dict[str, str] = {
    "us-central1": "1",
    "us-east1": "1",
    "us-east4": "1.126",
    "us-east5": "1",
    "us-south1": "1.18",
    "us-west1": "1",
    "us-west2": "1.2",
    "us-west3": "1.2",
    "us-west4": "1.126",
    "northamerica-northeast1": "1.1",
    "northamerica-northeast2": "1.1",
    "southamerica-east1": "1.588",
    "southamerica-west1": "1.43",
    "europe-central2": "1.288",
    "europe-north1": "1.1",
    "europe-southwest1": "1.18",
    "europe-west1": "1.1",
    "europe-west2": "1.288",
    "europe-west3": "1.288",
    "europe-west4": "1.1",
    "europe-west6": "1.4",
    "europe-west8": "1.16",
    "europe-west9": "1.16",
    "asia-east1": "1.158",
    "asia-east2": "1.41",
    "asia-northeast1": "1.286",
    "asia-northeast3": "1.286",
    "asia-south1": "1.2",
    "asia-southeast1": "1.232",
    "australia-southeast1": "1.418",
    "me-west1": "1.23",
}
SOURCES = {
    "page": "pricing page (https://cloud.google.com/vertex-ai/pricing, public copies of 2026-09/10)",
    "ce": "inferred: Compute Engine x 1.15 (us-central1 Compute Engine list price)",
    "region": "inferred: Compute Engine x 1.15 x the region's factor over us-central1 (approximate)",
    "spot": "inferred: Compute Engine x 1.15, Spot at 40% of on-demand (Spot prices move)",
    "flex": "inferred: Compute Engine x 1.15, Flex-start at 53% of on-demand",
}
# The pricing page's own figures (Vertex AI, us-central1), read PAGE_READ.
PAGE: dict[tuple[str, str], str] = {
    ("vcpu:n1", "on-demand"): "0.03635265",
    ("gib:n1", "on-demand"): "0.00487255",
    ("gpu:NVIDIA_TESLA_T4", "on-demand"): "0.4025",
    ("gpu:NVIDIA_TESLA_T4", "spot"): "0.20125",
}
_PLACES = Decimal("0.00000001")


def rows() -> list[list[object]]:
    """Every row: [region, resource, usage, USD per hour, date read, source key]."""
    base: dict[str, Decimal] = {}
    for family, (cpu, gib) in CE_CORES.items():
        base.update({f"vcpu:{family}": Decimal(cpu), f"gib:{family}": Decimal(gib)})
    base.update({f"gpu:{gpu}": Decimal(each) for gpu, each in CE_GPUS.items()})
    out: list[list[object]] = []
    for region, factor in REGION_FACTORS.items():
        for resource, ce in base.items():
            on_demand = ce * VERTEX_MARKUP * Decimal(factor)
            key = "ce" if region == "us-central1" else "region"
            spot = SPOT_FRACTION_T4 if resource == "gpu:NVIDIA_TESLA_T4" else SPOT_FRACTION
            usages = [("on-demand", on_demand, key), ("spot", on_demand * spot, "spot")]
            family = resource.split(":", 1)[1]
            if family in FLEX_START_GPUS or family in FLEX_FAMILIES:
                usages.append(("flex-start", on_demand * FLEX_FRACTION, "flex"))
            for usage, price, source in usages:
                read = TABLE_READ
                if region == "us-central1" and (resource, usage) in PAGE:
                    price, source, read = Decimal(PAGE[resource, usage]), "page", PAGE_READ
                usd = float(price.quantize(_PLACES, rounding=ROUND_HALF_EVEN))
                out.append([region, resource, usage, usd, read, source])
    return out


def files(found: list[list[object]] | None = None, **head: object) -> dict[str, dict[str, object]]:
    """The shipped table's files (``found``: its rows, by default :func:`rows`; ``head``: fields to replace):
    ``index.json`` (date, sources, regions) and one table per region, so a dry run reads only its region's."""
    whole = {"format": 1, "currency": "USD", "unit": "hour", "read": TABLE_READ, "sources": SOURCES, **head}
    whole["columns"] = list(COLUMNS)
    by_region: dict[str, list[list[object]]] = {}
    for row in rows() if found is None else found:
        by_region.setdefault(str(row[0]), []).append(row)
    named = {f"{region}.json": {**whole, "rows": part} for region, part in by_region.items()}
    return {"index.json": {**whole, "rows": [], "regions": sorted(by_region)}, **named}


def write_files(folder: Path, named: Mapping[str, object]) -> None:
    """Each of ``named``'s tables as compact JSON in ``folder`` (made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in named.items():
        (folder / name).write_text(json.dumps(content, separators=(",", ":")) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_files(Path(sys.argv[1]), files())  # the folder named on the command line
