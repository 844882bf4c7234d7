"""The option groups (``cli/options.py``): every command's and subcommand's ``--help`` runs, each command that talks
to Google takes the connection options (and uses them), no command module imports another, and there is no
import cycle between any two modules of mlsubmit."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from mlsubmit.cli import COMMANDS, LazyGroup, cli
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env
from tests.fakes.lifecycle_support import PROJECT, point_cli_at, seed_job

CONNECTION = ("--project", "--access-token-file", "--api-endpoint")
# Every command path, by whether it calls a Google API (then it takes the connection options) or not.
TALKS_TO_GOOGLE = {
    "training",
    "export",  # stages local packages, builds with --build-image
    "preflight",
    "jobs describe",
    "jobs list",
    "jobs cancel",
    "jobs stream-logs",
    "jobs wait",
    "jobs rerun",  # creates the job again (docs/cost.md)
}
OFFLINE = {
    "validate",
    "local train",
    "local tune",
    "local clean",  # the --from-package environments in the user cache
    "migrate",
    "jobs cost",  # reads the local run ledger only
}  # migrate plans offline: nothing uploaded or read
GROUPS = {"jobs", "local"}


def command_paths(group: click.Group = cli, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    """Every command and subcommand under ``group``, loaded as running it would load it."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from command_paths(command, f"{path} ")


def test_every_command_is_classified() -> None:
    assert {path for path, _ in command_paths()} == TALKS_TO_GOOGLE | OFFLINE | GROUPS


@pytest.mark.parametrize("path", sorted(TALKS_TO_GOOGLE | OFFLINE | GROUPS))
def test_every_help_runs_and_the_commands_that_talk_to_google_take_the_connection_options(path: str) -> None:
    result = run_cli([*path.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(f"Usage: cli {path} ")
    offered = {opt for line in result.stdout.splitlines() for opt in line.split() if opt.startswith("--")}
    if path in TALKS_TO_GOOGLE:
        assert set(CONNECTION) <= offered
    elif path in OFFLINE:
        assert not {"--access-token-file", "--api-endpoint"} & offered  # they would do nothing there


@pytest.mark.parametrize("name", ["tune"])
def test_local_lists_its_lazy_subcommands_from_their_own_help(name: str) -> None:
    local = cli.get_command(click.Context(cli), "local")
    assert isinstance(local, LazyGroup)
    command = local.get_command(click.Context(local), name)
    assert command is not None
    first_paragraph = inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")
    assert " ".join(local.lazy[name].split()) == " ".join(first_paragraph.split())


# --- the connection options do what they say ----------------------------------------------------------------


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("from-the-file\n")
    return path


@pytest.mark.parametrize("args", [["describe", "j1"], ["list"], ["wait", "j1"], ["cancel", "j1"]])
def test_jobs_commands_use_the_token_file_and_the_endpoint_flags(
    monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis, token_file: Path, args: list[str]
) -> None:
    point_cli_at(monkeypatch, fake_apis)
    seed_job(fake_apis, "j1", ["SUCCEEDED"])
    result = run_cli(
        ["jobs", *args, "--access-token-file", str(token_file), "--api-endpoint", fake_apis.url],
        env={"CLOUDSDK_AUTH_ACCESS_TOKEN": None, "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": None},
    )
    assert result.exit_code == 0, result.stderr
    seen = [r for r in fake_apis.requests if r.path.startswith(f"/v1/projects/{PROJECT}/jobs")]
    assert seen and {r.headers.get("authorization") for r in seen} == {"Bearer from-the-file"}


def test_export_stages_with_the_token_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, token_file: Path
) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    with FakeCloudBuild(project="p") as fake:
        for name, value in build_env(fake).items():
            monkeypatch.setenv(name, value)
        result = run_cli(
            ["export", "--format", "customjob", "j1", "--package-path", "trainer", "--module-name",
             "trainer.task", "--region", "us-central1", "--runtime-version", "2.11", "--staging-bucket",
             "gs://stage", "--access-token-file", str(token_file)],
            env={"CLOUDSDK_AUTH_ACCESS_TOKEN": None},
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        assert len(fake.uploads) == 1
        assert {r.headers.get("authorization") for r in fake.requests} == {"Bearer from-the-file"}


# --- imports ------------------------------------------------------------------------------------------------


def import_graph() -> object:
    import grimp  # comes with import-linter (the test extra)

    return grimp.build_graph("mlsubmit", cache_dir=None)


def cycles(graph: object) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}  # type: ignore[attr-defined]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(imports[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(imports[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_modules_of_mlsubmit() -> None:
    # Every import counts, also those inside functions and under TYPE_CHECKING: a cycle is a cycle.
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    class Graph:
        modules = frozenset({"a", "b", "c", "d"})

        @staticmethod
        def find_modules_directly_imported_by(module: str) -> set[str]:
            return {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}[module]

    assert cycles(Graph()) == [["a", "b", "c"]]


def test_no_command_module_imports_another() -> None:
    graph = import_graph()
    commands = {f"mlsubmit.cli.{name}" for name in [*COMMANDS, "tune"]}
    for module in sorted(commands):
        imported = graph.find_modules_directly_imported_by(module)  # type: ignore[attr-defined]
        assert imported & commands == set(), module


def test_tri_state_flags_left_out_are_none_so_the_file_stands() -> None:
    from mlsubmit.cli.training import training

    params = training.make_context("training", ["job", "--target", "vertex"]).params
    tri_state = (
        "preflight",
        "build_image",
        "enable_web_access",
        "disable_retries",
        "enable_dashboard_access",
    )
    assert {name: params[name] for name in tri_state} == dict.fromkeys(tri_state)
