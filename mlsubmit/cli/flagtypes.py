"""click parameter types for gcloud's value forms (``type=T,count=N``, ``k=v,...``, ``basic-gpu``)."""

from __future__ import annotations

from typing import Any

import click

from mlsubmit.job.merge import Accelerator
from mlsubmit.job.vocab import (
    ML_V1_ACCELERATORS,
    SCALE_TIERS,
    VERTEX_ONLY_ACCELERATORS,
    enum_spelling,
    flag_spelling,
)

ACCELERATOR_TYPES = (*ML_V1_ACCELERATORS, *VERTEX_ONLY_ACCELERATORS)


class ScaleTier(click.ParamType):
    """``--scale-tier basic-gpu`` (gcloud's spelling) or ``BASIC_GPU`` (the API's)."""

    name = "SCALE_TIER"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        tier = enum_spelling(str(value))
        if tier not in SCALE_TIERS:
            known = ", ".join(map(flag_spelling, SCALE_TIERS))
            self.fail(f"{value!r} is not a scale tier; choose one of {known}", param, ctx)
        return tier


class AcceleratorType(click.ParamType):
    """``type=nvidia-tesla-t4,count=2`` -> Accelerator("NVIDIA_TESLA_T4", 2); both keys required, like gcloud."""

    name = "type=TYPE,count=COUNT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Accelerator:
        if isinstance(value, Accelerator):
            return value
        from mlsubmit.targets.vertex_tables import GPU_ALIASES  # friendly spellings (NVIDIA_H200)

        example = "(e.g. type=nvidia-tesla-t4,count=1)"
        parts: dict[str, str] = {}
        for item in str(value).split(","):
            key, sep, val = item.partition("=")
            if not sep or key.strip().lower() not in ("type", "count"):
                self.fail(f"{value!r}: expected type=TYPE,count=COUNT {example}", param, ctx)
            parts[key.strip().lower()] = val.strip()
        if "type" not in parts or "count" not in parts:
            self.fail(f"{value!r}: give both type and count {example}", param, ctx)
        kind = GPU_ALIASES.get(enum_spelling(parts["type"]), enum_spelling(parts["type"]))
        if kind not in ACCELERATOR_TYPES:
            known = ", ".join(map(flag_spelling, ACCELERATOR_TYPES))
            self.fail(f"accelerator type {parts['type']!r} is unknown; choose one of {known}", param, ctx)
        try:
            count = int(parts["count"])
        except ValueError:
            count = 0
        if count <= 0:
            self.fail(
                f"accelerator count {parts['count']!r} must be a whole number greater than 0", param, ctx
            )
        return Accelerator(type=kind, count=count)


class KeyValues(click.ParamType):
    """``k=v,k2=v2`` -> dict (``--labels``); repeated flags are merged by the caller."""

    name = "KEY=VALUE,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, str]:
        if isinstance(value, dict):
            return value
        out: dict[str, str] = {}
        for item in str(value).split(","):
            if not item:
                continue
            key, sep, val = item.partition("=")
            if not sep or not key:
                self.fail(f"{item!r} is not KEY=VALUE", param, ctx)
            out[key] = val
        return out


class CommaList(click.ParamType):
    """``a,b,c`` -> list (``--packages``)."""

    name = "ITEM,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        return value if isinstance(value, list) else [item for item in str(value).split(",") if item]


class GcsUrl(click.ParamType):
    """A ``gs://BUCKET[/PATH]`` URL with a valid bucket name."""

    name = "gs://BUCKET/PATH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from mlsubmit.job.vocab import gcs_url_problem

        # {region}: each failover candidate's own, filled in and checked again by the plan (submit.candidates)
        checked = str(value).replace("{region}", "region")
        if problem := gcs_url_problem(checked, param.opts[0] if param and param.opts else "value"):
            self.fail(problem, param, ctx)
        return str(value)


class EnvVar(click.ParamType):
    """``--env KEY=VALUE`` (repeatable); the value may hold ``=`` and ``,``."""

    name = "KEY=VALUE"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        key, sep, val = str(value).partition("=")
        if not sep or not key.replace("_", "a").isalnum() or key[0].isdigit() or not key.isascii():
            self.fail(
                f"{value!r}: expected KEY=VALUE with KEY a C identifier (letters, digits, _)", param, ctx
            )
        return key, val


class Duration(click.ParamType):
    """``30m``, ``2h``, ``3600s``, ``1h30m`` or a number of seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        from mlsubmit.job.values import parse_human_duration

        try:
            return parse_human_duration(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)
