"""``mlsubmit training JOB --target kubernetes`` and ``jobs ... --target kubernetes`` against kmock's emulator
with the operator's stand-in (tests/fakes/kube_api.py): create exactly once, follow to the end with the exit codes
of every target, merged logs, list, cancel, and bad input refused before anything is created."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import run_cli, start_cli_process
from tests.fakes.jobs import assert_valid_tfjob
from tests.fakes.kube_api import PYTORCHJOBS, TFJOBS, kube_server, operator
from tests.fakes.kubeconfig import write_kubeconfig

JOB_YAML = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: {workers}
  masterConfig: {{imageUri: gcr.io/p/trainer:1}}
  workerConfig: {{imageUri: gcr.io/p/trainer:1}}
  region: us-central1
  args: [--epochs, "{epochs}"]
"""


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    with kube_server() as server:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", server.url)))
        monkeypatch.setenv("MLSUBMIT_POLL_INTERVAL", "0.05")
        yield server


def job_file(tmp_path: Path, workers: int = 2, epochs: int = 2) -> str:
    path = tmp_path / f"job-{workers}-{epochs}.yaml"
    path.write_text(JOB_YAML.format(workers=workers, epochs=epochs))
    return str(path)


def creates(server: Any) -> list[Any]:
    return [c for c in server.api.calls if c.method == "POST" and c.path.split("?")[0].endswith("/tfjobs")]


def test_the_dry_run_body_is_created_once_and_waits_to_succeeded(cluster: Any, tmp_path: Path) -> None:
    operator(cluster)
    config = job_file(tmp_path)
    dry = run_cli(
        ["training", "job_1", "--config", config, "--target", "kubernetes", "--dry-run", "--format", "json"]
    )
    assert dry.exit_code == 0, dry.stderr
    assert not cluster.api.calls  # a dry run reads the kubeconfig, sends nothing
    done = run_cli(
        ["training", "job_1", "--config", config, "--target", "kubernetes", "--wait", "--format", "json"]
    )
    assert done.exit_code == 0, done.stderr
    final = json.loads(done.stdout)
    assert final["state"] == "SUCCEEDED"
    assert final["preflight"]["ok"] is True  # the checks' report beside the job, as for Vertex AI
    assert [c["name"] for c in final["preflight"]["checks"]] == [
        "api server",
        "tfjobs resource",
        "namespace",
        "access",
    ]
    [stored] = cluster.objects(TFJOBS)
    planned = json.loads(dry.stdout)
    assert {k: stored[k] for k in planned} == planned
    assert stored["metadata"]["annotations"]["mlsubmit/job-id"] == "job_1"
    assert_valid_tfjob(planned)  # the real CRD accepts what is created
    assert len(creates(cluster)) == 1
    assert "Job [job_1] is SUCCEEDED." in done.stderr


def test_a_failed_job_exits_1_naming_the_failing_replica(cluster: Any, tmp_path: Path) -> None:
    operator(cluster, outcome="Failed", failing=("Worker", 1))
    done = run_cli(["training", "job_2", "--config", job_file(tmp_path), "--target", "kubernetes", "--wait"])
    assert done.exit_code == 1
    assert "worker-1 exited with code 1" in done.stderr.splitlines()[-1]


def test_logs_of_four_replicas_merge_in_time_order_and_follow_a_restart(cluster: Any, tmp_path: Path) -> None:
    operator(cluster, lines=3, restart=("Worker", 2))
    done = run_cli(
        [
            "training",
            "job_3",
            "--config",
            job_file(tmp_path, workers=3),
            "--target",
            "kubernetes",
            "--stream-logs",
        ]
    )
    assert done.exit_code == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if ": " in line and "line" in line]
    restarted = ["worker-2: attempt 1 line 0", "worker-2: attempt 1 line 1"]
    expected = restarted + [
        f"{who}-{i}: {who} {i} line {k}"
        for k in range(3)
        for who, i in (("master", 0), ("worker", 0), ("worker", 1), ("worker", 2))
    ]
    assert lines == expected


def test_a_lost_create_answer_is_read_back_and_adopted(cluster: Any, tmp_path: Path) -> None:
    cluster.api.drop_next_create_answer = True
    done = run_cli(["training", "job_4", "--config", job_file(tmp_path), "--target", "kubernetes"])
    assert done.exit_code == 0, done.stderr
    assert "not created twice" in done.stderr
    assert len(cluster.objects(TFJOBS)) == 1 and len(creates(cluster)) == 1


def test_a_409_whose_tfjob_is_gone_by_the_read_back_is_made_by_the_next_attempt(
    cluster: Any, tmp_path: Path
) -> None:
    cluster.api.faults.append(("POST", "/tfjobs", 409))  # deleted between the 409 and the read back
    args = ["training", "job_17", "--config", job_file(tmp_path), "--target", "kubernetes"]
    done = run_cli(args, env={"MLSUBMIT_RETRY_INITIAL_DELAY": "0.01"})
    assert done.exit_code == 0, done.stderr
    assert "not created twice" not in done.stderr  # this run made it: no adoption is claimed
    assert (
        "creating TFJob job-17: POST /apis/kubeflow.org/v1/namespaces/default/tfjobs: HTTP 409" in done.stderr
    )
    assert len(cluster.objects(TFJOBS)) == 1 and len(creates(cluster)) == 2


def test_a_retried_submit_adopts_and_another_definition_is_taken(cluster: Any, tmp_path: Path) -> None:
    args = ["training", "job_5", "--target", "kubernetes"]
    assert run_cli([*args, "--config", job_file(tmp_path)]).exit_code == 0
    again = run_cli([*args, "--config", job_file(tmp_path)])
    assert again.exit_code == 0 and "not created twice" in again.stderr
    other = run_cli([*args, "--config", job_file(tmp_path, epochs=3)])
    assert other.exit_code == 1
    assert "already taken" in other.stderr
    assert len(cluster.objects(TFJOBS)) == 1
    [stored] = cluster.objects(TFJOBS)
    assert "2" in stored["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]


def test_jobs_list_pages_through_1000_tfjobs_of_mlsubmit(cluster: Any) -> None:
    for i in range(1000):
        name = f"j-{i:04d}"
        cluster.put(
            TFJOBS,
            "default",
            name,
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": {"app.kubernetes.io/managed-by": "mlsubmit"},
                    "annotations": {"mlsubmit/job-id": f"j_{i:04d}"},
                },
                "spec": {},
            },
        )
    cluster.put(
        TFJOBS, "default", "not-ours", {"metadata": {"name": "not-ours", "namespace": "default"}, "spec": {}}
    )
    done = run_cli(["jobs", "list", "--target", "kubernetes", "--format", "json"])
    assert done.exit_code == 0, done.stderr
    jobs = json.loads(done.stdout)
    assert len(jobs) == 1000 and {j["jobId"] for j in jobs} == {f"j_{i:04d}" for i in range(1000)}
    lists = [c.path for c in cluster.api.calls if c.method == "GET" and "/tfjobs?" in c.path]
    assert len(lists) == 2 and "continue=500" in lists[1] and all("limit=500" in p for p in lists)


def test_describe_and_cancel_a_job(cluster: Any, tmp_path: Path) -> None:
    assert (
        run_cli(["training", "job_6", "--config", job_file(tmp_path), "--target", "kubernetes"]).exit_code
        == 0
    )
    seen = run_cli(["jobs", "describe", "job_6", "--target", "kubernetes", "--format", "json"])
    assert seen.exit_code == 0 and json.loads(seen.stdout)["kubernetes"]["name"] == "job-6"
    gone = run_cli(["jobs", "cancel", "job_6", "--target", "kubernetes"])
    assert gone.exit_code == 0, gone.stderr
    [delete] = [c for c in cluster.api.calls if c.method == "DELETE"]
    assert delete.path.endswith("/tfjobs/job-6") and delete.body["propagationPolicy"] == "Foreground"
    assert cluster.objects(TFJOBS) == []


def _interrupt(
    cluster: Any, tmp_path: Path, job: str, gets: int = 1, sig: int = signal.SIGINT
) -> tuple[int, str]:
    """Ctrl-C (or ``sig``) once the run follows the job (its ``gets``-th read of it: an adopting run reads it back
    first)."""
    start = len(cluster.api.calls)
    proc = start_cli_process(
        [
            "training",
            job,
            "--config",
            job_file(tmp_path),
            "--target",
            "kubernetes",
            "--wait",
            "--cancel-on-interrupt",
        ]
    )
    try:
        for _ in range(200):
            path = f"/tfjobs/{job.replace('_', '-')}"
            if sum(c.method == "GET" and c.path.endswith(path) for c in cluster.api.calls[start:]) >= gets:
                break
            time.sleep(0.05)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return proc.returncode, err


def test_sigint_deletes_only_a_job_this_run_created(cluster: Any, tmp_path: Path) -> None:
    code, err = _interrupt(cluster, tmp_path, "job_7")
    assert code == 130, err
    assert [c.path for c in cluster.api.calls if c.method == "DELETE"] == [
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/job-7"
    ]
    before = len(cluster.api.calls)
    assert (
        run_cli(["training", "job_8", "--config", job_file(tmp_path), "--target", "kubernetes"]).exit_code
        == 0
    )
    code, err = _interrupt(cluster, tmp_path, "job_8", gets=2)  # adopted, not created by this run: kept
    assert code == 130 and "not cancelled" in err
    assert not [c for c in cluster.api.calls[before:] if c.method == "DELETE"]
    assert any(o["metadata"]["name"] == "job-8" for o in cluster.objects(TFJOBS))


@pytest.mark.parametrize(
    ("extra", "setup", "expected", "code"),
    [
        (["--context", "nope"], None, "context 'nope' is in no kubeconfig", 2),
        (["--namespace", "Team_A"], None, "--namespace: 'Team_A' is not a namespace name", 2),
        ([], "no-crd", "kubeflow.org/v1 tfjobs is not served", 2),
        ([], "rbac", "RBAC does not allow creating tfjobs in default", 2),
        (["--namespace", "absent"], None, "namespace absent does not exist", 2),
        (["--queue", "q1"], None, "no Kueue LocalQueue q1 in default", 2),
    ],
)
def test_bad_input_is_one_line_and_creates_nothing(
    cluster: Any, tmp_path: Path, extra: list[str], setup: str | None, expected: str, code: int
) -> None:
    if setup == "no-crd":
        cluster.api.served.clear()
    if setup == "rbac":
        cluster.api.allow_create = False
    done = run_cli(["training", "job_9", "--config", job_file(tmp_path), "--target", "kubernetes", *extra])
    assert done.exit_code == code
    assert expected in done.stderr and "Traceback" not in done.stderr
    assert creates(cluster) == []


def test_a_local_package_with_no_way_to_the_cluster_is_refused(cluster: Any, tmp_path: Path) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text("print('hi')\n")
    done = run_cli(
        [
            "training",
            "job_10",
            "--target",
            "kubernetes",
            "--package-path",
            str(package),
            "--module-name",
            "trainer.task",
            "--region",
            "us-central1",
            "--runtime-version",
            "2.11",
            "--python-version",
            "3.7",
        ]
    )
    assert done.exit_code == 2
    assert "the local package cannot reach the cluster" in done.stderr and "--build-image" in done.stderr
    assert cluster.api.calls == []


def test_the_same_config_gives_vertex_and_kubernetes_the_same_replicas_args_env_and_image(
    tmp_path: Path,
) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(JOB_YAML.format(workers=3, epochs=5) + "vertex:\n  env: {MODE: train, SEED: '7'}\n")
    bodies = {}
    for target in ("vertex", "kubernetes"):
        done = run_cli(
            [
                "training",
                "same_job",
                "--config",
                str(config),
                "--target",
                target,
                "--dry-run",
                "--format",
                "json",
            ]
        )
        assert done.exit_code == 0, done.stderr
        bodies[target] = json.loads(done.stdout)
    pools = bodies["vertex"]["jobSpec"]["workerPoolSpecs"]
    replicas = bodies["kubernetes"]["spec"]["tfReplicaSpecs"]
    assert (
        [int(p["replicaCount"]) for p in pools] == [r["replicas"] for r in replicas.values()] == [1, 3]
    )  # int64 as a string
    for pool, replica in zip(pools, replicas.values(), strict=True):
        container = replica["template"]["spec"]["containers"][0]
        assert pool["containerSpec"]["imageUri"] == container["image"] == "gcr.io/p/trainer:1"
        assert pool["containerSpec"]["args"] == container["args"] == ["--epochs", "5"]
        assert (
            pool["containerSpec"]["env"]
            == container["env"]
            == [{"name": "MODE", "value": "train"}, {"name": "SEED", "value": "7"}]
        )


def test_two_concurrent_submits_of_one_job_leave_one_tfjob(cluster: Any, tmp_path: Path) -> None:
    args = ["training", "job_11", "--config", job_file(tmp_path), "--target", "kubernetes"]
    procs = [start_cli_process(args) for _ in range(2)]
    try:
        results = [(p.wait(timeout=60), p.communicate()[1]) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [code for code, _ in results] == [0, 0], results
    assert sum("not created twice" in err for _, err in results) == 1
    assert len(cluster.objects(TFJOBS)) == 1


def test_jobs_wait_gives_up_at_its_timeout_and_stream_logs_prints_to_stdout(
    cluster: Any, tmp_path: Path
) -> None:
    assert (
        run_cli(["training", "job_12", "--config", job_file(tmp_path), "--target", "kubernetes"]).exit_code
        == 0
    )
    waited = run_cli(["jobs", "wait", "job_12", "--target", "kubernetes", "--timeout", "0.3"])
    assert waited.exit_code == 1
    assert "timed out after" in waited.stderr and "still QUEUED" in waited.stderr
    operator(cluster, lines=2)
    streamed = run_cli(["jobs", "stream-logs", "job-13", "--target", "kubernetes"])  # a TFJob name works too
    assert streamed.exit_code == 1 and "no TFJob or PyTorchJob job-13" in streamed.stderr
    assert (
        run_cli(["training", "job_13", "--config", job_file(tmp_path), "--target", "kubernetes"]).exit_code
        == 0
    )
    streamed = run_cli(["jobs", "stream-logs", "job-13", "--target", "kubernetes"])
    assert streamed.exit_code == 0, streamed.stderr
    assert streamed.stdout.splitlines()[:3] == [
        "master-0: master 0 line 0",
        "worker-0: worker 0 line 0",
        "worker-1: worker 1 line 0",
    ]


def test_a_tfjob_deleted_while_followed_ends_cancelled_exit_1(cluster: Any, tmp_path: Path) -> None:
    proc = start_cli_process(
        ["training", "job_14", "--config", job_file(tmp_path), "--target", "kubernetes", "--wait"]
    )
    try:
        for _ in range(200):
            if any(c.method == "GET" and c.path.endswith("/tfjobs/job-14") for c in cluster.api.calls):
                break
            time.sleep(0.05)
        gone = run_cli(["jobs", "cancel", "job_14", "--target", "kubernetes"])
        assert gone.exit_code == 0, gone.stderr
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "ended in state CANCELLED: TFJob job-14 was deleted" in err


TORCH_YAML = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 2
  packageUris: [gs://my-bucket/trainer-0.1.tar.gz]
  pythonModule: trainer.task
  region: us-central1
vertex:
  framework: pytorch
"""


def test_a_pytorch_trainer_runs_as_a_pytorchjob(cluster: Any, tmp_path: Path) -> None:
    operator(cluster, lines=2)
    config = tmp_path / "torch.yaml"
    config.write_text(TORCH_YAML)
    done = run_cli(
        ["training", "torch_job", "--config", str(config), "--target", "kubernetes", "--stream-logs"]
    )
    assert done.exit_code == 0, done.stderr
    [made] = cluster.objects(PYTORCHJOBS)
    specs = made["spec"]["pytorchReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Master": 1, "Worker": 2}
    assert {v["template"]["spec"]["containers"][0]["name"] for v in specs.values()} == {"pytorch"}
    assert cluster.objects(TFJOBS) == []
    assert "master-0: master 0 line 0" in done.stderr and "worker-1: worker 1 line 1" in done.stderr
    logs = [c.path for c in cluster.api.calls if "/log?" in c.path]
    assert logs and all("container=pytorch" in p for p in logs)
    assert any(
        "selfsubjectaccessreviews" in c.path
        and c.body["spec"]["resourceAttributes"]["resource"] == "pytorchjobs"
        for c in cluster.api.calls
    )
    seen = run_cli(["jobs", "describe", "torch_job", "--target", "kubernetes", "--format", "json"])
    assert seen.exit_code == 0 and json.loads(seen.stdout)["state"] == "SUCCEEDED"
    assert run_cli(["jobs", "cancel", "torch_job", "--target", "kubernetes"]).exit_code == 0
    config.write_text(
        TORCH_YAML.replace(
            "  workerCount: 2\n",
            "  workerCount: 2\n  parameterServerCount: 1\n  parameterServerType: n1-standard-4\n",
        )
    )
    refused = run_cli(
        ["training", "torch_ps", "--config", str(config), "--target", "kubernetes", "--dry-run"]
    )
    assert refused.exit_code == 2
    assert "a PyTorchJob (vertex.framework: pytorch) has a master and workers only" in refused.stderr


def test_a_dry_run_needs_no_kubeconfig_but_a_named_context_must_exist(tmp_path: Path) -> None:
    args = [
        "training",
        "job_15",
        "--config",
        job_file(tmp_path),
        "--target",
        "kubernetes",
        "--dry-run",
        "--format",
        "json",
    ]
    alone = run_cli(args, env={"KUBECONFIG": str(tmp_path / "none")})
    assert alone.exit_code == 0, alone.stderr
    assert json.loads(alone.stdout)["metadata"]["namespace"] == "default"
    named = run_cli([*args, "--context", "prod"], env={"KUBECONFIG": str(tmp_path / "none")})
    assert named.exit_code == 2 and "no kubeconfig found" in named.stderr
    kubeconfig = write_kubeconfig(tmp_path / "kc", "https://k.example", namespace="team-b")
    from_context = run_cli(args, env={"KUBECONFIG": str(kubeconfig)})
    assert json.loads(from_context.stdout)["metadata"]["namespace"] == "team-b"


def test_reads_are_tried_again_after_a_busy_answer_and_creates_read_back_first(
    cluster: Any, tmp_path: Path
) -> None:
    env = {"MLSUBMIT_RETRY_INITIAL_DELAY": "0.01"}
    cluster.api.faults += [("POST", "/tfjobs", 503), ("GET", "/tfjobs/job-16", 503)]
    done = run_cli(["training", "job_16", "--config", job_file(tmp_path), "--target", "kubernetes"], env=env)
    assert done.exit_code == 0, done.stderr
    # retried visibly, after reading back (busy too)
    assert (
        "creating TFJob job-16: POST /apis/kubeflow.org/v1/namespaces/default/tfjobs: HTTP 503" in done.stderr
    )
    assert len(cluster.objects(TFJOBS)) == 1
    cluster.api.faults += [("GET", "/tfjobs/job-16", 503)]
    seen = run_cli(["jobs", "describe", "job_16", "--target", "kubernetes"], env=env)
    assert seen.exit_code == 0, seen.stderr
    assert "reading: GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/job-16: HTTP 503" in seen.stderr


def test_the_token_is_never_shown_even_with_debug_output(cluster: Any, tmp_path: Path) -> None:
    operator(cluster, outcome="Failed", failing=("Worker", 0), lines=1)
    done = run_cli(
        ["--verbosity", "debug", "training", "job_17", "--config", job_file(tmp_path), "--target", "kubernetes",
         "--stream-logs", "--format", "json"]
    )  # fmt: skip
    assert done.exit_code == 1
    assert "kube-secret-token" not in done.stdout + done.stderr
    assert all(
        c.path for c in cluster.api.calls
    )  # every call went to the context's server (kmock saw them all)


def test_context_picks_the_cluster_of_two_merged_kubeconfigs(cluster: Any, tmp_path: Path) -> None:
    with kube_server() as other:
        first = write_kubeconfig(tmp_path / "first", cluster.url, context="dev", namespace="default")
        second = write_kubeconfig(
            tmp_path / "second", other.url, context="prod", namespace="default", current=False
        )
        env = {"KUBECONFIG": f"{first}:{second}"}
        args = ["training", "job_18", "--config", job_file(tmp_path), "--target", "kubernetes"]
        assert run_cli(args, env=env).exit_code == 0  # dev: the current context
        assert run_cli([*args, "--context", "prod"], env=env).exit_code == 0
        assert [o["metadata"]["name"] for o in cluster.objects(TFJOBS)] == ["job-18"]
        assert [o["metadata"]["name"] for o in other.objects(TFJOBS)] == ["job-18"]
        listed = run_cli(
            ["jobs", "list", "--target", "kubernetes", "--context", "prod", "--format", "json"], env=env
        )
        assert [j["jobId"] for j in json.loads(listed.stdout)] == ["job_18"]
        assert not [c for c in cluster.api.calls if c.method == "GET" and "/tfjobs?" in c.path]  # prod only


def test_stream_logs_of_one_task(cluster: Any, tmp_path: Path) -> None:
    operator(cluster, lines=2)
    assert (
        run_cli(["training", "job_19", "--config", job_file(tmp_path), "--target", "kubernetes"]).exit_code
        == 0
    )
    done = run_cli(
        [
            "jobs",
            "stream-logs",
            "job_19",
            "--target",
            "kubernetes",
            "--task-name",
            "worker-1",
            "--polling-interval",
            "1",
        ]
    )
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines() == ["worker-1: worker 1 line 0", "worker-1: worker 1 line 1"]


def test_sigterm_from_a_cancelled_ci_job_deletes_the_job_this_run_created(
    cluster: Any, tmp_path: Path
) -> None:
    code, err = _interrupt(cluster, tmp_path, "job_20", sig=signal.SIGTERM)
    assert code == 130, err
    assert [c.body for c in cluster.api.calls if c.method == "DELETE"] == [
        {"propagationPolicy": "Foreground"}
    ]
    assert cluster.objects(TFJOBS) == []
