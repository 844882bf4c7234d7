"""The price table's refresh, a maintainer's script (docs/cost.md; the CLI never imports it). With an API key
in MLSUBMIT_BILLING_API_KEY (never on the command line: a process list shows it), it reads the Vertex AI and
Compute Engine SKUs, checks Vertex AI's against Compute Engine x 1.15, lists differences, gaps, unmapped SKUs."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from mlsubmit.targets import price_seed
from mlsubmit.targets.prices import Key, load

VERTEX, COMPUTE = "C7E2-9256-1C43", "6F81-5844-456A"
ENV_KEY = "MLSUBMIT_BILLING_API_KEY"
MARKUP = float(price_seed.VERTEX_MARKUP)
TOLERANCE = 0.005  # a Vertex row within 0.5% of Compute Engine x 1.15 agrees
MAX_PAGES = 1000
MAX_PAGE_BYTES = 64 * 1024 * 1024
_GPUS = {  # catalog wording -> accelerator type (longest first where one contains another)
    "Tesla T4": "NVIDIA_TESLA_T4",
    "Tesla P4": "NVIDIA_TESLA_P4",
    "Tesla P100": "NVIDIA_TESLA_P100",
    "Tesla V100": "NVIDIA_TESLA_V100",
    "A100 80GB": "NVIDIA_A100_80GB",
    "Tesla A100": "NVIDIA_TESLA_A100",
    "H100 Mega 80GB": "NVIDIA_H100_MEGA_80GB",
    "H100 80GB": "NVIDIA_H100_80GB",
    "H200": "NVIDIA_H200_141GB",
    "GB200": "NVIDIA_GB200",
    "B200": "NVIDIA_B200",
    "L4": "NVIDIA_L4",
    "RTX PRO 6000": "NVIDIA_RTX_PRO_6000",
}
_FAMILY = re.compile(r"\b(" + "|".join(price_seed.CE_CORES) + r")\b.*?\bInstance (Core|Ram)\b", re.I)
_GPU = re.compile(r"\bNvidia (" + "|".join(re.escape(g) for g in _GPUS) + r")\b(?! Mega)", re.I)
_NOT_PREDEFINED = re.compile(r"Custom (Extended )?Instance|Sole Tenancy|Extended|Commitment", re.I)
_USAGE = {"OnDemand": "on-demand", "Preemptible": "spot"}


def discovery_method() -> tuple[str, str, int]:
    """(root URL, path template, default page size) of ``skus.list`` from the client's shipped discovery document."""
    from googleapiclient.discovery_cache import get_static_doc

    doc = json.loads(get_static_doc("cloudbilling", "v1") or "")
    method = doc["resources"]["services"]["resources"]["skus"]["methods"]["list"]
    size = re.search(r"Defaults to (\d+)", method["parameters"]["pageSize"].get("description", ""))
    return doc["rootUrl"] + doc["servicePath"], method["path"], int(size.group(1)) if size else 5000


def url_fetch(url: str) -> bytes:
    """GET ``url`` (https, or http to a loopback fake) with a bounded answer."""
    if not url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise ValueError("the catalog endpoint must be https (or a loopback fake)")
    with urllib.request.urlopen(url, timeout=60) as answer:
        data: bytes = answer.read(MAX_PAGE_BYTES + 1)
    if len(data) > MAX_PAGE_BYTES:
        raise ValueError(f"a catalog page over {MAX_PAGE_BYTES} bytes")
    return data


def skus(service: str, key: str, endpoint: str | None = None) -> Iterator[dict[str, Any]]:
    """Every SKU of ``service``, page after page (``nextPageToken``), at most :data:`MAX_PAGES` pages."""
    root, template, size = discovery_method()
    base = (endpoint or root).rstrip("/") + "/" + template.replace("{+parent}", f"services/{service}")
    token = ""
    for _ in range(MAX_PAGES):
        query = {"key": key, "pageSize": size, "currencyCode": "USD", "pageToken": token}
        page = json.loads(url_fetch(f"{base}?{urlencode({k: v for k, v in query.items() if v})}"))
        yield from (s for s in page.get("skus") or [] if isinstance(s, dict))
        token = page.get("nextPageToken") or ""
        if not token:
            return
    raise ValueError(f"the catalog kept paging past {MAX_PAGES} pages")


def unit_price(sku: Mapping[str, Any]) -> float | None:
    """USD per unit of the SKU's current price (its last pricing info, the top tier's rate)."""
    infos = sku.get("pricingInfo") or [{}]
    rates = (infos[-1].get("pricingExpression") or {}).get("tieredRates")
    if not rates:
        return None
    money = rates[-1].get("unitPrice") or {}
    return int(money.get("units") or 0) + int(money.get("nanos") or 0) / 1e9


def resource_of(description: str) -> str | None:
    """The table resource a SKU description names (``vcpu:n1``, ``gib:a2``, ``gpu:NVIDIA_TESLA_T4``), or None."""
    gpu = _GPU.search(description)
    if gpu and "GPU" in description:
        wording = next(k for k in _GPUS if k.lower() == gpu.group(1).lower())
        return f"gpu:{_GPUS[wording]}"
    family = _FAMILY.search(description)
    if family and not _NOT_PREDEFINED.search(description):
        kind = "vcpu" if family.group(2).lower() == "core" else "gib"
        return f"{kind}:{family.group(1).lower()}"
    return None


def rows_of(found: Iterator[dict[str, Any]], unknown: list[str]) -> dict[Key, float]:
    """(region, resource, usage) -> USD per hour; descriptions that map to nothing go to ``unknown``."""
    out: dict[Key, float] = {}
    for sku in found:
        description = str(sku.get("description") or "")
        kind = str((sku.get("category") or {}).get("usageType") or "")
        if "Commit" in kind:
            continue  # committed-use discounts: not list prices
        usage = _USAGE.get(kind)
        resource = resource_of(description)
        price = unit_price(sku)
        if resource is None or usage is None or price is None:
            unknown.append(description)
            continue
        for region in sku.get("serviceRegions") or []:
            out[str(region), resource, usage] = price
    return out


def compare(
    vertex: Mapping[Key, float], compute: Mapping[Key, float], table_keys: set[Key]
) -> dict[str, Any]:
    """Differences (Vertex AI vs Compute Engine x 1.15) and gaps (table rows the catalog has no price for)."""
    differences = []
    for key, price in sorted(vertex.items()):
        base = compute.get(key)
        if base is not None and abs(price - base * MARKUP) > TOLERANCE * base * MARKUP:
            differences.append(
                {"row": list(key), "vertex": price, "computeEngineX115": round(base * MARKUP, 8)}
            )
    gaps = sorted(list(k) for k in table_keys if k not in vertex and k[2] != "flex-start")
    return {"differences": differences, "gaps": gaps}


def refresh(key: str, endpoint: str | None = None) -> dict[str, Any]:
    """The whole refresh report: rows read, differences, gaps and unknown descriptions."""
    unknown: list[str] = []
    vertex = rows_of(skus(VERTEX, key, endpoint), unknown)
    compute = rows_of(skus(COMPUTE, key, endpoint), unknown)
    table = load()
    report = compare(vertex, compute, set(table.rows))
    return {
        "read": date.today().isoformat(),
        "vertexRows": len(vertex),
        "computeRows": len(compute),
        **report,
        "unknownDescriptions": sorted(set(unknown)),
        "catalogRows": dict(sorted(vertex.items())),
    }


def write_table(report: Mapping[str, Any], folder: Path) -> None:
    """The shipped table with the catalog's Vertex AI rows laid over it (source ``catalog``), one file per region."""
    read = report["read"]
    found = {tuple(map(str, row[:3])): row for row in price_seed.rows()}
    for (region, resource, usage), price in report["catalogRows"].items():
        if region in price_seed.REGION_FACTORS:
            found[region, resource, usage] = [region, resource, usage, price, read, "catalog"]
    sources = {**price_seed.SOURCES, "catalog": f"catalog (Cloud Billing Catalog skus.list, read {read})"}
    price_seed.write_files(folder, price_seed.files(list(found.values()), read=read, sources=sources))


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlsubmit.targets.price_catalog", description=__doc__)
    parser.add_argument("--endpoint", help="Catalog root URL (default: the discovery document's).")
    parser.add_argument("--json", action="store_true", help="The whole report as JSON on stdout.")
    parser.add_argument("--write", type=Path, metavar="FOLDER", help="Write the refreshed table.")
    args = parser.parse_args(argv)
    key = (env if env is not None else os.environ).get(ENV_KEY)
    if not key:
        print(f"ERROR: set {ENV_KEY} to a Cloud Billing Catalog API key", file=sys.stderr)
        return 2
    try:
        report = refresh(key, endpoint=args.endpoint)
    except (OSError, ValueError) as err:
        print(f"ERROR: reading the catalog: {str(err).replace(key, '<key>')}", file=sys.stderr)
        return 1
    if args.write:
        write_table(report, args.write)
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "catalogRows"}, indent=2))
        return 0
    r = report
    print(f"catalog read {r['read']}: {r['vertexRows']} Vertex AI rows, {r['computeRows']} Compute Engine")
    for d in r["differences"]:
        print(
            f"DIFFERENCE {' '.join(d['row'])}: Vertex {d['vertex']} vs Compute Engine x 1.15 {d['computeEngineX115']}"
        )
    print(f"{len(r['gaps'])} table rows the catalog does not price (they keep their inferred source)")
    for description in r["unknownDescriptions"]:
        print(f"UNKNOWN {description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
