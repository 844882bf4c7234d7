"""The one builder of a :class:`~mlsubmit.job.validate.TrainingRequest` from the flags of `training`, for every
command and ``mlsubmit.api``. ``given`` holds only the flags the caller gave: one left out never overrides the file."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from mlsubmit.errors import UsageError
from mlsubmit.job.merge import Accelerator, TrainingFlags
from mlsubmit.job.validate import TrainingRequest
from mlsubmit.job.vocab import enum_spelling

# `training`'s flags by Python name -> the kind of value a Python caller gives (``mlsubmit.api``); the names are
# held equal to the command's by tests/unit/test_api.py. Not here: output and following, which are the caller's
# (fmt, dry_run, async_, stream_logs, wait, cancel_on_interrupt). ``args``: the app's arguments after ``--``.
# fmt: off
FLAG_KINDS: dict[str, str] = {
    **dict.fromkeys(("config", "package_path"), "path"),
    **dict.fromkeys(("packages", "fallback_regions", "args"), "strings"),
    **dict.fromkeys((
        "module_name", "region", "staging_bucket", "job_dir", "runtime_version", "python_version",
        "service_account", "master_machine_type", "worker_machine_type", "parameter_server_machine_type",
        "master_image_uri", "worker_image_uri", "parameter_server_image_uri", "kms_key", "kms_keyring",
        "kms_location", "kms_project", "executor_image_uri", "reservation", "persistent_resource_id",
        "tensorboard", "experiment", "experiment_run", "network", "framework_version", "output_image_uri",
        "base_image", "project", "access_token_file", "api_endpoint", "context", "namespace", "queue"), "str"),
    **dict.fromkeys((
        "staging_layout", "target", "scheduling_strategy", "reservation_affinity", "framework", "builder"),
        "choice"),
    **dict.fromkeys((
        "enable_web_access", "use_chief_in_tf_config", "restart_job_on_worker_restart", "disable_retries",
        "enable_dashboard_access", "build_image", "preflight"), "bool"),
    **dict.fromkeys(("worker_count", "parameter_server_count"), "count"),
    **dict.fromkeys(("master_accelerator", "worker_accelerator", "parameter_server_accelerator"), "accel"),
    **dict.fromkeys(("labels", "env"), "mapping"),
    "scale_tier": "tier",
    "max_queue_wait": "seconds",
    **dict.fromkeys(("max_cost", "expected_hours"), "number"),  # docs/cost.md
    "prices": "path",
}
# fmt: on
EXPECTED = {
    "path": "a path",
    "strings": "a list of strings",
    "str": "a string",
    "choice": "a string",
    "bool": "True or False",
    "count": "a whole number >= 0",
    "accel": "a mapping {'type': 'nvidia-tesla-t4', 'count': 1}",
    "tier": "a string such as 'BASIC_GPU'",
    "mapping": "a mapping of strings to strings",
    "seconds": "a number of seconds >= 0",
    "number": "a number >= 0",
}


def typed_flags(flags: Mapping[Any, Any]) -> dict[str, Any]:
    """A Python caller's flags in the form the command line's click types give them (``given``): every name
    and value checked first (UsageError naming the flag); a None value is a flag left out."""
    import difflib

    given: dict[str, Any] = {}
    for name, value in flags.items():
        kind = FLAG_KINDS.get(name) if isinstance(name, str) else None
        if kind is None:
            near = difflib.get_close_matches(str(name), FLAG_KINDS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else " (docs/api.md lists them)."
            raise UsageError(f"flags: {str(name)[:60]!r} is not a flag of `mlsubmit training`{hint}")
        if value is not None:
            given[name] = _typed(name, kind, value)
    return given


def _typed(name: str, kind: str, value: Any) -> Any:
    """``value`` as the click type of ``--NAME`` makes it (scale tiers and accelerators in enum spelling)."""

    def ok(cond: bool, out: Any) -> Any:
        if not cond:
            raise UsageError(f"flags[{name!r}]: expected {EXPECTED[kind]}, got {type(value).__name__}.")
        return out

    text = isinstance(value, str)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "path":
        path = isinstance(value, os.PathLike)
        return ok(text or path, os.fspath(value) if path else value)
    if kind in ("str", "choice", "tier"):
        out = value if kind == "str" or not text else value.lower()
        return ok(text, enum_spelling(out) if kind == "tier" and text else out)
    if kind == "bool":
        return ok(isinstance(value, bool), value)
    if kind in ("count", "seconds", "number"):
        return ok(number and value >= 0 and (kind != "count" or isinstance(value, int)), value)
    if kind == "strings":
        items = [value] if text else list(value) if isinstance(value, Sequence) else None
        return ok(items is not None and all(isinstance(i, str) for i in items), items)
    if kind == "mapping":
        pairs = list(value.items()) if isinstance(value, Mapping) else None
        good = pairs is not None and all(isinstance(p, str) for kv in pairs for p in kv)
        return ok(good, dict(pairs or ()) if name == "labels" else pairs)
    if isinstance(value, Accelerator):
        return value
    parts = value if isinstance(value, Mapping) else {}
    good = isinstance(parts.get("type"), str) and isinstance(parts.get("count"), int)
    accel = Accelerator(enum_spelling(str(parts.get("type"))), int(parts.get("count") or 0)) if good else None
    return ok(good, accel)


def training_request(
    job_id: str, given: Mapping[str, Any], *, user_args: Sequence[str] | None, env: Mapping[str, str]
) -> TrainingRequest:
    """The typed request behind `training` for job ``job_id``: ``given`` flags (only typed ones count), the
    app's arguments (``None``: no ``--`` was given, the file's args stand) and the environment snapshot."""
    flags = dict(given)
    if "labels" in flags:  # one mapping per --labels on the command line, or one mapping
        labels = flags["labels"]
        flags["labels"] = (
            dict(labels) if isinstance(labels, Mapping) else {k: v for p in labels for k, v in p.items()}
        )
    return TrainingRequest(
        flags=TrainingFlags(job_id=job_id, given=flags, user_args=user_args),
        config=flags.get("config"),
        package_path=flags.get("package_path"),
        # one list per --packages on the command line, or a list of strings
        packages=[
            p for part in flags.get("packages") or () for p in ([part] if isinstance(part, str) else part)
        ],
        staging_bucket=flags.get("staging_bucket"),
        project=flags.get("project"),
        env=env,
        staging_layout=flags.get("staging_layout") or "shared",
    )
