"""One pass over a trainer module's AST (parsed, never imported or run): what it uses, by fully qualified name
with import aliases resolved (``tf.estimator`` reads ``tensorflow.estimator``; ``torch.optim.SGD(lr=...)`` is never
Keras), and where; what needs the whole package is gathered here and judged in :mod:`.checkup`."""

from __future__ import annotations

import ast
import gc
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from mlsubmit.migrate import rules as R


class Uses:
    """What one module uses: names with the lines they are on, and the facts the package-wide rules need."""

    def __init__(self) -> None:
        lines: Any = lambda: defaultdict(list)  # noqa: E731 - a name -> the lines it is on
        self.names: dict[str, list[int]] = lines()  # resolved dotted names
        self.calls: list[tuple[str, int, ast.Call]] = []  # resolved callee, line, node
        self.methods: dict[str, list[ast.Call]] = lines()  # .attr(...) calls by attr
        self.subscripted: dict[str, list[int]] = lines()  # x.attr[...] by attr
        self.strings: dict[str, list[int]] = lines()  # str constants
        self.compared: dict[str, list[int]] = lines()  # str compared / indexed
        self.subscript_keys: dict[str, list[int]] = lines()  # x['KEY']
        self.defaulted_keys: dict[str, list[int]] = lines()  # x.get('KEY', d)
        self.py2_names: dict[str, list[int]] = lines()
        self.py2_modules: dict[str, list[int]] = lines()
        self.imported_roots: set[str] = set()  # top-level modules imported ("tensorflow")
        # modules a plain import needs (not inside try/except ImportError): dotted name -> lines
        self.required_imports: dict[str, list[int]] = lines()
        self.constants: dict[str, str] = {}  # NAME = 'text' (names assigned once)
        # --job-dir arguments: line, required=True, a default that is a local path (or None)
        self.job_dir_args: list[tuple[int, bool, str | None]] = []
        self.syntax_error: tuple[int, str] | None = None

    def method_lines(self, name: str) -> list[int]:
        return [node.lineno for node in self.methods.get(name, [])]


def leading_text(node: ast.expr) -> str | None:
    """The literal start of a string expression: ``'gsutil cp %s' % x``, ``f'gsutil {x}'``, ``'...'.format()``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return leading_text(node.values[0])
    if isinstance(node, ast.BinOp):
        return leading_text(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return leading_text(node.func.value)
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return leading_text(node.elts[0])
    return None


class _Scanner(ast.NodeVisitor):
    """An ast.NodeVisitor with dispatch looked up once per node kind and field-less unvisited nodes skipped."""

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        try:
            method = _DISPATCH[kind]
        except KeyError:
            method = getattr(_Scanner, "visit_" + kind.__name__, None)
            if method is None and kind._fields:  # not Load, Store, Add, Eq...: something under it to visit
                method = _Scanner.generic_visit
            _DISPATCH[kind] = method
        if method is not None:
            method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def __init__(self) -> None:
        self.uses = Uses()
        self.aliases: dict[str, str] = {}
        self.bound: set[str] = set()
        self.assigned: set[str] = set()
        self.guarded = 0  # inside try/except ImportError: Python 2/3 compatibility imports are fine

    def _imported(self, full: str, line: int) -> None:
        self.uses.names[full].append(line)
        if not self.guarded:
            self.uses.required_imports[full].append(line)
        root = full.split(".")[0]
        self.uses.imported_roots.add(root)
        if root in R.PY2_MODULES and not self.guarded:
            self.uses.py2_modules[root].append(line)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.aliases[bound] = alias.name if alias.asname else bound
            self.bound.add(bound)
            self._imported(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            name = alias.asname or alias.name
            self.bound.add(name)
            if node.level or not node.module:
                continue  # the trainer's own modules
            full = node.module if name == "*" else f"{node.module}.{alias.name}"
            self.aliases[name] = full
            self._imported(full, node.lineno)

    def visit_Try(self, node: ast.Try) -> None:
        caught = [
            k for h in node.handlers for k in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
        ]
        names = ("ImportError", "ModuleNotFoundError", "Exception")
        guarded = any(k is None or (isinstance(k, ast.Name) and k.id in names) for k in caught)
        self.guarded += guarded
        for stmt in node.body:
            self.visit(stmt)
        self.guarded -= guarded
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    def resolve(self, node: ast.expr) -> str | None:
        """``a.b.c`` with ``a``'s import resolved; None when ``a`` is no import (or the chain ends in no name)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        full = self.resolve(node)
        if full is not None:
            self.uses.names[full].append(node.lineno)
            return  # the whole chain is one name
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.bound.add(node.id)
        elif node.id in R.PY2_BUILTINS:
            self.uses.py2_names[node.id].append(node.lineno)
        elif node.id in self.aliases and self.aliases[node.id] != node.id:
            self.uses.names[self.aliases[node.id]].append(node.lineno)

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
            if name in self.assigned:
                self.uses.constants.pop(name, None)  # assigned twice: not a constant
            elif isinstance(value, ast.Constant) and isinstance(value.value, str):
                self.uses.constants[name] = value.value
            self.assigned.add(name)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self.bound.add(node.arg)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.bound.add(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        full = self.resolve(node.func)
        if full is not None:
            self.uses.calls.append((full, node.lineno, node))
        if isinstance(node.func, ast.Attribute) and full is None:  # a method, not six.iteritems(d)
            self.uses.methods[node.func.attr].append(node)
            if node.func.attr == "add_argument":
                self._argparse(node)
            if node.func.attr == "get" and node.args:  # d.get(KEY, default) cannot raise KeyError
                self._key(node.args[0], defaulted=len(node.args) > 1)
        self.generic_visit(node)

    def _argparse(self, node: ast.Call) -> None:
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not any(f in ("--job-dir", "--job_dir") for f in flags):
            return
        given = {k.arg: k.value for k in reversed(node.keywords) if k.arg}  # the first of a repeated keyword
        values = {key: v.value for key, v in given.items() if isinstance(v, ast.Constant)}
        required, default = values.get("required") is True, values.get("default")
        local_default = default if isinstance(default, str) and "://" not in default else None
        help_text = leading_text(given["help"]) or "" if "help" in given else ""
        # "this model ignores this field, but it is required by gcloud": argparse still exits when it is missing
        ignored = "ignore" in help_text.lower()
        if required or not ignored:
            self.uses.job_dir_args.append((node.lineno, required, None if ignored else local_default))

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) <= 200:
            self.uses.strings[node.value].append(node.lineno)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operand in (node.left, *node.comparators):
            elts = operand.elts if isinstance(operand, (ast.List, ast.Tuple, ast.Set)) else [operand]
            for elt in elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    self.uses.compared[elt.value].append(elt.lineno)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self._key(node.slice)
        if isinstance(node.value, ast.Attribute):
            self.uses.subscripted[node.value.attr].append(node.lineno)
        self.generic_visit(node)

    def _key(self, key: ast.expr, defaulted: bool = False) -> None:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys = self.uses.defaulted_keys if defaulted else self.uses.subscript_keys
            keys[key.value].append(key.lineno)


_DISPATCH: dict[type[ast.AST], Callable[[_Scanner, Any], None] | None] = {}  # node kind -> its visit method


def scan_source(source: str | bytes, filename: str = "<trainer>") -> Uses:
    """What the module uses; a module that is not Python 3 gets ``syntax_error`` and nothing else."""
    collecting = gc.isenabled()  # an AST holds no cycles: the collector would only rescan what is loaded
    gc.disable()
    failed, scanner = Uses(), _Scanner()
    try:
        scanner.visit(ast.parse(source, filename=filename))
        # a Python 2 builtin the module defines or imports itself (six.moves.xrange, a variable named file) is fine
        for name in [n for n in scanner.uses.py2_names if n in scanner.bound]:
            del scanner.uses.py2_names[name]
        return scanner.uses
    except SyntaxError as err:
        failed.syntax_error = (err.lineno or 1, err.msg)
    except ValueError:  # NUL bytes
        failed.syntax_error = (1, "the file holds NUL bytes")
    except (RecursionError, MemoryError):
        failed.syntax_error = (1, "nested too deeply for Python to compile it")
    finally:
        if collecting:
            gc.enable()
    return failed
