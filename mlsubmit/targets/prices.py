"""The dated price table (docs/cost.md): USD per hour per region, resource and usage. It ships as ``prices/``
beside this module (made by price_seed, checked by price_catalog); a team's table (``--prices FILE`` or
``MLSUBMIT_PRICES``) is laid over it. Resources: ``vcpu:<family>``, ``gib:<family>``, ``gpu:<TYPE>``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.proc.files import parse_json, read_bounded
from mlsubmit.targets.vertex_locations import vcpus

SHIPPED = Path(__file__).with_name("prices")  # index.json and one REGION.json per region
ENV_VAR = "MLSUBMIT_PRICES"
STALE_DAYS = 90  # an older table warns, never blocks
MAX_BYTES = 8 * 1024 * 1024  # a team's table is read whole: bounded
MAX_ROWS = 100_000
USAGES = ("on-demand", "spot", "flex-start")
COLUMNS = ("region", "resource", "usage", "usd_per_hour", "read", "source")
Key = tuple[str, str, str]  # (region, resource, usage): a row's place in the table

# GiB per vCPU by family and kind (https://cloud.google.com/compute/docs/machine-resource, read 2026-11-27):
# the sizes themselves are mlsubmit's machine table (targets.vertex_tables, vCPUs: targets.vertex_locations).
_GIB_PER_VCPU: dict[str, float] = {
    "n1-standard": 3.75,
    "n1-highmem": 6.5,
    "n1-highcpu": 0.9,
    "n2-standard": 4.0,
    "n2-highmem": 8.0,
    "n2-highcpu": 1.0,
    "e2-standard": 4.0,
    "e2-highmem": 8.0,
    "e2-highcpu": 1.0,
    "c2-standard": 4.0,
    "g2-standard": 4.0,
    "g4-standard": 3.75,
}
# GiB of machines whose memory is not a multiple of their vCPUs (same page, accelerator- and memory-optimized).
_NAMED_GIB: dict[str, float] = {
    "m1-ultramem-40": 961,
    "m1-ultramem-80": 1922,
    "m1-ultramem-160": 3844,
    "m1-megamem-96": 1433.6,
    "a2-megagpu-16g": 1360,
    "a3-megagpu-8g": 1872,
    "a3-ultragpu-8g": 2952,
    "a4-highgpu-8g": 3968,
    "a4x-highgpu-4g": 884,
}
_GIB_PER_GPU = {"a2-highgpu": 85.0, "a2-ultragpu": 170.0, "a3-highgpu": 234.0}


def shape(machine: str) -> tuple[int, float] | None:
    """(vCPUs, GiB) of a machine type (``n1-standard-4``: 4, 15); None when the tables do not know it."""
    cpus, kind = vcpus(machine), machine.rsplit("-", 1)[0]
    if not cpus:
        return None
    if machine in _NAMED_GIB:
        return cpus, _NAMED_GIB[machine]
    if kind in _GIB_PER_VCPU:
        return cpus, _GIB_PER_VCPU[kind] * cpus
    if kind in _GIB_PER_GPU:
        from mlsubmit.targets.vertex_tables import gpus_carried  # a GPU machine only: not on a dry run's path

        return cpus, _GIB_PER_GPU[kind] * (gpus_carried(machine) or 0)
    return None


class Row:
    """One price: USD per hour, the date it was read, where it comes from (a plain class: see cost.Estimate)."""

    __slots__ = ("read", "source", "usd_per_hour")

    def __init__(self, usd_per_hour: float, read: str, source: str) -> None:
        self.usd_per_hour, self.read, self.source = usd_per_hour, read, source


class PriceTable:
    """Rows by (region, resource, usage); ``read``: the table's date; ``under``: the table filling the gaps."""

    def __init__(self, rows: dict[Key, Row], read: str, under: PriceTable | None = None) -> None:
        self._rows, self.read, self._under = rows, read, under

    def price(self, region: str, resource: str, usage: str) -> Row | None:
        found = self._rows.get((region, resource, usage))
        if found is None and self._under is not None:
            return self._under.price(region, resource, usage)
        return found

    @property
    def rows(self) -> dict[Key, Row]:
        """Every row (for tests and the refresh tool: a dry run never needs them all)."""
        return {**(self._under.rows if self._under else {}), **self._rows}


def stale_warning(read: str, today: date) -> str | None:
    """The warning for prices read more than :data:`STALE_DAYS` before ``today`` (it never blocks), else None."""
    age = (today - date.fromisoformat(read)).days
    if age <= STALE_DAYS:
        return None
    return (
        f"the price table was read {read}, {age} days ago: prices may have moved (a maintainer refreshes "
        "it with `python -m mlsubmit.targets.price_catalog`; a team can pass its own with --prices, docs/cost.md)"
    )


def _problem(where: str, message: str) -> UsageError:
    return UsageError(f"{where}: {message} (docs/cost.md shows the price table's format)")


def _date(value: Any, where: str) -> str:
    try:
        date.fromisoformat(str(value))
    except ValueError:
        raise _problem(where, f"{value!r} is not a date YYYY-MM-DD") from None
    return str(value)


def parse(data: Any, where: str) -> PriceTable:
    """A decoded table, every row checked; every problem names ``where`` (the file and the row) and exits 2."""
    if not isinstance(data, dict) or data.get("format") != 1 or not isinstance(data.get("rows"), list):
        raise _problem(where, 'not a price table: want {"format": 1, "read": DATE, "rows": [...]}')
    read = _date(data.get("read"), f"{where}: $.read")
    sources = data["sources"] if isinstance(data.get("sources"), dict) else {}
    found: list[Any] = data["rows"]
    if len(found) > MAX_ROWS:
        raise _problem(where, f"{len(found)} rows: at most {MAX_ROWS}")
    rows: dict[Key, Row] = {}
    for index, row in enumerate(found):
        at = f"{where}: $.rows[{index}]"
        if not isinstance(row, list) or len(row) != len(COLUMNS):
            raise _problem(at, f"want [{', '.join(COLUMNS)}]")
        region, resource, usage, usd, when, source = row
        if not all(isinstance(v, str) and 0 < len(v) <= 200 for v in (region, resource, usage, source)):
            raise _problem(at, "region, resource, usage and source are short strings")
        if usage not in USAGES:
            raise _problem(at, f"usage {usage!r}: one of {', '.join(USAGES)}")
        if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd) or usd < 0:
            raise _problem(at, f"usd_per_hour {usd!r}: a number, 0 or more")
        rows[region, resource, usage] = Row(float(usd), _date(when, at), str(sources.get(source, source)))
    return PriceTable(rows, read)


def read_table(path: Path) -> PriceTable:
    """A price table file; a missing, oversized or malformed one is a UsageError naming it (exit 2)."""
    raw = read_bounded(
        str(path), what="a price table (JSON, docs/cost.md)", max_bytes=MAX_BYTES, error=UsageError
    )
    try:
        data = parse_json(raw)
    except ValueError as err:
        raise _problem(str(path), f"not JSON ({err})") from None
    return parse(data, str(path))


class ShippedTable(PriceTable):
    """The shipped table: each region's file is read when that region is first priced (a dry run reads one)."""

    def __init__(self, folder: Path) -> None:
        index = json.loads((folder / "index.json").read_bytes())
        super().__init__({}, str(index["read"]))
        self._folder = folder
        self._regions = frozenset(r for r in index.get("regions", []) if isinstance(r, str))
        self._unread = set(self._regions)

    def _load(self, region: str) -> None:
        if region in self._unread:  # only names the index lists become file names
            self._unread.remove(region)
            self._rows.update(read_table(self._folder / f"{region}.json")._rows)

    def price(self, region: str, resource: str, usage: str) -> Row | None:
        self._load(region)
        return super().price(region, resource, usage)

    @property
    def rows(self) -> dict[Key, Row]:
        for region in self._regions:
            self._load(region)
        return super().rows


def load(own: str | None = None, env: Mapping[str, str] | None = None) -> PriceTable:
    """The shipped table, with a team's own (``own``, else ``$MLSUBMIT_PRICES``) laid over it."""
    shipped = ShippedTable(SHIPPED)
    path = own or (env or {}).get(ENV_VAR)
    if not path:
        return shipped
    team = read_table(Path(path))
    return PriceTable(team._rows, min(team.read, shipped.read), under=shipped)
