"""Values that look right but are not: a trailing newline, numbers beyond their API type, too many packages, and
values that would reach a host name or a URL path. Each is refused by `training --dry-run` (exit 2, one line
naming the file line or the flag), before anything is built or uploaded.

Also: the rules are total over schema-invalid shapes, so every problem of the flags, the packages and the KMS key
is reported next to the file's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job.rules import check_job
from tests.fakes.rules import (
    BASE,
    CUSTOM,
    JOB_FLAGS,
    At,
    Refused,
    assert_refused,
    cfg,
    error_lines,
    invoke,
    refused,
)

BIG = 2**70
PKG = "gs://my-bucket/trainer-0.1.tar.gz"
MANY = ",".join(f"gs://my-bucket/p{i}-0.1.tar.gz" for i in range(101))

# fmt: off
WHOLE_VALUES = [
    # a trailing newline, from a flag, the environment or the file
    refused("job-id-newline", None, JOB_FLAGS, "JOB argument", "$.jobId", "job id 'my_job\\n' is invalid",
            job="my_job\n"),
    refused("region-flag-newline", None, ("--region", "us-central1\n", *JOB_FLAGS[2:]), "--region",
            "$.trainingInput.region", "region 'us-central1\\n' is invalid"),
    refused("region-env-host-injection", None, JOB_FLAGS[2:], "CLOUDSDK_COMPUTE_REGION",
            "$.trainingInput.region", "region '127.0.0.2:8080?' is invalid",
            env={"CLOUDSDK_COMPUTE_REGION": "127.0.0.2:8080?"}),
    refused("region-file-newline", cfg('  region2: x\n').replace("region: us-central1", 'region: "us-c1\\n"')
            .replace("  region2: x\n", ""), (), At("us-c1"), "$.trainingInput.region", "is not valid"),
    refused("machine-type-flag-newline", None, (*JOB_FLAGS, "--scale-tier", "custom", "--master-machine-type",
            "n1-standard-4\n"), "--master-machine-type", "$.trainingInput.masterType", "is neither a Compute Engine"),
    refused("machine-type-file-newline", cfg('  scaleTier: CUSTOM\n  masterType: "n1-standard-4\\n"\n'), (),
            At("masterType"), "$.trainingInput.masterType", "is neither a Compute Engine"),
    refused("count-file-newline", cfg('  scaleTier: CUSTOM\n  masterType: n1-standard-4\n'
            '  workerType: n1-standard-4\n  workerCount: "3\\n"\n'), (), At("workerCount"),
            "$.trainingInput.workerCount", "is not valid"),
    refused("duration-newline", cfg('  scheduling:\n    maxRunningTime: "3600s\\n"\n'), (),
            At("maxRunningTime"), "$.trainingInput.scheduling.maxRunningTime", "is not valid"),
    refused("module-flag-newline", None, (*JOB_FLAGS[:4], "--module-name", "trainer.task\n", *JOB_FLAGS[6:]),
            "--module-name", "$.trainingInput.pythonModule", "contains whitespace or control characters"),
    refused("runtime-flag-newline", None, (*JOB_FLAGS[:2], "--runtime-version", "2.11\n", *JOB_FLAGS[4:]),
            "--runtime-version", "$.trainingInput.runtimeVersion", "is not valid"),
    refused("python-version-newline", cfg().replace('pythonVersion: "3.7"', 'pythonVersion: "3.7\\n"'), (),
            At("pythonVersion"), "$.trainingInput.pythonVersion", "is not valid"),
    refused("label-value-newline", cfg('labels:\n  team: "ml\\n"\n'), (), At("team"), "$.labels.team",
            "label value 'ml\\n' is invalid"),
    refused("package-uri-newline", cfg().replace(PKG, PKG + '\\n"').replace("- gs://", '- "gs://'), (),
            At("trainer-0.1"), "$.trainingInput.packageUris[0]", "line break"),
    # numbers beyond their API type
    refused("count-2**70-file-int", cfg(f'  scaleTier: CUSTOM\n  masterType: n1-standard-4\n'
            f'  workerType: n1-standard-4\n  workerCount: {BIG}\n'), (), At("workerCount"),
            "$.trainingInput.workerCount", "out of range (at most 9223372036854775807)"),
    refused("count-2**70-file-string", cfg(f'  scaleTier: CUSTOM\n  masterType: n1-standard-4\n'
            f'  workerType: n1-standard-4\n  workerCount: "{BIG}"\n'), (), At("workerCount"),
            "$.trainingInput.workerCount", "int64 limit"),
    refused("count-2**70-flag", None, (*JOB_FLAGS, *CUSTOM, "--worker-machine-type", "n1-standard-4",
            "--worker-count", str(BIG)), "--worker-count", "$.trainingInput.workerCount", "int64 limit"),
    refused("accelerator-count-2**70", cfg(f'  masterType: n1-standard-4\n  masterConfig:\n'
            f'    acceleratorConfig:\n      type: NVIDIA_TESLA_T4\n      count: "{BIG}"\n'), (),
            At("count:"), "$.trainingInput.masterConfig.acceleratorConfig.count", "int64 limit"),
    refused("int32-disk-size", cfg(f'  masterType: n1-standard-4\n  masterConfig:\n    diskConfig:\n'
            f'      bootDiskSizeGb: {2**31}\n'), (), At("bootDiskSizeGb"),
            "$.trainingInput.masterConfig.diskConfig.bootDiskSizeGb", "out of range (at most 2147483647)"),
    refused("duration-beyond-protobuf", cfg('  scheduling:\n    maxRunningTime: 999999999999s\n'), (),
            At("maxRunningTime"), "$.trainingInput.scheduling.maxRunningTime", "limit"),
    # more than 100 packages
    refused("101-packages-flag", None, (*JOB_FLAGS[:6], "--packages", MANY), "--packages/--package-path",
            "$.trainingInput.packageUris", "at most 100"),
    # values that reach a URL: checked before anything is built or uploaded
    refused("project-flag-slash", None, (*JOB_FLAGS, "--project", "a/b"), "--project", "$",
            "project 'a/b' is invalid"),
    refused("project-env-query", None, JOB_FLAGS, "CLOUDSDK_CORE_PROJECT", "$", "project 'p?x' is invalid",
            env={"CLOUDSDK_CORE_PROJECT": "p?x"}),
    refused("project-env-newline", None, JOB_FLAGS, "GOOGLE_CLOUD_PROJECT", "$", "project 'p\\n' is invalid",
            env={"GOOGLE_CLOUD_PROJECT": "p\n"}),
]
# fmt: on


@pytest.mark.parametrize("case", WHOLE_VALUES)
def test_value_that_only_looks_right_is_refused(workdir: Path, case: Refused) -> None:
    assert_refused(invoke(case.config, case.flags, job=case.job, env=case.env), case)


@pytest.mark.parametrize(
    ("config", "flags", "message"),
    [
        (cfg('labels:\n  "team\\n": ml\n'), (), "label key 'team\\n' is invalid"),
        (None, (*JOB_FLAGS, "--job-dir", "gs://my-bucket/out\n"), "contains a line break"),
    ],
    ids=["label-key-newline", "job-dir-flag-newline"],
)
def test_newlines_elsewhere_are_refused(
    workdir: Path, config: str | None, flags: tuple[str, ...], message: str
) -> None:
    result = invoke(config, flags)
    assert result.exit_code == 2 and "Traceback" not in result.output and result.stdout == ""
    assert message in result.stderr, result.stderr


def test_project_is_checked_before_the_package_is_built(workdir: Path) -> None:
    result = invoke(
        None,
        (*JOB_FLAGS[:6], "--package-path", "trainer", "--staging-bucket", "gs://b-1", "--project", "a/b"),
    )
    assert result.exit_code == 2 and error_lines(result) == [
        "ERROR: --project: $: project 'a/b' is invalid: use the project id (lowercase letters, digits and '-', "
        "like my-project) or the project number"
    ], result.stderr


SHAPES: list[Any] = [
    None,
    [],
    "job",
    {"trainingInput": []},
    {"trainingInput": "x", "labels": [1]},
    {"jobId": ["a"], "labels": {"a": [1], "b": None}},
    {
        "trainingInput": {
            "scaleTier": ["CUSTOM"],
            "masterType": 5,
            "workerType": {"a": 1},
            "workerCount": [1],
            "parameterServerCount": None,
            "evaluatorCount": {"x": 1},
            "masterConfig": [1, 2],
            "workerConfig": {"acceleratorConfig": "T4", "imageUri": ["x"], "containerArgs": "a"},
            "parameterServerConfig": {"acceleratorConfig": {"type": 5, "count": [1]}},
            "runtimeVersion": 2.11,
            "pythonVersion": ["3.7"],
            "packageUris": "gs://b-1/p.tar.gz",
            "pythonModule": None,
            "region": 5,
            "jobDir": ["gs://b-1"],
            "args": "x",
            "scheduling": {"maxRunningTime": 5, "maxWaitTime": None},
        }
    },
    {"trainingInput": {"scheduling": [], "hyperparameters": []}},
    {
        "trainingInput": {
            "hyperparameters": {
                "maxTrials": "4",
                "maxParallelTrials": [2],
                "params": [
                    5,
                    None,
                    {"parameterName": ["lr"], "type": "DOUBLE", "minValue": "0.1", "maxValue": None},
                    {"parameterName": "n", "type": "INTEGER", "minValue": [1], "maxValue": {"a": 1}},
                    {"parameterName": "d", "type": "DISCRETE", "discreteValues": ["a", 1, None]},
                    {"parameterName": "c", "type": "CATEGORICAL", "categoricalValues": "abc"},
                ],
            }
        }
    },
    {"trainingInput": {"hyperparameters": {"params": {"a": 1}}}},
    {"trainingInput": {"hyperparameters": {"params": 5}}},
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("complete", [True, False])
def test_rules_are_total_over_schema_invalid_shapes(shape: Any, complete: bool) -> None:
    found = check_job(shape, complete=complete)
    assert isinstance(found, list)
    assert all(isinstance(path, tuple) and isinstance(message, str) for path, message in found)


def test_flag_package_and_kms_problems_are_reported_next_to_a_malformed_file(workdir: Path) -> None:
    config = BASE + "  masterConfig: [1, 2]\n  scheduling: 5\n"
    result = invoke(
        config,
        (
            "--master-image-uri", "gcr.io/p/i:1", "--master-accelerator", "type=nvidia-tesla-t4,count=1",
            "--kms-key", "short", "--package-path", "notpkg", "--staging-bucket", "gs://b-1",
            "--region", "us-central1\n",
        ),
    )  # fmt: skip
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    text = result.stderr
    assert "config.yaml:" in text and "$.trainingInput.masterConfig" in text  # the file's own problem
    assert "ERROR: --kms-key: " in text  # the KMS problem of the same pass
    assert "ERROR: --package-path: $: notpkg has no __init__.py" in text  # the package problem
    assert "ERROR: --region: $.trainingInput.region: " in text  # the flag problem
