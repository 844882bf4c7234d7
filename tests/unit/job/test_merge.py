"""The merge of config file and flags (mlsubmit.job.merge): defaults < file < flags the user actually typed.

The pure function is table-tested directly; the click side (a flag left at its default never overrides the file)
is tested through the real CLI with `--dry-run --format json`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job.merge import (
    TOP_LEVEL_FLAGS,
    Accelerator,
    MergedJob,
    TrainingFlags,
    kms_key_name,
    merge,
)
from tests.fakes.cli import run_cli

# A complete file job: every field a flag can touch has a value, so a flag that does not override shows.
FILE_JOB: dict[str, Any] = {
    "jobId": "from_file",
    "labels": {"team": "research", "purpose": "demo"},
    "trainingInput": {
        "region": "europe-west4",
        "scaleTier": "CUSTOM",
        "masterType": "n1-standard-8",
        "workerType": "n1-standard-4",
        "workerCount": "2",
        "parameterServerType": "n1-highmem-2",
        "parameterServerCount": "1",
        "runtimeVersion": "2.11",
        "pythonVersion": "3.7",
        "pythonModule": "trainer.task",
        "packageUris": ["gs://file-bucket/trainer-0.1.tar.gz"],
        "jobDir": "gs://file-bucket/out",
        "serviceAccount": "file@p.iam.gserviceaccount.com",
        "enableWebAccess": True,
        "useChiefInTfConfig": False,
        "args": ["--epochs", "5"],
        "masterConfig": {
            "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
            "acceleratorConfig": {"type": "NVIDIA_TESLA_K80", "count": "2"},
        },
        "workerConfig": {"diskConfig": {"bootDiskSizeGb": 100}},
        "encryptionConfig": {"kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/file"},
    },
}


def do_merge(
    given: dict[str, Any] | None = None,
    *,
    file_job: dict[str, Any] | None = FILE_JOB,
    user_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    package_uris: list[str] | None = None,
    project: str | None = None,
    job_id: str = "my_job",
) -> MergedJob:
    flags = TrainingFlags(job_id=job_id, given=given or {}, user_args=user_args)
    return merge(file_job, flags, env=env or {}, package_uris=package_uris, project=project)


def ti(merged: MergedJob) -> dict[str, Any]:
    value: dict[str, Any] = merged.body["trainingInput"]
    return value


# Flags beat the file, the file beats defaults -------------------------------------------------------------------

# One new value per top-level flag, different from FILE_JOB's.
NEW_VALUES: dict[str, Any] = {
    "module_name": "other.main",
    "job_dir": "gs://flag-bucket/out",
    "scale_tier": "BASIC_GPU",
    "runtime_version": "2.8",
    "python_version": "3.5",
    "service_account": "flag@p.iam.gserviceaccount.com",
    "enable_web_access": False,
    "master_machine_type": "n1-highcpu-16",
    "worker_count": 7,
    "worker_machine_type": "n1-highcpu-8",
    "parameter_server_count": 0,
    "parameter_server_machine_type": "n1-highmem-8",
    "use_chief_in_tf_config": True,
}


def test_every_top_level_flag_has_a_case() -> None:
    assert set(NEW_VALUES) == set(TOP_LEVEL_FLAGS)


@pytest.mark.parametrize(("flag", "field"), sorted(TOP_LEVEL_FLAGS.items()))
def test_a_given_flag_replaces_its_field(flag: str, field: str) -> None:
    merged = do_merge({flag: NEW_VALUES[flag]})
    expected = NEW_VALUES[flag]
    if field in ("workerCount", "parameterServerCount"):
        expected = str(expected)  # int64 fields go out as JSON strings
    assert ti(merged)[field] == expected
    assert merged.origin[f"$.trainingInput.{field}"] == "--" + flag.replace("_", "-")
    # nothing else moved
    rest = {k: v for k, v in ti(merged).items() if k != field}
    assert rest == {k: v for k, v in FILE_JOB["trainingInput"].items() if k != field}


@pytest.mark.parametrize("flag", sorted(TOP_LEVEL_FLAGS))
def test_a_flag_given_as_none_does_not_override(flag: str) -> None:
    merged = do_merge({flag: None})
    assert ti(merged) == FILE_JOB["trainingInput"]
    assert f"$.trainingInput.{TOP_LEVEL_FLAGS[flag]}" not in merged.origin


def test_no_flags_keeps_the_whole_file() -> None:
    merged = do_merge({})
    assert merged.body == {**FILE_JOB, "jobId": "my_job"}
    assert merged.origin == {"$.jobId": "JOB argument"}
    assert merged.origin_of("$.trainingInput.region") is None


def test_no_file_gives_just_the_flags() -> None:
    merged = do_merge({"module_name": "t.m", "region": "us-east1"}, file_job=None)
    assert merged.body == {"jobId": "my_job", "trainingInput": {"pythonModule": "t.m", "region": "us-east1"}}


def test_merge_never_changes_its_input() -> None:
    before = copy.deepcopy(FILE_JOB)
    do_merge(
        {
            "labels": {"a": "b"},
            "master_image_uri": "gcr.io/p/t",
            "worker_accelerator": Accelerator("NVIDIA_TESLA_T4", 1),
            "kms_key": "k",
            "scale_tier": "BASIC",
        },
        user_args=["--x"],
        package_uris=["gs://b/p.tgz"],
        env={"CLOUDSDK_COMPUTE_REGION": "asia-east1"},
    )
    assert before == FILE_JOB


# Job id and labels -------------------------------------------------------------------------------------------


def test_job_argument_beats_job_id() -> None:
    merged = do_merge({}, job_id="the_job")
    assert merged.body["jobId"] == "the_job"
    assert merged.origin_of("$.jobId") == "JOB argument"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"team": "research", "purpose": "demo"}),
        ({"labels": {"env": "prod"}}, {"env": "prod"}),
        ({"labels": {}}, {}),
        ({"labels": {"team": "infra"}}, {"team": "infra"}),
    ],
    ids=["file-labels-kept", "replaced-not-merged", "emptied", "same-key"],
)
def test_labels_flag_replaces_the_file_labels(given: dict[str, Any], expected: dict[str, str]) -> None:
    merged = do_merge(given)
    assert merged.body["labels"] == expected
    assert merged.origin_of("$.labels.env") == ("--labels" if "labels" in given else None)


# User args ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user_args", "expected"),
    [(None, ["--epochs", "5"]), ([], []), (["--lr", "0.1"], ["--lr", "0.1"]), (["--epochs"], ["--epochs"])],
    ids=["no-dashdash-keeps-file-args", "empty-dashdash-clears", "dashdash-replaces", "no-merging"],
)
def test_args_after_dashdash_replace_the_file_args(user_args: list[str] | None, expected: list[str]) -> None:
    merged = do_merge({}, user_args=user_args)
    assert ti(merged)["args"] == expected
    assert ("$.trainingInput.args" in merged.origin) == (user_args is not None)


def test_user_args_without_file_args() -> None:
    merged = do_merge({}, file_job={"trainingInput": {}}, user_args=["--a"])
    assert ti(merged)["args"] == ["--a"]


# Image and accelerator flags set single leaves ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "config", "expected"),
    [
        (
            {"master_image_uri": "gcr.io/p/t:1"},
            "masterConfig",
            {
                "imageUri": "gcr.io/p/t:1",
                "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                "acceleratorConfig": {"type": "NVIDIA_TESLA_K80", "count": "2"},
            },
        ),
        (
            {"master_accelerator": Accelerator("NVIDIA_TESLA_T4", 1)},
            "masterConfig",
            {
                "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                "acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "1"},
            },
        ),
        (
            {"worker_image_uri": "gcr.io/p/w:1", "worker_accelerator": Accelerator("NVIDIA_TESLA_V100", 4)},
            "workerConfig",
            {
                "diskConfig": {"bootDiskSizeGb": 100},
                "imageUri": "gcr.io/p/w:1",
                "acceleratorConfig": {"type": "NVIDIA_TESLA_V100", "count": "4"},
            },
        ),
        (
            {"parameter_server_accelerator": Accelerator("TPU_V2", 8)},
            "parameterServerConfig",
            {"acceleratorConfig": {"type": "TPU_V2", "count": "8"}},
        ),
        (
            {"parameter_server_image_uri": "gcr.io/p/ps:1"},
            "parameterServerConfig",
            {"imageUri": "gcr.io/p/ps:1"},
        ),
    ],
    ids=["master-image", "master-accelerator", "worker-both", "ps-accelerator-new-config", "ps-image"],
)
def test_image_and_accelerator_flags_keep_the_rest_of_the_config(
    given: dict[str, Any], config: str, expected: dict[str, Any]
) -> None:
    merged = do_merge(given)
    assert ti(merged)[config] == expected
    others = {"masterConfig", "workerConfig", "parameterServerConfig"} - {config}
    for other in others:
        assert ti(merged).get(other) == FILE_JOB["trainingInput"].get(other)


def test_flag_origins_of_leaves() -> None:
    merged = do_merge(
        {"worker_image_uri": "gcr.io/p/w", "master_accelerator": Accelerator("NVIDIA_TESLA_T4", 2)}
    )
    assert merged.origin_of("$.trainingInput.workerConfig.imageUri") == "--worker-image-uri"
    assert merged.origin_of("$.trainingInput.masterConfig.acceleratorConfig.count") == "--master-accelerator"
    assert merged.origin_of("$.trainingInput.masterConfig.diskConfig.bootDiskSizeGb") is None
    assert merged.origin_of("$.trainingInput.workerConfig.diskConfig") is None


def test_origin_of_list_items() -> None:
    merged = do_merge({}, package_uris=["gs://b/a.tgz", "gs://b/c.tgz"], user_args=["--x"])
    assert merged.origin_of("$.trainingInput.packageUris[1]") == "--packages/--package-path"
    assert merged.origin_of("$.trainingInput.args[0]") == "arguments after --"
    assert do_merge({}).origin_of("$.trainingInput.packageUris[0]") is None


# Region ------------------------------------------------------------------------------------------------------

REGION_CASES = [
    ("us-east1", "europe-west4", "asia-east1", "us-east1", "--region"),
    (None, "europe-west4", "asia-east1", "europe-west4", None),
    (None, None, "asia-east1", "asia-east1", "CLOUDSDK_COMPUTE_REGION"),
    ("us-east1", None, None, "us-east1", "--region"),
    (None, None, None, None, None),
    (None, "europe-west4", None, "europe-west4", None),
]


@pytest.mark.parametrize(
    ("flag", "file", "env", "expected", "origin"),
    REGION_CASES,
    ids=["flag-beats-all", "file-beats-env", "env-last", "flag-only", "none", "file-only"],
)
def test_region_precedence(
    flag: str | None, file: str | None, env: str | None, expected: str | None, origin: str | None
) -> None:
    file_job = {"trainingInput": {"region": file}} if file else {"trainingInput": {}}
    merged = do_merge(
        {"region": flag} if flag else {},
        file_job=file_job,
        env={"CLOUDSDK_COMPUTE_REGION": env} if env else {},
    )
    assert ti(merged).get("region") == expected
    assert merged.origin_of("$.trainingInput.region") == origin


# KMS key ---------------------------------------------------------------------------------------------------------

KMS_CASES = [
    (
        {"kms_key": "k", "kms_keyring": "r", "kms_location": "us", "kms_project": "kp"},
        "p",
        "projects/kp/locations/us/keyRings/r/cryptoKeys/k",
    ),
    (
        {"kms_key": "k", "kms_keyring": "r", "kms_location": "us"},
        "p",
        "projects/p/locations/us/keyRings/r/cryptoKeys/k",
    ),
    (
        {"kms_key": "projects/x/locations/y/keyRings/z/cryptoKeys/k", "kms_keyring": "ignored"},
        "p",
        "projects/x/locations/y/keyRings/z/cryptoKeys/k",
    ),
    ({"kms_key": "k"}, None, "projects/-/locations/-/keyRings/-/cryptoKeys/k"),
    ({"kms_keyring": "r", "kms_location": "us"}, "p", None),
    ({}, "p", None),
]


@pytest.mark.parametrize(
    ("given", "project", "expected"),
    KMS_CASES,
    ids=["all-parts", "job-project", "full-name", "nothing-else", "parts-without-key", "none"],
)
def test_kms_key_parts_make_the_full_name(
    given: dict[str, str], project: str | None, expected: str | None
) -> None:
    assert kms_key_name(given, project) == expected
    merged = do_merge(given, project=project)
    want = expected or FILE_JOB["trainingInput"]["encryptionConfig"]["kmsKeyName"]
    assert ti(merged)["encryptionConfig"] == {"kmsKeyName": want}
    assert merged.origin_of("$.trainingInput.encryptionConfig.kmsKeyName") == (
        "--kms-key" if expected else None
    )


# Packages and enableWebAccess: where mlsubmit honours the file (gcloud does not) ---------------------------------


def test_file_package_uris_kept_without_package_flags() -> None:
    merged = do_merge({}, package_uris=None)
    assert ti(merged)["packageUris"] == ["gs://file-bucket/trainer-0.1.tar.gz"]


def test_package_flags_replace_file_package_uris() -> None:
    merged = do_merge({}, package_uris=["gs://b/x.tgz"])
    assert ti(merged)["packageUris"] == ["gs://b/x.tgz"]
    assert merged.origin_of("$.trainingInput.packageUris") == "--packages/--package-path"


@pytest.mark.parametrize(("given", "expected"), [({}, True), ({"enable_web_access": True}, True)])
def test_enable_web_access_from_file_is_kept(given: dict[str, Any], expected: bool) -> None:
    assert ti(do_merge(given))["enableWebAccess"] is expected


# Through the CLI: flags left at their default never override ------------------------------------------------------

CONFIG_YAML = """\
jobId: from_file
labels:
  team: research
trainingInput:
  region: europe-west4
  scaleTier: CUSTOM
  masterType: n1-standard-8
  workerType: n1-standard-4
  workerCount: 2
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  packageUris: [gs://file-bucket/trainer-0.1.tar.gz]
  jobDir: gs://file-bucket/out
  enableWebAccess: true
  useChiefInTfConfig: false
  args: [--epochs, "5"]
  masterConfig:
    diskConfig: {bootDiskType: pd-ssd, bootDiskSizeGb: 200}
    acceleratorConfig: {type: NVIDIA_TESLA_K80, count: 2}
"""


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)
    Path("config.yaml").write_text(CONFIG_YAML, encoding="utf-8")
    yield "config.yaml"


def dry_run(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    # --config comes first: everything after `--` belongs to the trainer
    argv = ["training", "my_job", "--dry-run", "--format", "json", "--config", "config.yaml", *args]
    result = run_cli(argv, env=env)
    assert result.exit_code == 0, result.stderr
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def test_cli_without_flags_sends_the_file(config_file: str) -> None:
    body = dry_run()
    assert body == {
        "jobId": "my_job",
        "labels": {"team": "research"},
        "trainingInput": {
            "region": "europe-west4",
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-8",
            "workerType": "n1-standard-4",
            "workerCount": "2",
            "runtimeVersion": "2.11",
            "pythonVersion": "3.7",
            "pythonModule": "trainer.task",
            "packageUris": ["gs://file-bucket/trainer-0.1.tar.gz"],
            "jobDir": "gs://file-bucket/out",
            "enableWebAccess": True,
            "useChiefInTfConfig": False,
            "args": ["--epochs", "5"],
            "masterConfig": {
                "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                "acceleratorConfig": {"type": "NVIDIA_TESLA_K80", "count": "2"},
            },
        },
    }


def test_cli_flags_that_do_not_touch_the_job_leave_it_alone(config_file: str) -> None:
    assert dry_run("--project", "p", "--async") == dry_run()


CLI_OVERRIDES = [
    (("--scale-tier", "basic", "--worker-count", "0"), {"scaleTier": "BASIC", "workerCount": "0"}),
    (("--worker-count", "3"), {"workerCount": "3"}),
    (("--runtime-version", "2.8", "--python-version", "3.7"), {"runtimeVersion": "2.8"}),
    (("--module-name", "trainer.other"), {"pythonModule": "trainer.other"}),
    (("--job-dir", "gs://flag-bucket/o"), {"jobDir": "gs://flag-bucket/o"}),
    (("--use-chief-in-tf-config", "true"), {"useChiefInTfConfig": True}),
    (("--region", "us-east1"), {"region": "us-east1"}),
    (
        ("--packages", "gs://flag-bucket/a.tgz,gs://flag-bucket/b.tgz"),
        {"packageUris": ["gs://flag-bucket/a.tgz", "gs://flag-bucket/b.tgz"]},
    ),
    (("--", "--lr", "0.1"), {"args": ["--lr", "0.1"]}),
    (("--",), {"args": []}),
]


@pytest.mark.parametrize(
    ("args", "changed"), CLI_OVERRIDES, ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_cli_typed_flags_override_only_their_field(
    config_file: str, args: tuple[str, ...], changed: dict[str, Any]
) -> None:
    base = dry_run()["trainingInput"]
    got = dry_run(*args)["trainingInput"]
    assert got == {**base, **changed}


def test_cli_labels_replace_and_repeat(config_file: str) -> None:
    assert dry_run("--labels", "env=prod", "--labels", "owner=me,tier=1")["labels"] == {
        "env": "prod",
        "owner": "me",
        "tier": "1",
    }


def test_cli_master_accelerator_keeps_disk_config(config_file: str) -> None:
    master = dry_run("--master-accelerator", "type=nvidia-tesla-t4,count=4")["trainingInput"]["masterConfig"]
    assert master == {
        "diskConfig": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
        "acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "4"},
    }


def test_cli_region_precedence(config_file: str) -> None:
    env = {"CLOUDSDK_COMPUTE_REGION": "asia-east1"}
    assert dry_run(env=env)["trainingInput"]["region"] == "europe-west4"
    assert dry_run("--region", "us-west1", env=env)["trainingInput"]["region"] == "us-west1"
    Path("config.yaml").write_text(CONFIG_YAML.replace("  region: europe-west4\n", ""), encoding="utf-8")
    assert dry_run(env=env)["trainingInput"]["region"] == "asia-east1"


def test_cli_kms_parts(config_file: str) -> None:
    body = dry_run("--project", "proj", "--kms-key", "key", "--kms-keyring", "ring", "--kms-location", "us")
    assert body["trainingInput"]["encryptionConfig"] == {
        "kmsKeyName": "projects/proj/locations/us/keyRings/ring/cryptoKeys/key"
    }
    body = dry_run(
        "--kms-key",
        "key",
        "--kms-keyring",
        "ring",
        "--kms-location",
        "us",
        env={"CLOUDSDK_CORE_PROJECT": "envp"},
    )
    assert body["trainingInput"]["encryptionConfig"]["kmsKeyName"].startswith("projects/envp/")


def test_cli_enable_web_access_not_typed_keeps_file_value(config_file: str) -> None:
    Path("config.yaml").write_text(CONFIG_YAML.replace("enableWebAccess: true", "enableWebAccess: false"))
    assert dry_run()["trainingInput"]["enableWebAccess"] is False
    assert dry_run("--enable-web-access")["trainingInput"]["enableWebAccess"] is True
