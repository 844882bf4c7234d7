"""Fixtures of the spec tests: ``workdir`` (tests/fakes/rules.py) for the rule tables (a test file's own fixture
of the same name wins)."""

from __future__ import annotations

from tests.fakes.rules import workdir

__all__ = ["workdir"]  # the fixture, used by name
