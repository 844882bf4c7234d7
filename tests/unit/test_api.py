"""``mlsubmit.api`` offline: its flags are `training`'s, a handle survives JSON and an edited one is refused,
and importing it costs no more than a dry run (docs/api.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mlsubmit import api
from mlsubmit.cli.training import training
from mlsubmit.errors import UsageError
from mlsubmit.job.request import FLAG_KINDS, typed_flags

REPO = Path(__file__).resolve().parents[2]
# training's options about output and following: the Python caller's own business
NOT_API = {"job", "fmt", "dry_run", "async_", "stream_logs", "wait", "cancel_on_interrupt"}
VERTEX_NAME = "projects/p/locations/us-central1/customJobs/123"


def test_the_api_takes_exactly_the_flags_of_training() -> None:
    assert set(FLAG_KINDS) - {"args"} == {p.name for p in training.params} - NOT_API


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            {"modul_name": "t"},
            "flags: 'modul_name' is not a flag of `mlsubmit training`; did you mean 'module_name'?",
        ),
        ({"fmt": "json"}, "flags: 'fmt' is not a flag of `mlsubmit training`"),
        ({"namespace": "team-a"}, "flags: context, namespace and queue are for target='kubernetes'."),
        ({"target": "kubernetes", "queue": 3}, "flags['queue']: expected a string, got int."),
        ({"worker_count": "3"}, "flags['worker_count']: expected a whole number >= 0, got str."),
        ({"worker_count": -1}, "flags['worker_count']: expected a whole number >= 0, got int."),
        ({"worker_count": True}, "flags['worker_count']: expected a whole number >= 0, got bool."),
        ({"labels": ["a=b"]}, "flags['labels']: expected a mapping of strings to strings, got list."),
        ({"packages": [3]}, "flags['packages']: expected a list of strings, got list."),
        ({"master_accelerator": "type=x,count=1"}, "flags['master_accelerator']: expected a mapping"),
        ({"build_image": "yes"}, "flags['build_image']: expected True or False, got str."),
        ({"max_queue_wait": "30m"}, "flags['max_queue_wait']: expected a number of seconds >= 0, got str."),
    ],
)
def test_a_bad_flag_is_named_before_anything_runs(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as err:
        api.plan("j", flags=flags)
    assert str(err.value).startswith(message)


def test_flags_take_the_values_the_command_line_types_make() -> None:
    given = typed_flags(
        {
            "scale_tier": "basic-gpu",
            "worker_accelerator": {"type": "nvidia-tesla-t4", "count": 2},
            "packages": "gs://b/p.tar.gz",
            "env": {"A": "1"},
            "target": "Vertex",
            "config": REPO / "examples" / "configs" / "container.yaml",
        }
    )
    assert given["scale_tier"] == "BASIC_GPU"
    assert (given["worker_accelerator"].type, given["worker_accelerator"].count) == ("NVIDIA_TESLA_T4", 2)
    assert given["packages"] == ["gs://b/p.tar.gz"]
    assert given["env"] == [("A", "1")]
    assert given["target"] == "vertex"
    assert isinstance(given["config"], str)


def test_an_unknown_target_and_a_config_given_twice_are_refused() -> None:
    with pytest.raises(UsageError, match="flags\\['target'\\]: 'kubeflow' is not one of ml, vertex"):
        api.plan("j", flags={"target": "kubeflow"})
    with pytest.raises(UsageError, match="config is given twice"):
        api.plan("j", "a.yaml", {"config": "b.yaml"})


@pytest.mark.parametrize(
    "handle",
    [
        api.Handle("my_job", "ml", "p", None, "projects/p/jobs/my_job"),
        api.Handle("my_job", "vertex", "p", "us-central1", VERTEX_NAME),
    ],
)
def test_a_handle_survives_a_json_round_trip_without_its_connection(handle: api.Handle) -> None:
    secret = api.Connection(access_token_file="/secret/token", api_endpoint="https://evil.example")
    text = api.Handle(
        handle.job_id, handle.target, handle.project, handle.region, handle.name, secret
    ).to_json()
    assert "secret" not in text and "evil" not in text
    back = api.Handle.from_json(text)
    assert back == handle and back.connection == api.Connection()
    assert json.loads(text)["mlsubmit_handle"] == 1


GOOD = json.loads(api.Handle("my_job", "vertex", "p", "us-central1", VERTEX_NAME).to_json())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"name": "projects/other/locations/us-central1/customJobs/123"},
            "name is not a Vertex AI job of project p",
        ),
        (
            {"name": "projects/p/locations/europe-west4/customJobs/123"},
            "name is not a Vertex AI job of project p",
        ),
        ({"project": "other"}, "name is not a Vertex AI job of project other"),
        ({"name": "projects/p/locations/us-central1/customJobs/1?x=/../"}, "name is not a Vertex AI job"),
        ({"mlsubmit_handle": 2}, "version 2 is not 1"),
        ({"mlsubmit_handle": True}, "version true is not 1"),
        ({"token": "x"}, "expected exactly the keys"),
        ({"region": "us-central1/../x"}, "region 'us-central1/../x' is invalid"),
        (
            {"target": "kubernetes"},
            "expected exactly the keys context, job_id, mlsubmit_handle, name, namespace",
        ),
        ({"target": "gke"}, "target 'gke' is not ml, vertex or kubernetes"),
        ({"target": "ml"}, "name is not projects/p/jobs/my_job (with no region)"),
        ({"job_id": "a b"}, "job id 'a b' is invalid"),
    ],
)
def test_an_edited_handle_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as err:
        api.Handle.from_json(json.dumps({**GOOD, **change}))
    assert message in str(err.value)
    assert str(err.value).startswith("job handle: ")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        "{",
        "x" * 5000,
        json.dumps({**GOOD, "name": "n" * 5000}),
        "[" * 2000 + "]" * 2000,
        b"\xff\xfe",
    ],
)
def test_what_is_not_a_handle_is_refused(text: str | bytes) -> None:
    with pytest.raises(UsageError, match=r"^job handle: "):
        api.Handle.from_json(text)


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (which prints nothing itself)."""
    script = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_importing_the_api_costs_no_more_than_a_dry_run() -> None:
    dry_run = (
        "from mlsubmit.cli import cli\n"
        "import os; os.environ['CLOUDSDK_CORE_PROJECT'] = 'p'\n"
        "try:\n"
        "    cli.main(['training', 'j', '--config', 'examples/configs/container.yaml', '--dry-run'],"
        " standalone_mode=False)\n"
        "except SystemExit: pass\n"
        "sys.stdout.flush(); import io; sys.stdout = io.StringIO(); sys.stdout = sys.__stdout__\n"
    )
    imported = modules_after("import mlsubmit.api")
    ran = modules_after(
        "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in dry_run.splitlines())
    )
    assert "mlsubmit.submit" in ran and "mlsubmit.api" in imported  # the dry run did run
    assert imported <= ran  # the CLI goes through the API: a dry run imports it


CALLER = """
from mlsubmit import api
from mlsubmit.errors import JobEndedError


def poke(text: str) -> bool:
    return api.Handle.from_json(text).status().done


def run() -> str:
    planned: api.Plan = api.plan("j", "job.yaml", {"module_name": "trainer.task"})
    handle = api.submit(planned.job_id, "job.yaml", {"target": "vertex"})
    try:
        handle.cancel()
    except JobEndedError as err:
        print(err.status)
    lines: list[str] = []
    handle.logs(follow=True, emit=lines.append)
    return handle.to_json()


def wrong() -> int:
    return api.plan("j").job_id
"""


def test_a_caller_type_checks_against_the_public_surface(tmp_path: Path) -> None:
    """mypy --strict on a caller (mlsubmit as an installed, typed package: PEP 561's py.typed ships with it)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    assert (REPO / "mlsubmit" / "py.typed").is_file()
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["mlsubmit"]
    (tmp_path / "caller.py").write_text(CALLER)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "c"),
         "caller.py"],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(REPO)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        'caller.py:23: error: Incompatible return value type (got "str", expected "int")  [return-value]',
        "Found 1 error in 1 file (checked 1 source file)",
    ]
