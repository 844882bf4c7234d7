"""Count how often a production function runs, without changing what it does (tests of "decided once")."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, name: str, *modules: ModuleType) -> list[int]:
    """Wrap ``name`` in every module of ``modules`` (each place that imported it); one item per call."""
    calls: list[int] = []
    real = getattr(modules[0], name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, name, counting)
    return calls


def count_vertex_rules(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item per run of Vertex AI's rules (``check_vertex``), wherever they are called from."""
    from mlsubmit.targets import vertex, vertex_rules

    return count_calls(monkeypatch, "check_vertex", vertex_rules, vertex)
