"""A loopback Cloud Billing Catalog (``cloudbilling.v1`` ``skus.list``), built from the discovery
document google-api-python-client ships: the route is the method's path, each SKU a ``Sku`` of that
document's schema (checked here against its properties), pages of ``pageSize`` (default and maximum 5,000)
with ``nextPageToken``; a request without ``key`` is refused as the service refuses it (403)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import googleapiclient

from tests.fakes.loopback import LoopbackServer
from tests.fakes.wire import ApiError, RecordedRequest, Response, int_param, page

DOC = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents" / "cloudbilling.v1.json"


def discovery() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DOC.read_text(encoding="utf-8"))
    return data


def sku(
    service: str, number: int, description: str, regions: list[str], usd: float, usage: str = "OnDemand"
) -> dict[str, Any]:
    """One SKU in the discovery document's shape (``Sku``, ``Category``, ``PricingInfo``, ``Money``)."""
    units, nanos = int(usd), round((usd - int(usd)) * 1e9)
    return {
        "name": f"services/{service}/skus/{number:04X}-0000-0000",
        "skuId": f"{number:04X}-0000-0000",
        "description": description,
        "category": {
            "serviceDisplayName": "x",
            "resourceFamily": "Compute",
            "resourceGroup": "N1Standard",
            "usageType": usage,
        },
        "serviceRegions": regions,
        "pricingInfo": [
            {
                "effectiveTime": "2026-11-01T00:00:00Z",
                "pricingExpression": {
                    "usageUnit": "h",
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": str(units), "nanos": nanos},
                        }
                    ],
                },
            }
        ],
    }


class FakeBillingCatalog(LoopbackServer):
    """``GET /v1/services/{id}/skus``: the SKUs put in :attr:`catalog` for that service id."""

    def __init__(self) -> None:
        super().__init__()
        doc = discovery()
        method = doc["resources"]["services"]["resources"]["skus"]["methods"]["list"]
        self.max_size = int(
            re.search(r"Defaults to (\d+)", method["parameters"]["pageSize"]["description"]).group(1)
        )  # type: ignore[union-attr]
        self.sku_fields = set(doc["schemas"]["Sku"]["properties"])
        route = "^/" + re.escape(method["path"]).replace(re.escape("{+parent}"), "services/([^/]+)") + "$"
        self.catalog: dict[str, list[dict[str, Any]]] = {}
        self.add_route("GET", route, self._list)

    def _list(self, request: RecordedRequest, service: str) -> Response:
        if not request.param("key"):
            raise ApiError(403, "The request is missing a valid API key.")
        items = self.catalog.get(service)
        if items is None:
            raise ApiError(404, f"Service {service} not found.")
        for item in items:
            assert set(item) <= self.sku_fields, set(item) - self.sku_fields
        size = int_param(request.param("pageSize"), "pageSize")
        found, token = page(items, size, request.param("pageToken"), self.max_size, self.max_size)
        return Response(json={"skus": found, **({"nextPageToken": token} if token else {})})
