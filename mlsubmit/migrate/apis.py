"""Findings of one module against the dated API tables of :mod:`mlsubmit.migrate.rules`."""

from __future__ import annotations

import functools
from collections.abc import Iterator

from mlsubmit.migrate import rules as R
from mlsubmit.migrate.findings import Finding, ImageVersions, Severity
from mlsubmit.migrate.scan import Uses, leading_text

PACKAGE_NAMES = {"tensorflow": "TensorFlow"}  # as release notes spell them, where PyPI's name differs


def shown(name: str) -> str:
    """A resolved name as trainers write it: ``tensorflow.estimator`` -> ``tf.estimator``."""
    for full, short in (("tensorflow.", "tf."), ("pandas.", "pd."), ("numpy.", "np.")):
        if name.startswith(full):
            return short + name[len(full) :]
    return name


@functools.cache
def _rule_index() -> tuple[dict[str, int], int]:
    """Each rule's name -> the index of its first rule in ``API_RULES``; and the most dotted parts of a name."""
    index: dict[str, int] = {}
    for position, rule in enumerate(R.API_RULES):
        index.setdefault(rule.name, position)
    return index, max((name.count(".") + 1 for name in index), default=0)


def first_rule(name: str) -> R.ApiRule | None:
    """The first rule named ``name`` or a dotted prefix of it (one look-up per prefix, up to the longest)."""
    index, most = _rule_index()
    parts = name.split(".", most)
    found = [index[p] for n in range(1, min(len(parts), most) + 1) if (p := ".".join(parts[:n])) in index]
    return R.API_RULES[min(found)] if found else None


def _finding(
    path: str, lines: list[int], rule: R.ApiRule, what: str, versions: ImageVersions
) -> list[Finding]:
    """`rule`'s finding on `lines` as the image's version judges it (None without lines or moved too late)."""
    package = PACKAGE_NAMES.get(rule.package, rule.package)
    have, newer = versions.version_of(rule.package), versions.at_least(rule.package, rule.version)
    verb = "moved" if rule.moved else "removed"
    severity: Severity = "info"
    if not lines or (newer is False and rule.moved):
        return []
    if newer is None and rule.moved:
        about = f"{verb} in {package} {rule.version} (the image's {package} version is not known)"
    elif newer is None:
        severity = "warning"
        about = f"{verb} in {package} {rule.version}; the image's {package} version is not known"
    elif newer:
        severity = "warning" if rule.moved else "error"
        about = f"{verb} in {package} {rule.version}; the image has {have}"
    else:
        about = f"works with the image's {package} {have}, but was {verb} in {package} {rule.version}"
    return [Finding.on_lines(path, lines, rule.rule, severity, f"{what}: {about}", rule.fix)]


def api_findings(path: str, uses: Uses, versions: ImageVersions) -> Iterator[Finding]:
    """Every table rule the module breaks, one finding per rule and fix, with all the lines it is on."""
    grouped: dict[tuple[str, str], tuple[R.ApiRule, set[str], list[int]]] = {}
    for name, lines in uses.names.items():
        rule = first_rule(name)
        if rule is not None:
            entry = grouped.setdefault((rule.rule, rule.fix), (rule, set(), []))
            entry[1].add(shown(rule.name))
            entry[2].extend(lines)
    for rule, names, lines in grouped.values():
        yield from _finding(path, lines, rule, ", ".join(sorted(names)), versions)
    yield from _keras(path, uses, versions)
    yield from _pandas(path, uses, versions)
    for objective, new in R.XGBOOST_DEPRECATED_OBJECTIVES.items() if "xgboost" in uses.imported_roots else ():
        if lines := uses.strings.get(objective, []):
            problem = f"objective {objective!r} is deprecated in XGBoost (renamed, {R.XGBOOST})"
            yield Finding.on_lines(path, lines, "xgboost-deprecated", "warning", problem, f"use {new!r}")
    what = "experimental_distribute_datasets_from_function"
    yield from _finding(path, uses.method_lines(what), R.DISTRIBUTE_DATASETS_RENAMED, what, versions)


def _keras(path: str, uses: Uses, versions: ImageVersions) -> Iterator[Finding]:
    lr = _optimizer_keyword(uses, "lr")
    yield from _finding(path, lr, R.KERAS_LR, "a Keras optimizer's lr= argument", versions)
    if not {"keras", "tensorflow"} & uses.imported_roots:
        return  # fit_generator / save(save_format=) of some other library
    generators = sorted(m for m in R.KERAS_GENERATOR_METHODS if uses.methods.get(m))
    gen_lines = [line for m in generators for line in uses.method_lines(m)]
    yield from _finding(path, gen_lines, R.KERAS_GENERATOR, f"Model.{'/'.join(generators)}", versions)
    saves = uses.methods.get("save", [])
    formats = [node for node in saves if any(k.arg == "save_format" for k in node.keywords)]
    yield from _finding(
        path, [n.lineno for n in formats], R.KERAS_SAVE_FORMAT, "Model.save(save_format=...)", versions
    )
    # What Keras 3 changed beyond removed names: Lambda's output shape, save paths, reset_states, decay=.
    lambdas = [
        line
        for callee, line, node in uses.calls
        if callee in ("tensorflow.keras.layers.Lambda", "keras.layers.Lambda")
        and not any(k.arg == "output_shape" for k in node.keywords)
        and len(node.args) < 2
    ]
    # Keras infers many outputs; the ones it cannot fail when the model is built: at most a warning
    for found in _finding(path, lambdas, R.KERAS_LAMBDA, "a Lambda layer without output_shape", versions):
        yield found._replace(severity="warning" if found.severity == "error" else found.severity)
    named = [(n.lineno, getattr(n.args[0], "value", None)) for n in saves if n.args and n not in formats]
    save_paths = [
        line for line, p in named if isinstance(p, str) and not p.endswith((".keras", ".h5", ".hdf5"))
    ]
    what = "Model.save to a path without .keras or .h5"
    yield from _finding(path, save_paths, R.KERAS_SAVE_PATH, what, versions)
    resets = uses.method_lines("reset_states")
    yield from _finding(path, resets, R.KERAS_RESET_STATES, "Metric.reset_states", versions)
    decay = _optimizer_keyword(uses, "decay")
    yield from _finding(path, decay, R.KERAS_DECAY, "a Keras optimizer's decay= argument", versions)


def _optimizer_keyword(uses: Uses, keyword: str) -> list[int]:
    """The lines of Keras optimizers built with ``keyword=`` (resolved names: torch.optim is not Keras)."""
    return [
        line
        for callee, line, node in uses.calls
        if callee.startswith(R.KERAS_OPTIMIZER_MODULES) and any(k.arg == keyword for k in node.keywords)
    ]


def _pandas(path: str, uses: Uses, versions: ImageVersions) -> Iterator[Finding]:
    def rule(name: str, version: str, fix: str) -> R.ApiRule:  # the release notes of pandas `version`.0
        return R.ApiRule("pandas-removed", name, "pandas", version, fix, R.PANDAS.format(f"{version}.0"))

    for callee, line, node in uses.calls:
        for keyword in node.keywords:
            if removed := R.PANDAS_REMOVED_KEYWORDS.get((callee, keyword.arg or "")):
                new, version = removed
                what = f"{shown(callee)}({keyword.arg}=...)"
                yield from _finding(path, [line], rule(callee, version, f"pass {new}"), what, versions)
    if "pandas" not in uses.imported_roots:
        return
    for (method, arg), (new, version) in R.PANDAS_REMOVED_METHOD_KEYWORDS.items():
        nodes = uses.methods.get(method, [])
        lines = [node.lineno for node in nodes if any(k.arg == arg for k in node.keywords)]
        what = f"DataFrame.{method}({arg}=...)"
        yield from _finding(path, lines, rule(method, version, f"pass {new}"), what, versions)
    for attr, (version, fix) in R.PANDAS_REMOVED_METHODS.items():
        lines = uses.method_lines(attr) if attr == "as_matrix" else uses.subscripted.get(attr, [])
        yield from _finding(path, lines, rule(attr, version, fix), f"DataFrame.{attr}", versions)


def subprocess_findings(path: str, uses: Uses) -> Iterator[Finding]:
    """gsutil / gcloud / bq run as commands: absent from Vertex's prebuilt images and most slim ones."""
    for callee, line, node in uses.calls:
        if callee not in R.SUBPROCESS_CALLS or not node.args:
            continue
        words = (leading_text(node.args[0]) or "").split()
        command = words[0] if words else ""
        if command in R.CLOUD_SDK_COMMANDS:
            problem = f"{shown(callee)} runs `{command}`, which Vertex AI's prebuilt training images do not "
            problem += "promise"
            fix = f"use the Cloud Storage client (google-cloud-storage) or tf.io.gfile / the /gcs/ FUSE mount ({R.VERTEX_CODE})"
            yield Finding(path, line, "cloud-sdk-command", "warning", problem, fix)
