"""One preflight check's result: a pure value, printed as one line and in ``--format json`` as it is.

docs/getting-jobs-to-start.md lists the checks and what each status means:

* ``ok``: the check passed;
* ``refused``: Vertex AI would refuse the job (or it could not start): the submit stops before any upload or create,
  exit 2;
* ``warning``: worth a look, never a stop (a job that may queue, a bucket that works but costs);
* ``unchecked``: the caller lacks the right to look (a 403 on the read) or the answer could not be read: a
  warning, never a failure.
"""

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
    """``name`` says what was checked (``bucket gs://b``), ``message`` what was found and what to do."""

    name: str
    status: Status
    message: str

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
    """The whole preflight for ``--format json``: ``{"ok": bool, "checks": [...]}``."""
    return {"ok": not refused(checks), "checks": [c.as_json() for c in checks]}
