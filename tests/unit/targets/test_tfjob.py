"""to_tfjob: ml v1 Job bodies become Kubeflow TFJob manifests valid for the CRD and for Kubernetes names."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import InvalidJobError
from mlsubmit.targets.tfjob import (
    MAX_NAME,
    for_cluster,
    install_and_run_script,
    k8s_name,
    label_value_problem,
    submission_digest,
    to_tfjob,
)
from tests.fakes.jobs import DNS_1123_LABEL, assert_valid_tfjob, crd_validator, distributed, job


def containers(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    specs = manifest["spec"]["tfReplicaSpecs"]
    return {t: s["template"]["spec"]["containers"][0] for t, s in specs.items()}


def test_custom_job_has_chief_workers_and_ps_with_their_counts() -> None:
    manifest, _ = to_tfjob(distributed(), namespace="ml")
    assert manifest["apiVersion"] == "kubeflow.org/v1" and manifest["kind"] == "TFJob"
    assert manifest["metadata"]["namespace"] == "ml"
    specs = manifest["spec"]["tfReplicaSpecs"]
    assert {t: s["replicas"] for t, s in specs.items()} == {"Chief": 1, "Worker": 3, "PS": 2}
    assert all(s["restartPolicy"] == "Never" for s in specs.values())
    assert {c["name"] for c in containers(manifest).values()} == {"tensorflow"}
    assert_valid_tfjob(manifest)


def test_package_job_installs_the_packages_and_runs_the_module_with_the_args() -> None:
    chief = containers(to_tfjob(distributed())[0])["Chief"]
    assert chief["image"] == "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-11.py310:latest"
    assert chief["command"][:2] == ["/bin/sh", "-c"]
    script = chief["command"][2]
    assert "gsutil -q cp gs://bkt/pkg/trainer-0.0.0.tar.gz" in script
    assert 'exec python -m trainer.task "$@"' in script
    assert chief["args"] == ["--epochs", "3", "--job-dir", "gs://bkt/out"]


def test_gpus_become_nvidia_limits_only_where_the_role_has_them() -> None:
    found = containers(to_tfjob(distributed())[0])
    assert found["Chief"]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert "resources" not in found["Worker"] and "resources" not in found["PS"]
    assert "tf-cpu" in found["Worker"]["image"]


def test_evaluators_get_their_own_replica_spec() -> None:
    manifest, _ = to_tfjob(
        job(scaleTier="CUSTOM", masterType="n1-standard-4", evaluatorType="n1-standard-4", evaluatorCount="1")
    )
    assert set(manifest["spec"]["tfReplicaSpecs"]) == {"Chief", "Evaluator"}
    assert_valid_tfjob(manifest)


@pytest.mark.parametrize(
    ("tier", "counts"),
    [
        ("BASIC", {"Chief": 1}),
        ("STANDARD_1", {"Chief": 1, "Worker": 4, "PS": 3}),
        ("PREMIUM_1", {"Chief": 1, "Worker": 19, "PS": 11}),
    ],
)
def test_scale_tiers_give_the_same_counts_as_on_vertex(tier: str, counts: dict[str, int]) -> None:
    manifest, _ = to_tfjob(job(scaleTier=tier))
    assert {t: s["replicas"] for t, s in manifest["spec"]["tfReplicaSpecs"].items()} == counts
    assert_valid_tfjob(manifest)


def test_deadline_comes_from_max_running_time_rounded_up_else_seven_days() -> None:
    assert to_tfjob(job(scheduling={"maxRunningTime": "3600.2s"}))[0]["spec"]["runPolicy"] == {
        "activeDeadlineSeconds": 3601
    }
    assert to_tfjob(job())[0]["spec"]["runPolicy"]["activeDeadlineSeconds"] == 604800


def test_custom_container_runs_its_image_and_is_master_unless_it_asked_for_chief() -> None:
    body: dict[str, Any] = {
        "jobId": "c1",
        "trainingInput": {
            "region": "us-central1",
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-4",
            "masterConfig": {"imageUri": "gcr.io/p/img:1", "containerCommand": ["python", "-m", "t"]},
            "workerType": "n1-standard-4",
            "workerCount": "2",
            "args": ["--lr", "0.1"],
        },
    }
    manifest, _ = to_tfjob(body)
    # TF_CONFIG names roles after replica types: the legacy service said `master` for containers
    assert set(manifest["spec"]["tfReplicaSpecs"]) == {"Master", "Worker"}
    master = containers(manifest)["Master"]
    assert master == {
        "name": "tensorflow",
        "image": "gcr.io/p/img:1",
        "command": ["python", "-m", "t"],
        "args": ["--lr", "0.1"],
    }
    assert_valid_tfjob(manifest)
    body["trainingInput"]["useChiefInTfConfig"] = True
    assert set(to_tfjob(body)[0]["spec"]["tfReplicaSpecs"]) == {"Chief", "Worker"}


@pytest.mark.parametrize(
    ("job_id", "name"),
    [
        ("my_job", "my-job"),
        ("trainer2", "trainer2"),
    ],
)
def test_names_are_dns_labels_derived_from_the_job_id(job_id: str, name: str) -> None:
    manifest, _ = to_tfjob(job(job_id))
    assert manifest["metadata"]["name"] == name
    assert manifest["metadata"]["annotations"] == {"mlsubmit/job-id": job_id}


@pytest.mark.parametrize("job_id", ["A" * 128, "My_Job", "ends_", "a__b", "x" + "_y" * 40])
def test_awkward_job_ids_still_give_valid_distinct_names(job_id: str) -> None:
    name = k8s_name(job_id)
    assert DNS_1123_LABEL.match(name) and len(name) <= MAX_NAME
    assert name != k8s_name(job_id.lower()) or job_id == job_id.lower()
    assert_valid_tfjob(to_tfjob(job(job_id))[0])


def test_labels_kubernetes_cannot_hold_are_warned_about() -> None:
    manifest, warnings = to_tfjob(job(labels={"team": "vision", "owner_": "x", "line": "x\n"}))
    assert manifest["metadata"]["labels"] == {"team": "vision"}
    assert any("owner_" in w for w in warnings) and any("line=x" in w for w in warnings)
    assert label_value_problem("queue\n") and not label_value_problem("queue")  # a LocalQueue name


def test_what_kubernetes_does_not_express_is_warned_about() -> None:
    _, warnings = to_tfjob(
        distributed(serviceAccount="sa@p.iam.gserviceaccount.com", network="projects/1/global/networks/n")
    )
    text = "\n".join(warnings)
    for word in ("n1-standard-8", "NVIDIA_TESLA_T4", "diskConfig", "serviceAccount", "network"):
        assert word in text


def test_what_a_tfjob_cannot_express_is_refused() -> None:
    body = job(hyperparameters={"goal": "MAXIMIZE"}, scheduling={"priority": 1}, scaleTier="BASIC_TPU")
    with pytest.raises(InvalidJobError) as exc:
        to_tfjob(body)
    assert {p.path for p in exc.value.problems} == {
        "$.trainingInput.hyperparameters",
        "$.trainingInput.scheduling.priority",
        "$.trainingInput.scaleTier",
    }


def test_executor_image_uri_replaces_the_runtime_image() -> None:
    prebuilt = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
    manifest, _ = to_tfjob(job(runtimeVersion="2.10"), executor_image_uri=prebuilt)
    assert containers(manifest)["Chief"]["image"] == prebuilt


def test_a_non_prebuilt_executor_image_is_refused_with_the_way_out() -> None:
    with pytest.raises(InvalidJobError, match="--build-image"):
        to_tfjob(job(runtimeVersion="2.10"), executor_image_uri="gcr.io/p/tf:2.10")


def _shim(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
def test_the_container_script_fetches_installs_and_passes_args_verbatim(tmp_path: Path) -> None:
    """Run the generated command with stand-ins for gsutil and pip: the module must get the args unchanged."""
    bucket = tmp_path / "bucket"
    (bucket / "b1").mkdir(parents=True)
    (bucket / "b1" / "trainer.tar.gz").write_text("t", encoding="utf-8")
    (bucket / "b2").mkdir()
    (bucket / "b2" / "dep one.whl").write_text("d", encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    # gsutil -q cp gs://B/O DEST  ->  copy from the local "bucket"
    _shim(bin_dir / "gsutil", f'#!/bin/sh\necho "gsutil $4" >> {log}\ncp "{bucket}/${{3#gs://}}" "$4"\n')
    # python -m pip ...  ->  record; python -m MODULE ...  ->  the real interpreter
    _shim(
        bin_dir / "python",
        textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$2" = pip ]; then shift 2; for a in "$@"; do echo "pip $a" >> {log}; done; exit 0; fi
        exec {sys.executable} "$@"
        """),
    )
    module_dir = tmp_path / "src"
    (module_dir / "trainer").mkdir(parents=True)
    (module_dir / "trainer" / "__init__.py").write_text("", encoding="utf-8")
    (module_dir / "trainer" / "task.py").write_text(
        f"import json, sys\nopen({str(tmp_path / 'argv')!r}, 'w').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    script = install_and_run_script(["gs://b1/trainer.tar.gz", "gs://b2/dep one.whl"], "trainer.task")
    script = script.replace("/tmp/mlsubmit/packages", str(tmp_path / "pkgs"))
    args = ["--name", 'it\'s a "test"', "$HOME", "--job-dir", "gs://bkt/out"]
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(module_dir)}
    subprocess.run(["/bin/sh", "-c", script, "trainer", *args], env=env, check=True, timeout=60)
    import json

    assert json.loads((tmp_path / "argv").read_text(encoding="utf-8")) == args
    logged = log.read_text(encoding="utf-8").splitlines()
    assert f"pip {tmp_path}/pkgs/0/trainer.tar.gz" in logged
    assert f"pip {tmp_path}/pkgs/1/dep one.whl" in logged
    assert (tmp_path / "pkgs" / "1" / "dep one.whl").read_text(encoding="utf-8") == "d"


def test_the_crd_schema_check_catches_a_broken_manifest() -> None:
    """Guards assert_valid_tfjob: the CRD validator really runs (a visible skip without the file, a failure
    under CI)."""
    manifest, _ = to_tfjob(distributed())
    assert list(crd_validator().iter_errors(manifest)) == []
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "3"
    manifest["spec"]["runPolicy"]["activeDeadlineSeconds"] = "3600"
    assert len(list(crd_validator().iter_errors(manifest))) == 2


# -- the manifest's name and submission digest (the cluster side) --------------------------------
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


@pytest.mark.parametrize("job_id", ["my_job", "My_Job", "a" * 128, "x__y", "job_1_", "J"])
def test_names_are_dns_1035_labels_and_distinct(job_id: str) -> None:
    name = k8s_name(job_id)
    assert DNS_1035.fullmatch(name) and len(name) <= 45
    assert k8s_name(job_id.swapcase()) != name or job_id.swapcase() == job_id


def test_the_submission_digest_tells_definitions_apart_and_not_retries() -> None:
    manifest = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "j", "annotations": {}},
        "spec": {"x": 1},
    }
    once = for_cluster(manifest, namespace="team-a")
    again = for_cluster(manifest, namespace="team-a")
    assert once == again and once["metadata"]["annotations"]["mlsubmit/submission"] == submission_digest(once)
    assert for_cluster({**manifest, "spec": {"x": 2}}, namespace="team-a") != once
    queued = for_cluster(manifest, namespace="team-a", queue="q1")
    assert queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q1"
    assert queued["spec"]["runPolicy"]["suspend"] is True
    assert manifest["metadata"] == {"name": "j", "annotations": {}}  # the plan's body is not changed
