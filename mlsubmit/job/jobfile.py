"""Read a job config file (YAML or JSON Job resource) safely and check it against job.schema.json: every problem
at once, each as ``file:line: $.json.path: message``."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from mlsubmit.errors import ConfigFileError, Problem
from mlsubmit.job import hints, yamltree
from mlsubmit.job.hints import format_path
from mlsubmit.job.hyperparameters import hyperparameter_warnings
from mlsubmit.job.values import int64_value
from mlsubmit.job.vocab import COUNT_FIELDS, ROLES, as_dict
from mlsubmit.job.yamltree import JobFile as JobFile
from mlsubmit.job.yamltree import JsonPath
from mlsubmit.proc.files import MAX_CONFIG_BYTES, read_bounded


def read_text(path: str) -> str:
    """Read a config file as UTF-8 text (bounded in kind and size), every failure one clear error."""
    # A leading BOM is dropped by hand: the "utf-8-sig" codec is one more module for every dry run to load.
    raw = read_bounded(path, max_bytes=MAX_CONFIG_BYTES).removeprefix(b"\xef\xbb\xbf")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigFileError(
            f"{path}:{line}: not valid UTF-8 (byte {err.start}); save the file as UTF-8."
        ) from None


def parse(text: str, name: str) -> JobFile:
    """Parse YAML or JSON text into a JobFile (ConfigFileError or InvalidJobError when it cannot be read)."""
    return yamltree.load(text, name, job_schema())


@lru_cache(maxsize=1)
def job_schema() -> dict[str, Any]:
    """The JSON Schema of the config file, shipped beside this module (a plain read: importlib.resources would
    cost a dry run more)."""
    with open(os.path.join(os.path.dirname(__file__), "job.schema.json"), encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


MAX_UNKNOWN_PER_MAPPING = 10  # more than that and the file is probably not a job config at all


def _unknown_keys(job: JobFile, path: JsonPath, instance: dict[str, Any], known: list[str]) -> list[Problem]:
    """A problem per unknown key, hinted; a few per mapping, one line for a non-Job file (never echoed key by key)."""
    unknown = [key for key in instance if key not in known]
    messages = [hints.unknown_key_message(job_schema(), key, known, format_path(path)) for key in unknown]
    hinted = [m for m in messages if "; known keys: " not in m]
    if not path and not hinted and not any(key in known for key in instance):
        message = f"no top-level key is a Job field ({', '.join(known)}); is this a job config file?"
        return [job.problem((), message)]
    out = [job.problem((*path, key), msg) for key, msg in zip(unknown, messages, strict=True)]
    if len(out) > MAX_UNKNOWN_PER_MAPPING:
        rest = len(out) - MAX_UNKNOWN_PER_MAPPING
        out = [*out[:MAX_UNKNOWN_PER_MAPPING], job.problem(path, f"and {rest} more unknown keys")]
    return out


def schema_problems(job: JobFile) -> list[Problem]:
    """Every schema violation in ``job.data``, located, with did-you-mean hints for unknown keys."""
    from mlsubmit.job.schema_check import Validator  # jsonschema semantics without its ~60 ms import

    problems: list[Problem] = []
    for error in Validator(job_schema()).iter_errors(job.data):
        path: JsonPath = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            problems += _unknown_keys(job, path, error.instance, list(error.schema.get("properties", {})))
            continue
        if "propertyNames" in error.schema_path:
            if path[:1] == ("labels",):
                continue  # rules.check_id_and_labels says it at the key, in label terms
            path = (*path, error.instance)  # a bad key (an env variable's name): its own line
        elif path[:1] == ("labels",) and error.validator in ("type", "maxLength") and len(path) == 2:
            continue  # rules.check_id_and_labels says it in label terms
        problems.append(job.problem(path, hints.describe(error)))
    problems.sort(key=lambda p: (p.line or 0, p.path))
    return problems


def _int64_text(value: Any) -> Any:
    """``2``, ``2.0`` (JSON Schema integers) or ``"02"`` (as gcloud sends a quoted 0755) -> ``"2"``; else unchanged."""
    return value if (n := int64_value(value)) is None else str(n)


def normalize(data: dict[str, Any]) -> dict[str, Any]:
    """Shape a schema-valid Job the way the API wants it: int64 counts as strings."""
    ti = as_dict(data.get("trainingInput"))
    for key in COUNT_FIELDS:
        if key in ti:
            ti[key] = _int64_text(ti[key])
    for role in ROLES:
        acc = as_dict(as_dict(ti.get(role.config_field)).get("acceleratorConfig"))
        if "count" in acc:
            acc["count"] = _int64_text(acc["count"])
    return data


def check_job_file(path: str) -> tuple[JobFile, list[Problem]]:
    """A config file parsed, and its schema problems (the caller adds the rules' problems); ConfigFileError when
    it cannot be read or parsed at all."""
    job = parse(read_text(path), path)
    problems = schema_problems(job)
    normalize(job.data)
    warnings = hyperparameter_warnings(as_dict(job.data.get("trainingInput")))
    job.notes += [job.problem(where, message) for where, message in warnings]
    if job.notes:
        import logging  # only with something to say: a dry run of a clean file never loads it

        for note in job.notes:
            logging.getLogger(__name__).warning("%s", note)
    return job, problems
