"""Read a job config file (YAML or JSON Job resource) safely and check it against schemas/job.schema.json.

Every problem is collected, never just the first, each located as ``file:line: $.json.path: message``
(STYLE.md practice 3). YAML is parsed to nodes first so that we know each value's line, and converted to
Python by hand so that alias expansion is bounded (a "billion laughs" file is an error, not an OOM) and
YAML 1.1 surprises (``on``/``off``, timestamps) stay the strings the user wrote.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from mlsubmit.errors import ConfigFileError, InvalidJobError, Problem

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 100_000  # values after alias expansion; real configs have a few hundred
MAX_DEPTH = 64  # nesting levels; a real config is under 10 deep
JsonPath = tuple[str | int, ...]

INT64_FIELDS = ("workerCount", "parameterServerCount", "evaluatorCount")

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def format_path(path: Iterable[str | int]) -> str:
    """``('trainingInput', 'args', 0)`` -> ``$.trainingInput.args[0]``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@dataclass
class JobFile:
    """A parsed config file: its data and where each value stood in it."""

    name: str
    data: dict[str, Any]
    lines: dict[JsonPath, int] = field(default_factory=dict)

    def line_of(self, path: JsonPath) -> int | None:
        """The line of ``path`` or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def problem(self, path: JsonPath, message: str) -> Problem:
        """A Problem located in this file."""
        return Problem(message=message, path=format_path(path), file=self.name, line=self.line_of(path))


def read_text(path: str) -> str:
    """Read a config file as UTF-8 text, turning every OS-level failure into one clear error."""
    p = Path(path)
    try:
        if p.is_dir():
            raise ConfigFileError(f"{path}: is a directory; pass the path of a YAML or JSON job config file.")
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigFileError(
                f"{path}: file is {size} bytes; a job config is at most {MAX_FILE_BYTES} bytes."
            )
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigFileError(f"{path}: no such file; check the --config path.") from None
    except PermissionError:
        raise ConfigFileError(f"{path}: permission denied; make the file readable.") from None
    except OSError as err:
        raise ConfigFileError(f"{path}: cannot read: {err.strerror or err}.") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigFileError(
            f"{path}:{line}: not valid UTF-8 (byte {err.start}); save the file as UTF-8."
        ) from None


class _Converter:
    """Turn a composed YAML node tree into plain Python, recording lines and bounding expansion."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.lines: dict[JsonPath, int] = {}
        self.problems: list[Problem] = []
        self._scalar = yaml.SafeLoader("")
        self._open: set[int] = set()  # ids of the nodes being converted, to catch alias cycles

    def convert(self, node: yaml.Node, path: JsonPath) -> Any:
        line = node.start_mark.line + 1
        # Cycles (`a: &a [*a]`) and absurd nesting would otherwise end in a RecursionError (exit 3).
        if id(node) in self._open:
            raise ConfigFileError(
                f"{self.name}:{line}: a YAML alias refers to a value that contains it; write the value out."
            )
        if len(path) > MAX_DEPTH:
            raise ConfigFileError(f"{self.name}:{line}: values nest deeper than {MAX_DEPTH} levels.")
        self._open.add(id(node))
        try:
            return self._convert(node, path)
        finally:
            self._open.discard(id(node))

    def _construct(self, node: yaml.Node, path: JsonPath) -> Any:
        """A scalar's value; a tag SafeLoader does not know (``!!python/object``) is a problem, not a crash."""
        try:
            return self._scalar.construct_object(node)
        except yaml.YAMLError:
            self.problems.append(
                Problem(
                    f"unsupported YAML tag {node.tag!r}; write a plain value",
                    format_path(path),
                    self.name,
                    node.start_mark.line + 1,
                )
            )
            return node.value

    def _convert(self, node: yaml.Node, path: JsonPath) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise ConfigFileError(
                f"{self.name}: YAML aliases expand past {MAX_NODES} values; write the config out without "
                "anchors/aliases."
            )
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            try:
                self._scalar.flatten_mapping(node)  # resolve `<<` merge keys like SafeLoader does
            except yaml.YAMLError as err:
                mark = getattr(err, "problem_mark", None) or node.start_mark
                raise ConfigFileError(
                    f"{self.name}:{mark.line + 1}: a `<<` merge key needs a mapping or a list of mappings."
                ) from None
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self._construct(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
                if not isinstance(key, str):
                    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is None:
                    self.problems.append(
                        Problem(
                            "mapping keys must be plain strings",
                            format_path(path),
                            self.name,
                            key_node.start_mark.line + 1,
                        )
                    )
                    continue
                if key in out:
                    self.problems.append(
                        Problem(
                            f"duplicate key {key!r}; keep one",
                            format_path((*path, key)),
                            self.name,
                            key_node.start_mark.line + 1,
                        )
                    )
                self.lines[path + (key,)] = key_node.start_mark.line + 1  # noqa: RUF005 (py3.10 subscript)
                out[key] = self.convert(value_node, (*path, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        if node.tag == "tag:yaml.org,2002:timestamp":
            return node.value  # a date stays the text the user wrote
        if node.tag == "tag:yaml.org,2002:bool" and node.value.lower() not in ("true", "false"):
            return node.value  # YAML 1.1 `on`/`off`/`yes`/`no`: keep the word, the schema decides
        return self._construct(node, path)


def parse(text: str, name: str) -> JobFile:
    """Parse YAML or JSON text into a JobFile. Raises ConfigFileError when it is not a mapping at all."""
    if not text.strip():
        raise ConfigFileError(
            f"{name}: file is empty; it should hold a Job resource with a trainingInput: key."
        )
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigFileError(f"{name}{line}: not valid YAML/JSON: {err.problem or err.context}.") from None
    except yaml.YAMLError as err:
        raise ConfigFileError(f"{name}: not valid YAML/JSON: {err}.") from None
    finally:
        loader.dispose()
    if node is None:
        raise ConfigFileError(
            f"{name}: file is empty; it should hold a Job resource with a trainingInput: key."
        )
    conv = _Converter(name)
    data = conv.convert(node, ())
    if data is None:  # a document with only `---` or `~`
        raise ConfigFileError(
            f"{name}: file is empty; it should hold a Job resource with a trainingInput: key."
        )
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"{name}:{node.start_mark.line + 1}: the top level must be a mapping (jobId, labels, trainingInput), "
            f"not a {type(data).__name__}."
        )
    job = JobFile(name=name, data=data, lines=conv.lines)
    if conv.problems:
        raise InvalidJobError(conv.problems)
    return job


@lru_cache(maxsize=1)
def job_schema() -> dict[str, Any]:
    """The JSON Schema of the config file, shipped as package data (mlsubmit.spec)."""
    text = resources.files("mlsubmit.spec").joinpath("job.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(schema, schema["$defs"][ref.split("/")[-1]])
    return node


def _subschema_at(path: JsonPath) -> dict[str, Any] | None:
    """The schema node that describes the value at ``path`` (for hints)."""
    schema = job_schema()
    node: dict[str, Any] | None = schema
    for part in path:
        if node is None:
            return None
        node = _resolve(schema, node)
        node = node.get("items") if isinstance(part, int) else node.get("properties", {}).get(part)
    return _resolve(schema, node) if node is not None else None


def _unknown_key_message(key: str, known: list[str], at_top: bool) -> str:
    if at_top and key in job_schema()["$defs"]["TrainingInput"]["properties"]:
        return (
            f"unknown key {key!r}: TrainingInput fields go under a `trainingInput:` key "
            f"(write `trainingInput:` and indent {key} below it)."
        )
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower().replace("_", ""): k for k in known}
        hit = lowered.get(key.lower().replace("_", "").replace("-", ""))
        close = [hit] if hit else []
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(known))}"
    return f"unknown key {key!r}{hint}"


def _describe(error: Any) -> str:
    """A short message for one jsonschema error, in the user's terms."""
    v = error.validator
    sch = error.schema
    if v == "enum":
        choices = [str(c) for c in sch["enum"]]
        if isinstance(error.instance, str):
            spelled = error.instance.strip().upper().replace("-", "_")
            close = [c for c in choices if c == spelled] or difflib.get_close_matches(
                error.instance, choices, n=1
            )
            if close:
                return f"{error.instance!r} is not allowed; did you mean {close[0]!r}?"
        return f"{error.instance!r} is not one of {', '.join(choices)}"
    if v == "pattern":
        what = sch.get("description")
        return f"{error.instance!r} is not valid" + (
            f": {what}" if what else f" (must match {sch['pattern']})"
        )
    if v == "type":
        want = sch["type"]
        want = " or ".join(want) if isinstance(want, list) else want
        got = type(error.instance).__name__
        if error.instance is None:  # `key:` with nothing after it
            return f"must be {want}, not empty; give a value or remove the key"
        return (
            f"must be {want}, not {got} {error.instance!r}"
            if not isinstance(error.instance, dict | list)
            else (f"must be {want}, not a {'mapping' if isinstance(error.instance, dict) else 'list'}")
        )
    if v == "required":
        return str(error.message).replace("is a required property", "is required")
    if v in ("minimum", "maximum"):
        return f"{error.instance!r} is out of range ({'at least' if v == 'minimum' else 'at most'} {sch[v]})"
    if v == "maxItems":
        return f"has {len(error.instance)} items; at most {sch['maxItems']} allowed"
    if v == "minItems":
        return f"needs at least {sch['minItems']} item(s)"
    if v == "minLength":
        return "must not be empty"
    if v == "maxLength":
        return f"{error.instance!r} is longer than {sch['maxLength']} characters"
    return str(error.message)


def schema_problems(job: JobFile) -> list[Problem]:
    """Every schema violation in ``job.data``, located, with did-you-mean hints for unknown keys."""
    from mlsubmit.spec.schema_check import Validator  # jsonschema semantics without its ~60 ms import

    validator = Validator(job_schema())
    problems: list[Problem] = []
    for error in validator.iter_errors(job.data):
        path: JsonPath = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = list(error.schema.get("properties", {}))
            for key in error.instance:
                if key not in known:
                    msg = _unknown_key_message(key, known, at_top=not path)
                    problems.append(job.problem((*path, key), msg))
            continue
        if "propertyNames" in error.schema_path:
            # jsonschema reports these as minLength/maxLength on `labels`; rules.check_labels says it at the key
            continue
        if path and path[0] == "labels" and error.validator in ("type", "maxLength") and len(path) == 2:
            continue  # rules.check_labels says it in label terms
        problems.append(job.problem(path, _describe(error)))
    problems.sort(key=lambda p: (p.line or 0, p.path))
    return problems


def _int64_text(value: Any) -> Any:
    """``2`` or ``2.0`` (JSON Schema counts both as integers) -> ``"2"``; anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return str(int(value))
    return value


def normalize(data: dict[str, Any]) -> dict[str, Any]:
    """Shape a schema-valid Job the way the API wants it: int64 counts as strings."""
    ti = data.get("trainingInput")
    if isinstance(ti, dict):
        for key in INT64_FIELDS:
            if key in ti:
                ti[key] = _int64_text(ti[key])
        for role in ("masterConfig", "workerConfig", "parameterServerConfig", "evaluatorConfig"):
            acc = (ti.get(role) or {}).get("acceleratorConfig") if isinstance(ti.get(role), dict) else None
            if isinstance(acc, dict) and "count" in acc:
                acc["count"] = _int64_text(acc["count"])
    return data


def check_job_file(path: str) -> tuple[JobFile, list[Problem]]:
    """Read and parse a config file and list its schema problems (so the caller can add rule problems to them).

    Raises ConfigFileError when the file cannot be read or parsed at all.
    """
    job = parse(read_text(path), path)
    problems = schema_problems(job)
    normalize(job.data)
    return job, problems


def read_job_file(path: str) -> JobFile:
    """Read, parse and schema-check a config file. Raises ConfigFileError or InvalidJobError (exit 2)."""
    job, problems = check_job_file(path)
    if problems:
        raise InvalidJobError(problems)
    return job


def load_job_file(path: str) -> dict[str, Any]:
    """The schema-checked Job resource dict of a config file (int64 counts as strings, like the API)."""
    return read_job_file(path).data
