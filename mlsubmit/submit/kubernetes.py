"""Where a TFJob goes (docs/kubernetes.md): ``--context``, ``--namespace``, ``--queue`` over the config file's
``kubernetes:`` block, checked offline; the namespace a dry run prints; and the words for a local package that
cannot reach the cluster. Shared by the command line (``cli/kubernetes.py``) and the Python API (``mlsubmit.api``),
so both print the same TFJob."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mlsubmit.errors import InvalidJobError, Problem, UsageError


@dataclass(frozen=True)
class Where:
    """``--context``, ``--namespace``, ``--queue`` over the config file's ``kubernetes:`` block."""

    context: str | None
    namespace: str | None
    queue: str | None

    @classmethod
    def of(cls, opts: Mapping[str, Any], block: Any = None, *, flag: str = "--{}") -> Where:
        """The flags over the file's block; values that reach a URL or a label are checked here, offline.
        ``flag``: how an error names the setting (``flags[{!r}]`` for the Python API)."""
        from mlsubmit.services.kubernetes.kubeconfig import namespace_problem
        from mlsubmit.targets.tfjob import label_value_problem

        file = block if isinstance(block, dict) else {}
        values = {k: opts.get(k) or file.get(k) for k in ("context", "namespace", "queue")}
        for key, value in values.items():
            if value is not None and not isinstance(value, str):
                named = flag.format(key) if opts.get(key) else f"the config file's kubernetes.{key}"
                raise UsageError(f"{named}: expected a string, got {type(value).__name__}.")
        where = cls(**values)
        if where.namespace:
            problem = namespace_problem(where.namespace)
            if problem:
                raise UsageError(f"{flag.format('namespace')}: {problem}.")
        if where.queue:
            problem = label_value_problem(where.queue)
            if problem:
                raise UsageError(f"{flag.format('queue')}: {problem}.")
        return where

    @property
    def hint_flags(self) -> str:
        flags = " --target kubernetes"
        if self.context:
            flags += f" --context {self.context}"
        if self.namespace:
            flags += f" --namespace {self.namespace}"
        return flags

    def namespace_offline(self, env: Mapping[str, str]) -> str:
        """A dry run's namespace: the flag or file, else the kubeconfig context's, else ``default`` when no
        kubeconfig can be read (a dry run in CI needs none); a ``--context`` that is named must exist."""
        if self.namespace:
            return self.namespace
        from mlsubmit.services.kubernetes.kubeconfig import load_context

        try:
            return load_context(env, context=self.context).namespace
        except UsageError:
            if self.context:
                raise
            return "default"


UNREACHABLE = "local packages need a staging location"


def reachable(err: InvalidJobError) -> InvalidJobError:
    """A local package needs a place the cluster reads it from: say so in the words of this target."""
    problems = [
        Problem(
            "--target kubernetes: the local package cannot reach the cluster from this machine; pass "
            "--staging-bucket gs://BUCKET (the pods fetch it from there) and, to run it in an image of its own, "
            "--build-image",
            path=p.path,
            file=p.file,
        )
        if p.message.startswith(UNREACHABLE)
        else p
        for p in err.problems
    ]
    return InvalidJobError(problems)
