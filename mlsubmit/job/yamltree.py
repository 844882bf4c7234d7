"""YAML or JSON text -> plain Python with the line of every value, safely: nesting depth is checked before
PyYAML's recursive composer runs, alias expansion is bounded ("billion laughs" is an error, not an OOM), and every
scalar gets the meaning its field wants (:mod:`mlsubmit.job.scalars`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlsubmit.errors import ConfigFileError, InvalidJobError, Problem
from mlsubmit.job import hints, scalars
from mlsubmit.job.hints import format_path

MAX_NODES = 100_000  # values after alias expansion; real configs have a few hundred
MAX_DEPTH = 64  # nesting levels; a real config is under 10 deep
JsonPath = tuple[str | int, ...]
Schema = Mapping[str, Any]

if TYPE_CHECKING:
    import yaml


def _loader(text: str) -> yaml.SafeLoader:
    """libyaml's safe loader if PyYAML has it, else the pure-Python one (PyYAML imported on the first file read)."""
    import yaml

    loader_class: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader_class(text)


def _child(root: Schema, schema: Schema | None, key: str | int) -> Schema | None:
    """The schema of ``key`` in a value ``schema`` describes (None: unknown); ``root`` has ``$defs``."""
    if schema is None:
        return None
    if isinstance(key, int):
        sub = schema.get("items")
    else:
        sub = (schema.get("properties") or {}).get(key, schema.get("additionalProperties"))
    return hints.resolve(root, sub) if isinstance(sub, dict) else None


def _scan(text: str, name: str) -> set[tuple[int, int]]:
    """Nesting past MAX_DEPTH refused from the events, before the composer recurses; where tagged scalars start."""
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

    def __init__(self, name: str, tagged: set[tuple[int, int]], root: Schema) -> None:
        import yaml

        self.name, self.root, self.tagged, self.count = name, root, tagged, 0
        self.lines: dict[JsonPath, int] = {}
        self.problems: list[Problem] = []
        self.notes: list[Problem] = []
        self._scalar = yaml.SafeLoader("")
        self._open: set[int] = set()  # ids of the nodes being converted, to catch alias cycles

    def _problem(self, message: str, path: JsonPath, node: yaml.Node) -> Problem:
        return Problem(message, format_path(path), self.name, node.start_mark.line + 1)

    def convert(self, node: yaml.Node, path: JsonPath, schema: Schema | None) -> Any:
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
        """A tagged scalar's value; a tag or text it cannot take (``!!binary``, ``!!int abc``): a problem at its line."""
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

    def _mapping(self, node: yaml.MappingNode, path: JsonPath, schema: Schema | None) -> dict[str, Any]:
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
        written: set[str] = set()  # keys written here so far
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(self._problem("mapping keys must be plain strings", path, key_node))
                continue
            constructed = self._construct(key_node, path)  # a key of another type: its text
            key = constructed if isinstance(constructed, str) else str(key_node.value)
            if id(key_node) in own and key in written:
                self.problems.append(
                    self._problem(f"duplicate key {hints.short(key)}; keep one", (*path, key), key_node)
                )
            self.lines[path + (key,)] = key_node.start_mark.line + 1  # noqa: RUF005 (py3.10 subscript)
            # a key written here wins over one merged in
            out[key] = self.convert(value_node, (*path, key), _child(self.root, schema, key))
            if id(key_node) in own:
                written.add(key)
        return out

    def _convert(self, node: yaml.Node, path: JsonPath, schema: Schema | None) -> Any:
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
            return [
                self.convert(item, (*path, i), _child(self.root, schema, i))
                for i, item in enumerate(node.value)
            ]
        assert isinstance(node, yaml.ScalarNode)
        explicit = (node.start_mark.line, node.start_mark.column) in self.tagged
        if explicit and node.tag != "tag:yaml.org,2002:str":
            return self._construct(node, path)
        kind = schema.get("type") if schema is not None else None  # ["integer", "string"] for an int64
        kinds = None if kind is None else frozenset(kind if isinstance(kind, list) else [kind])
        meaning = scalars.interpret(node.value, plain=not node.style and not explicit, kinds=kinds)
        if meaning.note:
            self.notes.append(self._problem(f"{meaning.note}; write {meaning.value} to say so", path, node))
        return meaning.value


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


def load(text: str, name: str, schema: Schema) -> JobFile:
    """Read YAML or JSON text whose top level is a mapping described by ``schema`` (a JSON Schema with
    ``$defs``). ConfigFileError when it is empty, not YAML, too big or no mapping; InvalidJobError for bad values."""
    import yaml

    empty = f"{name}: file is empty; it should hold a Job resource with a trainingInput: key."
    if not text.strip():
        raise ConfigFileError(empty)
    try:
        tagged = _scan(text, name)  # bounds the depth before the (recursive) composer runs
        loader = _loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f":{mark.line + 1}" if mark else ""
        what = err.problem or err.context
        # The libyaml in PyYAML 6.0.4's wheels stops deep flow nesting in its scanner, before our event walk.
        if what and "nesting depth" in what:
            raise ConfigFileError(f"{name}{line}: values nest deeper than {MAX_DEPTH} levels.") from None
        if err.context and err.problem and err.problem.startswith("but found"):
            what = f"{err.context} {err.problem}"  # "expected a single document ... but found another"
        raise ConfigFileError(f"{name}{line}: not valid YAML/JSON: {what}.") from None
    except yaml.YAMLError as err:
        raise ConfigFileError(f"{name}: not valid YAML/JSON: {hints.short(str(err), 120)}.") from None
    if node is None:
        raise ConfigFileError(empty)
    conv = _Converter(name, tagged, schema)
    data = conv.convert(node, (), schema)
    if data is None and not conv.problems:  # a document with only `---` or `~`
        raise ConfigFileError(empty)
    if conv.problems:  # a tagged top level (`!!python/object/apply:...`) too: name it
        raise InvalidJobError(conv.problems)
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"{name}:{node.start_mark.line + 1}: the top level must be a mapping (jobId, labels, trainingInput), "
            f"not a {type(data).__name__}."
        )
    return JobFile(name, data, conv.lines, conv.notes)
