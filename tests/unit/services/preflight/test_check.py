"""A preflight check's line and the report of them all (services.preflight.check)."""

from __future__ import annotations

from mlsubmit.services.preflight.check import Check, refused, report


def test_check_line_and_report() -> None:
    checks = [Check("a", "ok", "fine"), Check("b", "refused", "no"), Check("c", "unchecked", "?")]
    assert checks[1].line() == "preflight: REFUSED: b: no"
    assert checks[2].line() == "preflight: could not check: c: ?"
    assert refused(checks) == [checks[1]]
    assert report(checks) == {"ok": False, "checks": [c.as_json() for c in checks]}
