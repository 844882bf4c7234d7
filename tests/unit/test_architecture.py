"""The import-layers contract (README "Architecture") covers every part of mlsubmit, so `lint-imports` checks
every import: a new top-level module or package must be placed in a layer."""

from __future__ import annotations

import pkgutil
from pathlib import Path
from typing import Any

import pytest

import mlsubmit

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
ENTRY_POINTS = {"mlsubmit.__main__"}  # `python -m mlsubmit`: only calls cli.main


def layers_contract() -> dict[str, Any]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers" and "containers" not in c]
    return dict(contract)


def test_every_top_level_part_of_mlsubmit_is_in_a_layer() -> None:
    layered = {name.strip() for layer in layers_contract()["layers"] for name in layer.split("|")}
    parts = {f"mlsubmit.{m.name}" for m in pkgutil.iter_modules(mlsubmit.__path__)} - ENTRY_POINTS
    assert parts - layered == set(), "add these to the layers contract in pyproject.toml"
    assert layered - parts == set(), "the contract names modules that do not exist"


def test_the_layers_point_down_from_cli_to_errors() -> None:
    layers = layers_contract()["layers"]
    assert layers[0] == "mlsubmit.cli" and "mlsubmit.errors" in layers[-1]
    index = {name.strip(): i for i, layer in enumerate(layers) for name in layer.split("|")}
    assert index["mlsubmit.services"] < index["mlsubmit.spec"] < index["mlsubmit.errors"]
    assert index["mlsubmit.cli"] < index["mlsubmit.submit"] < index["mlsubmit.targets"]
