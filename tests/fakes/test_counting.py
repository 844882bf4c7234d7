"""tests/fakes/counting.py counts calls without changing what the counted function does."""

from __future__ import annotations

import types

import pytest

from tests.fakes.counting import count_calls


def test_every_importing_place_is_counted_and_the_result_is_the_real_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def double(x: int) -> int:
        return 2 * x

    home = types.ModuleType("home")
    user = types.ModuleType("user")
    home.double = user.double = double  # type: ignore[attr-defined]
    calls = count_calls(monkeypatch, "double", home, user)
    assert (home.double(2), user.double(3)) == (4, 6)  # type: ignore[attr-defined]
    assert len(calls) == 2
