"""A preflight check's result (docs/getting-jobs-to-start.md): ``ok``; ``refused`` (the submit stops, exit 2);
``warning``; ``unchecked`` (no right to look, no answer: a submit warns, ``mlsubmit preflight`` exits 1)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "refused", "warning", "unchecked"]
OK: Status = "ok"
REFUSED: Status = "refused"
WARNING: Status = "warning"
UNCHECKED: Status = "unchecked"
# How each status starts its line (text output); "could not check" is what docs/getting-jobs-to-start.md calls it.
LABELS: dict[Status, str] = {OK: "ok", REFUSED: "REFUSED", WARNING: "WARNING", UNCHECKED: "could not check"}


@dataclass(frozen=True)
class Check:
    """What was checked, what was found and what to do; ``kind`` ``quota``: failover may route around it."""

    name: str
    status: Status
    message: str
    kind: str = ""

    def line(self) -> str:
        """``preflight: REFUSED: bucket gs://b: ...`` (one line)."""
        return f"preflight: {LABELS[self.status]}: {self.name}: {self.message}"

    def as_json(self) -> dict[str, str]:
        """``{"name", "status", "message"}`` for ``--format json``."""
        return {"name": self.name, "status": self.status, "message": self.message}


def refused(checks: Iterable[Check]) -> list[Check]:
    """The checks that stop the submit."""
    return [c for c in checks if c.status == REFUSED]


def report(checks: Sequence[Check]) -> dict[str, object]:
    """``{"ok", "checks"}`` for ``--format json``; ok: every check ran and none refused (warnings are ok)."""
    ok = all(c.status not in (REFUSED, UNCHECKED) for c in checks)
    return {"ok": ok, "checks": [c.as_json() for c in checks]}
