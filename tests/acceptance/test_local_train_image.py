"""``local train --build-image`` / ``--image``: every replica runs inside the trainer's image, with its own
TF_CONFIG, the job dir mounted, and no container left behind (docs/containers.md). Real buildah, a real
registry on 127.0.0.1 and a Debian base made offline (tests/fakes/containers.py); skipped where absent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import RunCli, local_args, run_cli_process
from tests.fakes.containers import Storage
from tests.fakes.trainers import write_package, write_trainer

# A stand-in trainer (no TensorFlow in the image): each replica writes the TF_CONFIG it sees, and where it was
# imported from, into the mounted job dir; the chief waits for the worker's file so the run ends after both.
TASK = """\
import argparse, json, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--job-dir")
args, _ = parser.parse_known_args()
config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
record = {"tf_config": config, "module": __file__, "home": os.environ.get("HOME"), "cwd": os.getcwd()}
with open(os.path.join(args.job_dir, f"{task['type']}-{task['index']}.json"), "w") as out:
    json.dump(record, out)
if task["type"] == "chief":
    ends = time.time() + 60
    while not os.path.exists(os.path.join(args.job_dir, "worker-0.json")) and time.time() < ends:
        time.sleep(0.1)
print("replica", task["type"], task["index"], "done")
"""


@pytest.mark.containers
def test_build_push_and_run_chief_and_worker_in_the_image(
    container_storage: Storage, base_image: str, loopback_registry: str, tmp_path: Path
) -> None:
    package = write_trainer(tmp_path, TASK)
    repository = f"{loopback_registry}/mlsubmit/standin"
    cluster = ["--distributed", "--worker-count", "1", "--parameter-server-count", "0"]
    common = [
        "--package-path",
        str(package),
        "--module-name",
        "trainer.task",
        "--builder",
        "buildah",
        *cluster,
    ]

    def run(job_dir: Path, *image: str) -> subprocess.CompletedProcess[str]:
        args = ["local", "train", *common, *image, "--job-dir", str(job_dir)]
        return run_cli_process(args, cwd=tmp_path, env=container_storage.env, timeout=300)

    built = run(
        tmp_path / "out1", "--build-image", "--output-image-uri", repository, "--base-image", base_image
    )
    assert built.returncode == 0, built.stderr
    pinned = re.search(
        rf"Image built and pushed: ({re.escape(repository)}@sha256:[0-9a-f]{{64}})", built.stderr
    )
    assert pinned, built.stderr
    records = {
        name: json.loads((tmp_path / "out1" / f"{name}.json").read_text()) for name in ("chief-0", "worker-0")
    }
    for name, record in records.items():
        kind, index = name.split("-")
        assert record["tf_config"]["task"] == {"type": kind, "index": int(index)}
        assert set(record["tf_config"]["cluster"]) == {"chief", "worker"}
        assert "/dist-packages/trainer/" in record["module"]  # the image's installed package, not the source
        assert (record["home"], record["cwd"]) == ("/home", "/usr/app")  # the Dockerfile's environment
    assert records["chief-0"]["tf_config"]["cluster"] == records["worker-0"]["tf_config"]["cluster"]

    # The example trainer itself (examples/trainer_basic): built on the same base, pushed, run as chief + worker;
    # each replica prints the role and cluster it reads from its TF_CONFIG inside the container, and the chief
    # writes the model into the mounted job dir after the worker's shard. Then the same image by digest.
    example = Path(__file__).resolve().parents[2] / "examples" / "trainer_basic" / "trainer"
    basic = f"{loopback_registry}/mlsubmit/example-in-local-train"  # a name no other test pushes to
    example_args = ["--package-path", str(example), "--module-name", "trainer.task", "--builder", "buildah"]

    def run_example(job_dir: Path, *image: str) -> subprocess.CompletedProcess[str]:
        args = [
            "local",
            "train",
            *example_args,
            *cluster,
            *image,
            "--job-dir",
            str(job_dir),
            "--",
            "--epochs",
            "2",
        ]
        return run_cli_process(args, cwd=tmp_path, env=container_storage.env, timeout=300)

    def assert_roles_seen(result: subprocess.CompletedProcess[str], job_dir: Path) -> None:
        assert result.returncode == 0, result.stderr
        seen = result.stdout + result.stderr
        for role in ("role=chief index=0", "role=worker index=0"):
            assert f"{role} cluster=['chief', 'worker']" in seen, seen
        assert json.loads((job_dir / "model.json").read_text())["role"] == "chief"
        assert json.loads((job_dir / "workers" / "worker-0.json").read_text())["role"] == "worker"

    built_example = run_example(
        tmp_path / "out2", "--build-image", "--output-image-uri", basic, "--base-image", base_image
    )
    assert_roles_seen(built_example, tmp_path / "out2")
    pinned_example = re.search(
        rf"Image built and pushed: ({re.escape(basic)}@sha256:[0-9a-f]{{64}})", built_example.stderr
    )
    assert pinned_example, built_example.stderr
    assert_roles_seen(run_example(tmp_path / "out3", "--image", pinned_example.group(1)), tmp_path / "out3")

    left = subprocess.run(
        ["buildah", "--storage-driver", "vfs", "containers", "--format", "{{.ContainerName}}"],
        env=container_storage.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert [name for name in left.stdout.split() if name.startswith("mlsubmit-")] == []


def test_container_flags_that_cannot_work_are_refused_before_anything_runs(
    tmp_path: Path, run_cli: RunCli
) -> None:
    package = write_package(tmp_path, "raise SystemExit('must not run')\n")
    base = ["local", "train", "--package-path", str(package), "--module-name", "trainer.task"]
    cases = {
        ("--image", "x/y", "--build-image"): "--image and --build-image: give one",
        ("--image=--privileged",): "--image '--privileged' is not an image name",
        ("--image", "x/y", "--from-package"): "--from-package runs the package from a local venv",
        ("--image", "x/y", "--builder", "cloud-build"): "local train runs the replicas with a local engine",
        ("--image", "x/y"): "needs a local container engine and none answers (docker, podman, buildah)",
        ("--base-image", "python:3.11"): "--output-image-uri and --base-image go with --build-image",
        ("--build-image", "--output-image-uri", "reg.example/t:v1"): "without a tag or digest",
    }
    for flags, words in cases.items():
        result = run_cli([*base, *flags], env={"PATH": str(tmp_path)})  # no engine on PATH either
        assert result.exit_code == 2, (flags, result.output)
        assert words in result.stderr, (flags, result.stderr)
        assert "must not run" not in result.output


def test_dry_run_shows_the_image_it_would_build_without_any_engine(tmp_path: Path, run_cli: RunCli) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("")
    config = tmp_path / "job.yaml"
    config.write_text('trainingInput:\n  runtimeVersion: "2.11"\n  pythonVersion: "3.7"\n')
    # --python: the process dry run names it; PATH has no engine and no python
    args = local_args("train", package, config, "--python", sys.executable)
    result = run_cli([*args, "--build-image", "--dry-run"], env={"PATH": str(tmp_path)})
    assert result.exit_code == 0, result.output
    image = json.loads(result.stdout)["image"]
    assert re.fullmatch(r"localhost/mlsubmit/trainer:ctx-[0-9a-f]{64}", image["image"])
    assert image["base"] == "tensorflow/tensorflow:2.11.0" and "runtimeVersion 2.11" in image["baseReason"]
    assert image["dockerfile"].endswith('ENTRYPOINT ["python3", "-m", "trainer.task"]\n')
    again = run_cli([*args, "--build-image", "--dry-run"], env={"PATH": str(tmp_path)})
    assert json.loads(again.stdout)["image"]["image"] == image["image"]  # the content tag is stable
