"""The price table's refresh tool (targets.price_catalog) against a loopback Cloud Billing Catalog built from
the ``cloudbilling.v1`` discovery document: every page of 5,000+ SKUs read, descriptions mapped to rows,
Vertex AI cross-checked against Compute Engine x 1.15, unknown descriptions listed, the key never printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlsubmit.targets import price_catalog
from mlsubmit.targets.prices import read_table
from tests.fakes.billing_catalog import FakeBillingCatalog, sku

KEY = "AIzaSy-fake-billing-key-1234567890"
US = ["us-central1"]


@pytest.fixture
def catalog() -> Iterator[FakeBillingCatalog]:
    with FakeBillingCatalog() as server:
        vertex = [
            sku(
                price_catalog.VERTEX,
                1,
                "Custom Training on N1 Predefined Instance Core running in Americas",
                US,
                0.03635265,
            ),
            sku(
                price_catalog.VERTEX,
                2,
                "Custom Training on N1 Predefined Instance Ram running in Americas",
                US,
                0.00487255,
            ),
            sku(
                price_catalog.VERTEX,
                3,
                "Custom Training on Nvidia Tesla T4 GPU running in Americas",
                US,
                0.4025,
            ),
            sku(
                price_catalog.VERTEX,
                4,
                "Custom Training on Nvidia Tesla T4 GPU running in Americas",
                US,
                0.20125,
                "Preemptible",
            ),
            sku(
                price_catalog.VERTEX, 5, "Custom Training on Nvidia L4 GPU running in Americas", US, 0.99
            ),  # off 1.15x
            sku(price_catalog.VERTEX, 6, "Vertex AI Pipelines run", ["global"], 0.03),  # not a training row
        ]
        filler = [
            sku(price_catalog.VERTEX, 100 + i, f"Prediction node {i} in Americas", US, 0.1)
            for i in range(5200)
        ]
        compute = [
            sku(price_catalog.COMPUTE, 1, "N1 Predefined Instance Core running in Americas", US, 0.031611),
            sku(price_catalog.COMPUTE, 2, "N1 Predefined Instance Ram running in Americas", US, 0.004237),
            sku(price_catalog.COMPUTE, 3, "Nvidia Tesla T4 GPU running in Americas", US, 0.35),
            sku(price_catalog.COMPUTE, 4, "Nvidia L4 GPU running in Americas", US, 0.56),
            sku(price_catalog.COMPUTE, 5, "Custom Instance Core running in Americas", US, 0.033174),
        ]
        server.catalog = {
            price_catalog.VERTEX: [*vertex[:3], *filler, *vertex[3:]],
            price_catalog.COMPUTE: compute,
        }
        yield server


def test_refresh_pages_through_every_sku_and_cross_checks(catalog: FakeBillingCatalog) -> None:
    report = price_catalog.refresh(KEY, endpoint=catalog.url)
    pages = catalog.requests_matching("GET", price_catalog.VERTEX)
    assert len(pages) == 2 and pages[1].param("pageToken") == "5000"  # 5,206 SKUs: two pages of at most 5,000
    assert report["catalogRows"]["us-central1", "vcpu:n1", "on-demand"] == pytest.approx(0.03635265)
    assert report["catalogRows"]["us-central1", "gpu:NVIDIA_TESLA_T4", "spot"] == pytest.approx(0.20125)
    (difference,) = report["differences"]
    assert difference["row"] == ["us-central1", "gpu:NVIDIA_L4", "on-demand"] and difference["vertex"] == 0.99
    assert "Vertex AI Pipelines run" in report["unknownDescriptions"]
    assert "Custom Instance Core running in Americas" in report["unknownDescriptions"]
    assert "Prediction node 17 in Americas" in report["unknownDescriptions"]  # listed, never dropped
    assert ["europe-west4", "vcpu:n1", "on-demand"] in report["gaps"]


def test_main_prints_the_report_without_the_key_and_writes_a_table(
    catalog: FakeBillingCatalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = price_catalog.main(
        ["--endpoint", catalog.url, "--write", str(tmp_path / "prices")], env={price_catalog.ENV_KEY: KEY}
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert (
        "DIFFERENCE us-central1 gpu:NVIDIA_L4 on-demand" in out.out
        and "UNKNOWN Vertex AI Pipelines run" in out.out
    )
    assert KEY not in out.out + out.err
    written = read_table(tmp_path / "prices" / "us-central1.json")
    row = written.price("us-central1", "gpu:NVIDIA_L4", "on-demand")
    assert row is not None and row.usd_per_hour == 0.99 and row.source.startswith("catalog")
    kept = written.price("us-central1", "gpu:NVIDIA_H100_80GB", "on-demand")
    assert kept is not None and kept.source.startswith("inferred")
    assert json.loads((tmp_path / "prices" / "index.json").read_text())["regions"]


def test_without_a_key_it_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert price_catalog.main([], env={}) == 2
    assert price_catalog.ENV_KEY in capsys.readouterr().err
