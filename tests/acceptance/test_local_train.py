"""`mlsubmit local train` from the command line: the quick-start example, TF_CONFIG as each replica
sees it, the config file, and bad input refused with one clear line and exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli, run_cli_process
from tests.fakes.ports import free_block
from tests.fakes.trainers import write_trainer

REPO = Path(__file__).resolve().parents[2]
BASIC = REPO / "examples" / "trainer_basic" / "trainer"

# A trainer that records the TF_CONFIG and argv each replica got, then exits (ps included). The chief waits for
# DUMP_EXPECT records (default: its own) before it exits, because the cluster stops with the chief, as a
# synchronous trainer would; each record is written whole (rename), so a stopped replica leaves none or one.
DUMP_TASK = """\
import json, os, sys, time
config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
kind = task.get("type", "chief")  # gcloud's single process: an empty task
name = kind if kind in ("chief", "master") else f"{kind}-{task['index']}"
out = os.environ["DUMP_DIR"]
with open(os.path.join(out, "." + name), "w") as f:
    json.dump({"tf_config": config, "argv": sys.argv[1:], "cwd": os.getcwd(), "unbuffered": os.environ.get("PYTHONUNBUFFERED")}, f)
os.replace(os.path.join(out, "." + name), os.path.join(out, name + ".json"))
if kind in ("chief", "master"):
    ends = time.monotonic() + 60
    while sum(n.endswith(".json") for n in os.listdir(out)) < int(os.environ.get("DUMP_EXPECT", "1")):
        assert time.monotonic() < ends, "the other replicas never wrote their records"
        time.sleep(0.02)
print("dumped", name)
"""


def mlsubmit(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would."""
    return run_cli_process(args, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def dump_pkg(tmp_path: Path) -> Path:
    (tmp_path / "dump").mkdir()
    return write_trainer(tmp_path, DUMP_TASK)


def dumps(tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in (tmp_path / "dump").glob("*.json")}


def test_quick_start_example_runs_a_cluster_and_writes_the_job_dir(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    result = mlsubmit(
        "local", "train", "--package-path", str(BASIC), "--module-name", "trainer.task", "--distributed",
        "--worker-count", "2", "--parameter-server-count", "1", "--job-dir", str(job_dir), "--", "--epochs", "30",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = json.loads((job_dir / "model.json").read_text())
    assert model["role"] == "chief" and abs(model["w"] - 3.0) < 0.5 and abs(model["b"] - 2.0) < 0.5
    assert sorted(p.name for p in (job_dir / "workers").iterdir()) == ["worker-0.json", "worker-1.json"]
    lines = result.stdout.splitlines()
    assert "[chief] role=chief index=0 cluster=['chief', 'ps', 'worker'] job_dir=" + str(job_dir) in lines
    assert any(line.startswith("[worker-1] done: ") for line in lines)
    assert "[ps-0] parameter server ready; nothing to serve in this example, waiting to be stopped" in lines
    assert all(line.startswith(("[chief] ", "[worker-0] ", "[worker-1] ", "[ps-0] ")) for line in lines)


def test_single_process_tf_config_and_args(dump_pkg: Path, tmp_path: Path) -> None:
    result = mlsubmit(
        "local", "train", "--package-path", str(dump_pkg), "--module-name", "trainer.task", "--job-dir", "out",
        "--trial", "2", "--", "--epochs", "3",
        cwd=tmp_path, env={"DUMP_DIR": str(tmp_path / "dump")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[chief] dumped chief\n"
    seen = dumps(tmp_path)["chief"]
    args = ["--epochs", "3", "--job-dir", str(tmp_path / "out")]
    assert seen["tf_config"] == {
        "cluster": {},
        "task": {"trial": "2"},
        "job": {"job_name": "trainer.task", "args": args},
        "environment": "cloud",
    }
    assert seen["argv"] == args
    assert seen["cwd"] == str(dump_pkg.parent)  # the package's parent, as gcloud
    assert seen["unbuffered"] == "1"


def test_distributed_tf_config_has_no_empty_roles_and_loopback_ports(dump_pkg: Path, tmp_path: Path) -> None:
    result = mlsubmit(
        "local", "train", "--package-path", str(dump_pkg), "--module-name", "trainer.task", "--distributed",
        "--worker-count", "1", "--parameter-server-count", "0", "--evaluator-count", "1",
        env={"DUMP_DIR": str(tmp_path / "dump"), "DUMP_EXPECT": "3"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    seen = dumps(tmp_path)
    assert sorted(seen) == ["chief", "evaluator-0", "worker-0"]
    cluster = seen["chief"]["tf_config"]["cluster"]
    assert sorted(cluster) == ["chief", "worker"]  # no "ps": [], no evaluator
    for address in cluster["chief"] + cluster["worker"]:
        host, port = address.split(":")
        assert host == "localhost" and 1024 <= int(port) <= 65535
    assert all(s["tf_config"]["cluster"] == cluster for s in seen.values())
    assert seen["evaluator-0"]["tf_config"]["task"] == {"type": "evaluator", "index": 0}
    assert seen["worker-0"]["tf_config"]["environment"] == "cloud"


def test_config_file_drives_the_cluster(dump_pkg: Path, tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "trainingInput:\n"
        "  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  workerType: n1-standard-4\n  workerCount: 2\n"
        "  masterConfig: {imageUri: gcr.io/p/trainer}\n"
        "  pythonModule: trainer.task\n  args: [--from-file, '1']\n"
    )
    start = free_block(3)
    result = run_cli(
        [
            "local",
            "train",
            "--config",
            str(config),
            "--package-path",
            str(dump_pkg),
            "--start-port",
            str(start),
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    replicas = json.loads(result.stdout)["replicas"]
    assert [r["name"] for r in replicas] == ["worker-0", "worker-1", "master"]  # custom container: master
    config_seen = replicas[-1]["tf_config"]
    assert config_seen["cluster"] == {
        "master": [f"localhost:{start}"],
        "worker": [f"localhost:{start + 1}", f"localhost:{start + 2}"],
    }
    assert config_seen["job"]["args"] == ["--from-file", "1"]
    assert config_seen["job"]["workerCount"] == "2" and config_seen["job"]["scaleTier"] == "CUSTOM"
    assert replicas[0]["argv"][1:] == ["-m", "trainer.task", "--from-file", "1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--package-path", "no/such/dir", "--module-name", "trainer.task"],
            "ERROR: --package-path no/such/dir: no such directory.",
        ),
        (["--package-path", "{pkg}", "--module-name", "trainer/task"], "contains a path separator"),
        (["--package-path", "{pkg}", "--module-name", "trainer.tsk"], "did you mean trainer.task?"),
        (
            [
                "--package-path",
                "{pkg}",
                "--module-name",
                "trainer.task",
                "--distributed",
                "--worker-count",
                "-1",
            ],
            "-1 is not in the range x>=0",
        ),
        (
            ["--package-path", "{pkg}", "--module-name", "trainer.task", "--start-port", "70000"],
            "70000 is not in the range 1<=x<=65535",
        ),
        (
            [
                "--package-path",
                "{pkg}",
                "--module-name",
                "trainer.task",
                "--distributed",
                "--start-port",
                "65534",
            ],
            "leaves no room for 5 ports",
        ),
        (
            ["--package-path", "{pkg}", "--module-name", "trainer.task", "--max-running-time", "soon"],
            "positive duration",
        ),
        (
            ["--package-path", "{pkg}", "--module-name", "trainer.task", "--python", "/no/python"],
            "is not an executable file",
        ),
        (
            ["--package-path", "{pkg}", "--module-name", "trainer.task", "--epochs", "3"],
            "arguments for your trainer go after `--`",
        ),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(dump_pkg: Path, args: list[str], message: str) -> None:
    args = [a.replace("{pkg}", str(dump_pkg)) for a in args]
    result = run_cli(["local", "train", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_package_without_init_py(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("")
    result = run_cli(
        ["local", "train", "--package-path", str(tmp_path / "trainer"), "--module-name", "trainer.task"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("ERROR: --package-path ") and "has no __init__.py" in result.stderr


def test_ignored_counts_warn_like_gcloud(dump_pkg: Path, tmp_path: Path) -> None:
    result = mlsubmit(
        "local", "train", "--package-path", str(dump_pkg), "--module-name", "trainer.task", "--worker-count", "2",
        env={"DUMP_DIR": str(tmp_path / "dump")},
    )  # fmt: skip
    assert result.returncode == 0
    assert "WARNING: --worker-count is ignored without --distributed" in result.stderr
    assert sorted(dumps(tmp_path)) == ["chief"]


def test_python_from_environment_variable(dump_pkg: Path, tmp_path: Path) -> None:
    # A wrapper interpreter that marks the environment, to prove it is the one the replicas ran under.
    wrapper = tmp_path / "mypython"
    wrapper.write_text(f'#!/bin/sh\nexport VIA_WRAPPER=yes\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    (dump_pkg / "task.py").write_text(DUMP_TASK + "assert os.environ['VIA_WRAPPER'] == 'yes'\n")
    result = mlsubmit(
        "local", "train", "--package-path", str(dump_pkg), "--module-name", "trainer.task",
        env={"DUMP_DIR": str(tmp_path / "dump"), "MLSUBMIT_LOCAL_PYTHON": str(wrapper)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_chief_exit_status_is_returned(dump_pkg: Path, tmp_path: Path) -> None:
    (dump_pkg / "task.py").write_text("import sys\nprint('oops', file=sys.stderr)\nsys.exit(7)\n")
    result = mlsubmit("local", "train", "--package-path", str(dump_pkg), "--module-name", "trainer.task")
    assert result.returncode == 7
    assert result.stderr.splitlines() == ["[chief] oops", "ERROR: [chief] exited with status 7."]
