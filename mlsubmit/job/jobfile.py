"""Read a job config file (YAML or JSON Job resource) safely and check it against job.schema.json.

Every problem is collected, never just the first, each located as ``file:line: $.json.path: message``.
The file is read by the one bounded reader (mlsubmit.proc.files); its event stream is scanned for nesting depth
before PyYAML's recursive composer runs (a 50,000-deep list would overflow the C stack); the nodes are then
converted to Python by hand, so that alias expansion is bounded (a "billion laughs" file is an error, not an
OOM) and every scalar gets the meaning its field wants (mlsubmit.job.scalars: ``1e-5`` is a number where a
number is wanted, ``on`` a boolean where a boolean is, and ``0755`` the text written where a string is).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import ConfigFileError, InvalidJobError, Problem
from mlsubmit.job import hints, scalars
from mlsubmit.job.hyperparameters import hyperparameter_warnings
from mlsubmit.job.vocab import COUNT_FIELDS
from mlsubmit.proc.files import MAX_CONFIG_BYTES, read_bounded

MAX_FILE_BYTES = MAX_CONFIG_BYTES
MAX_NODES = 100_000  # values after alias expansion; real configs have a few hundred
MAX_DEPTH = 64  # nesting levels; a real config is under 10 deep
JsonPath = tuple[str | int, ...]

if TYPE_CHECKING:
    import yaml

INT64_FIELDS = COUNT_FIELDS


def _loader(text: str) -> yaml.SafeLoader:
    """libyaml's safe loader when PyYAML has it, else the pure-Python one. PyYAML is imported here, on the first
    file read: a command given no config file never pays for it (benchmarks/bench_dry_run.py)."""
    import yaml

    loader_class: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader_class(text)


def format_path(path: Iterable[str | int]) -> str:
    """``('trainingInput', 'args', 0)`` -> ``$.trainingInput.args[0]``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{hints.path_part(part)}"
    return out


@dataclass
class JobFile:
    """A parsed config file: its data and where each value stood in it."""

    name: str
    data: dict[str, Any]
    lines: dict[JsonPath, int] = field(default_factory=dict)
    notes: list[Problem] = field(default_factory=list)  # warnings: values that may not mean what was meant

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
    """Read a config file as UTF-8 text (bounded in kind and size), every failure one clear error."""
    # A leading BOM is dropped by hand: the "utf-8-sig" codec is one more module for every dry run to load.
    raw = read_bounded(path, max_bytes=MAX_FILE_BYTES).removeprefix(b"\xef\xbb\xbf")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigFileError(
            f"{path}:{line}: not valid UTF-8 (byte {err.start}); save the file as UTF-8."
        ) from None


def _kinds(schema: dict[str, Any] | None) -> frozenset[str] | None:
    """The JSON types a schema node allows (``{'integer', 'string'}`` for an int64), None if unknown."""
    if schema is None:
        return None
    kind = schema.get("type")
    if kind is None:
        return None
    return frozenset(kind) if isinstance(kind, list) else frozenset({kind})


def _child(schema: dict[str, Any] | None, key: str | int) -> dict[str, Any] | None:
    """The schema of ``key`` inside a value described by ``schema`` (None where the schema says nothing)."""
    if schema is None:
        return None
    if isinstance(key, int):
        items = schema.get("items")
        return _resolve(job_schema(), items) if isinstance(items, dict) else None
    sub = (schema.get("properties") or {}).get(key)
    if sub is None and isinstance(schema.get("additionalProperties"), dict):
        sub = schema["additionalProperties"]
    return _resolve(job_schema(), sub) if isinstance(sub, dict) else None


def _scan(text: str, name: str) -> set[tuple[int, int]]:
    """Walk the event stream (no recursion, no nodes built): refuse nesting deeper than MAX_DEPTH before the
    composer could recurse into it; return where explicitly tagged scalars start (``!!str 0755``)."""
    import yaml

    tagged: set[tuple[int, int]] = set()
    loader = _loader(text)
    depth = values = 0
    try:
        while True:
            event = loader.get_event()  # type: ignore[no-untyped-call]
            mark = event.start_mark
            values += 1
            if values > MAX_NODES:
                raise ConfigFileError(
                    f"{name}: holds more than {MAX_NODES} values; a job config has a few hundred."
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = f":{mark.line + 1}" if mark else ""
                    raise ConfigFileError(f"{name}{line}: values nest deeper than {MAX_DEPTH} levels.")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent) and event.tag is not None and not event.implicit[0]:
                if mark is not None:
                    tagged.add((mark.line, mark.column))
            elif isinstance(event, yaml.StreamEndEvent):
                return tagged
    finally:
        loader.dispose()


class _Converter:
    """Turn a composed YAML node tree into plain Python, recording lines and bounding expansion."""

    def __init__(self, name: str, tagged: set[tuple[int, int]]) -> None:
        import yaml

        self.name = name
        self.tagged = tagged
        self.count = 0
        self.lines: dict[JsonPath, int] = {}
        self.problems: list[Problem] = []
        self.notes: list[Problem] = []
        self._scalar = yaml.SafeLoader("")
        self._open: set[int] = set()  # ids of the nodes being converted, to catch alias cycles

    def _problem(self, message: str, path: JsonPath, node: yaml.Node) -> Problem:
        return Problem(message, format_path(path), self.name, node.start_mark.line + 1)

    def convert(self, node: yaml.Node, path: JsonPath, schema: dict[str, Any] | None) -> Any:
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
            return self._convert(node, path, schema)
        finally:
            self._open.discard(id(node))

    def _construct(self, node: yaml.Node, path: JsonPath) -> Any:
        """A tagged scalar's value. An unknown tag, a type no job field takes (``!!binary``) or a text not of
        its tag's type (``!!int abc``) is a problem at its line, never a crash nor read as something else."""
        import yaml

        problem = scalars.tag_problem(node)
        if problem is None and node.tag in scalars.CHECKED_TAGS:
            implicit = self._scalar.resolve(yaml.ScalarNode, node.value, (True, False))  # type: ignore[no-untyped-call]
            if implicit not in scalars.CHECKED_TAGS[node.tag]:
                problem = f"{hints.short(node.value)} cannot be read as {scalars.tag_name(node.tag)}"
        if problem is None:
            try:
                return self._scalar.construct_object(node)
            except yaml.YAMLError:
                problem = f"unsupported YAML tag {scalars.tag_name(node.tag)}"
            except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
                problem = f"{hints.short(node.value)} cannot be read as {scalars.tag_name(node.tag)}"
        self.problems.append(self._problem(f"{problem}; write a plain value", path, node))
        return node.value

    def _key(self, key_node: yaml.Node, path: JsonPath) -> str | None:
        import yaml

        if not isinstance(key_node, yaml.ScalarNode):
            return None
        key = self._construct(key_node, path)
        return key if isinstance(key, str) else key_node.value if isinstance(key_node.value, str) else None

    def _mapping(
        self, node: yaml.MappingNode, path: JsonPath, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        import yaml

        own = {id(key_node) for key_node, _ in node.value}  # keys written here, not merged in by `<<`
        try:
            self._scalar.flatten_mapping(node)  # resolve `<<` merge keys like SafeLoader does
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None) or node.start_mark
            raise ConfigFileError(
                f"{self.name}:{mark.line + 1}: a `<<` merge key needs a mapping or a list of mappings."
            ) from None
        out: dict[str, Any] = {}
        out_own: dict[str, bool] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            if key is None:
                self.problems.append(self._problem("mapping keys must be plain strings", path, key_node))
                continue
            if key in out and id(key_node) in own and out_own.get(key, False):
                self.problems.append(
                    self._problem(f"duplicate key {hints.short(key)}; keep one", (*path, key), key_node)
                )
            self.lines[path + (key,)] = key_node.start_mark.line + 1  # noqa: RUF005 (py3.10 subscript)
            out[key] = self.convert(value_node, (*path, key), _child(schema, key))  # a key written here wins
            out_own[key] = id(key_node) in own
        return out

    def _convert(self, node: yaml.Node, path: JsonPath, schema: dict[str, Any] | None) -> Any:
        import yaml

        self.count += 1
        if self.count > MAX_NODES:
            raise ConfigFileError(
                f"{self.name}: YAML aliases expand past {MAX_NODES} values; write the config out without "
                "anchors/aliases."
            )
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.CollectionNode) and (problem := scalars.tag_problem(node)):  # `!Ref [a]`
            self.problems.append(self._problem(f"{problem}; write a plain value", path, node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, schema)
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*path, i), _child(schema, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        explicit = (node.start_mark.line, node.start_mark.column) in self.tagged
        if explicit and node.tag != "tag:yaml.org,2002:str":
            return self._construct(node, path)
        meaning = scalars.interpret(node.value, plain=not node.style and not explicit, kinds=_kinds(schema))
        if meaning.note:
            self.notes.append(self._problem(f"{meaning.note}; write {meaning.value} to say so", path, node))
        return meaning.value


def _compose(text: str, name: str) -> yaml.Node | None:
    loader = _loader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def parse(text: str, name: str) -> JobFile:
    """Parse YAML or JSON text into a JobFile. Raises ConfigFileError when it is not a mapping at all."""
    import yaml

    empty = f"{name}: file is empty; it should hold a Job resource with a trainingInput: key."
    if not text.strip():
        raise ConfigFileError(empty)
    try:
        tagged = _scan(text, name)  # bounds the depth before the (recursive) composer runs
        node = _compose(text, name)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f":{mark.line + 1}" if mark else ""
        what = err.problem or err.context
        # The libyaml in PyYAML 6.0.4's wheels stops deep flow nesting in its scanner, before our event walk.
        if what and "nesting depth" in what:
            raise ConfigFileError(f"{name}{line}: values nest deeper than {MAX_DEPTH} levels.") from None
        if err.context and err.problem and err.problem.startswith("but found"):
            what = (
                f"{err.context} {err.problem}"  # "expected a single document in the stream but found another"
            )
        raise ConfigFileError(f"{name}{line}: not valid YAML/JSON: {what}.") from None
    except yaml.YAMLError as err:
        raise ConfigFileError(f"{name}: not valid YAML/JSON: {hints.short(str(err), 120)}.") from None
    if node is None:
        raise ConfigFileError(empty)
    conv = _Converter(name, tagged)
    data = conv.convert(node, (), job_schema())
    if data is None and not conv.problems:  # a document with only `---` or `~`
        raise ConfigFileError(empty)
    if conv.problems and not isinstance(
        data, dict
    ):  # a tagged top level (`!!python/object/apply:...`): name it
        raise InvalidJobError(conv.problems)
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"{name}:{node.start_mark.line + 1}: the top level must be a mapping (jobId, labels, trainingInput), "
            f"not a {type(data).__name__}."
        )
    job = JobFile(name=name, data=data, lines=conv.lines, notes=conv.notes)
    if conv.problems:
        raise InvalidJobError(conv.problems)
    return job


@lru_cache(maxsize=1)
def job_schema() -> dict[str, Any]:
    """The JSON Schema of the config file, shipped as package data beside this module (a plain file read:
    importlib.resources would cost a dry run more than the read)."""
    with open(os.path.join(os.path.dirname(__file__), "job.schema.json"), encoding="utf-8") as handle:
        text = handle.read()
    schema: dict[str, Any] = json.loads(text)
    return schema


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(schema, schema["$defs"][ref.split("/")[-1]])
    return node


MAX_UNKNOWN_PER_MAPPING = 10  # more than that and the file is probably not a job config at all


def _unknown_keys(job: JobFile, path: JsonPath, instance: dict[str, Any], known: list[str]) -> list[Problem]:
    """One problem per unknown key with a hint saying where it belongs; a few at most per mapping, and one line
    for a file that shares no key with a Job (a symlink to some other file must not be echoed key by key)."""
    unknown = [key for key in instance if key not in known]
    messages = [hints.unknown_key_message(job_schema(), key, known, format_path(path)) for key in unknown]
    hinted = [m for m in messages if "; known keys: " not in m]
    if not path and not hinted and not any(key in known for key in instance):
        return [
            job.problem(
                (),
                f"no top-level key is a Job field ({', '.join(known)}); is this a job config file?",
            )
        ]
    out = [job.problem((*path, key), msg) for key, msg in zip(unknown, messages, strict=True)]
    if len(out) > MAX_UNKNOWN_PER_MAPPING:
        rest = len(out) - MAX_UNKNOWN_PER_MAPPING
        out = [*out[:MAX_UNKNOWN_PER_MAPPING], job.problem(path, f"and {rest} more unknown keys")]
    return out


def schema_problems(job: JobFile) -> list[Problem]:
    """Every schema violation in ``job.data``, located, with did-you-mean hints for unknown keys."""
    from mlsubmit.job.schema_check import Validator  # jsonschema semantics without its ~60 ms import

    validator = Validator(job_schema())
    problems: list[Problem] = []
    for error in validator.iter_errors(job.data):
        path: JsonPath = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            problems += _unknown_keys(job, path, error.instance, list(error.schema.get("properties", {})))
            continue
        if "propertyNames" in error.schema_path:
            if path[:1] == ("labels",):
                continue  # rules.check_labels says it at the key, in label terms
            path = (*path, error.instance)  # a bad key (an env variable's name): its own line
        elif path[:1] == ("labels",) and error.validator in ("type", "maxLength") and len(path) == 2:
            continue  # rules.check_labels says it in label terms
        problems.append(job.problem(path, hints.describe(error)))
    problems.sort(key=lambda p: (p.line or 0, p.path))
    return problems


def _int64_text(value: Any) -> Any:
    """``2``, ``2.0`` (JSON Schema counts both as integers) or ``"02"`` -> ``"2"``; anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return str(int(value))
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return str(int(value))  # what gcloud sends for a quoted "0755": the service reads decimal digits
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
    ti = job.data.get("trainingInput")
    if isinstance(ti, dict):
        job.notes += [job.problem(where, message) for where, message in hyperparameter_warnings(ti)]
    if job.notes:
        import logging  # only with something to say: a dry run of a clean file never loads it

        for note in job.notes:
            logging.getLogger(__name__).warning("%s", note)
    return job, problems


def read_job_file(path: str) -> JobFile:
    """Read, parse and schema-check a config file. Raises ConfigFileError or InvalidJobError (exit 2)."""
    job, problems = check_job_file(path)
    if problems:
        raise InvalidJobError(problems)
    return job
