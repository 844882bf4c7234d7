"""Every TrainingInput rule, table-driven, through the real CLI (`training JOB --dry-run`).

Each refused case asserts exit code 2, no traceback, and an ``ERROR:`` line that names where the bad value
came from (``config.yaml:LINE`` for file values, the flag for flag values), its JSON path and what is wrong.
Each rule also has accepted counterexamples, so a rule that refuses everything would fail here too.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.job.rules import check_job, typed_view
from tests.fakes.rules import (
    BARE,
    BASE,
    CONFIG,
    CONTAINER,
    CUSTOM,
    JOB_FLAGS,
    NO_PACKAGES,
    Accepted,
    At,
    Refused,
    accepted,
    assert_accepted,
    assert_refused,
    cfg,
    error_lines,
    invoke,
    refused,
)

HP = """\
  hyperparameters:
    goal: MAXIMIZE
    maxTrials: 4
"""


def hp(params: str, head: str = HP) -> str:
    """BASE with a hyperparameter spec: ``head``, then ``params:`` holding ``params`` (a YAML list)."""
    return cfg(head + "    params:\n" + textwrap.indent(textwrap.dedent(params).lstrip("\n"), "    "))


# fmt: off
REFUSED = [
    # job id
    refused("job-id-starts-with-digit", None, JOB_FLAGS, "JOB argument", "$.jobId",
            "job id '1job' is invalid", job="1job"),
    refused("job-id-hyphen", None, JOB_FLAGS, "JOB argument", "$.jobId", "job id 'my-job' is invalid",
            job="my-job"),
    refused("job-id-129-chars", None, JOB_FLAGS, "JOB argument", "$.jobId", "at most 128 characters",
            job="j" * 129),
    refused("job-id-in-file", cfg("jobId: my-job\n"), (), At("jobId:"), "$.jobId", "'my-job' is not valid"),
    # labels
    refused("label-key-uppercase-flag", None, (*JOB_FLAGS, "--labels", "Env=prod"), "--labels",
            "$.labels.Env", "label key 'Env' is invalid"),
    refused("label-value-uppercase-flag", None, (*JOB_FLAGS, "--labels", "env=Prod"), "--labels",
            "$.labels.env", "label value 'Prod' is invalid"),
    refused("label-key-digit-first-file", cfg("labels:\n  1env: x\n"), (), At("1env"), "$.labels.1env",
            "label key '1env' is invalid"),
    refused("label-key-dot-file", cfg("labels:\n  team.name: x\n"), (), At("team.name"), "$.labels.team.name",
            "is invalid"),
    refused("label-key-international-uppercase", cfg("labels:\n  Ключ: значение\n"), (), At("Ключ"),
            "$.labels.Ключ", "label key 'Ключ' is invalid"),
    refused("label-value-not-string", cfg("labels:\n  replicas: [5]\n"), (), At("replicas"),
            "$.labels.replicas", "must be a string"),
    refused("label-key-64-chars", cfg(f"labels:\n  {'k' * 64}: x\n"), (), At("k" * 64),
            f"$.labels.{'k' * 32}…", "at most 63"),
    refused("label-value-64-chars", cfg(f"labels:\n  env: {'v' * 64}\n"), (), At("v" * 64), "$.labels.env",
            "at most 63"),
    refused("65-labels", None, (*JOB_FLAGS, "--labels", ",".join(f"k{i}=v" for i in range(65))), "--labels",
            "$.labels", "at most 64"),
    # scale tier and counts
    refused("worker-count-flag-without-custom", None, (*JOB_FLAGS, "--worker-count", "2"), "--worker-count",
            "$.trainingInput.workerCount", "needs scaleTier CUSTOM"),
    refused("worker-count-file-basic-gpu", cfg("  scaleTier: BASIC_GPU\n  workerCount: 1\n"), (),
            At("workerCount"), "$.trainingInput.workerCount", "needs scaleTier CUSTOM (it is BASIC_GPU)"),
    refused("ps-count-flag-standard", None,
            (*JOB_FLAGS, "--scale-tier", "standard-1", "--parameter-server-count", "1"),
            "--parameter-server-count", "$.trainingInput.parameterServerCount",
            "needs scaleTier CUSTOM (it is STANDARD_1)"),
    refused("evaluator-count-file-premium", cfg("  scaleTier: PREMIUM_1\n  evaluatorCount: 1\n"), (),
            At("evaluatorCount"), "$.trainingInput.evaluatorCount", "needs scaleTier CUSTOM"),
    refused("custom-flag-needs-master", None, (*JOB_FLAGS, "--scale-tier", "custom"), "--scale-tier",
            "$.trainingInput.scaleTier", "CUSTOM needs a master machine type: set masterType"),
    refused("custom-file-needs-master", cfg("  scaleTier: CUSTOM\n"), (), At("scaleTier"),
            "$.trainingInput.scaleTier", "CUSTOM needs a master machine type"),
    refused("custom-file-needs-master-even-with-worker-type",
            cfg("  scaleTier: CUSTOM\n  workerType: n1-standard-4\n"), (), At("scaleTier"),
            "$.trainingInput.scaleTier", "--master-machine-type"),
    refused("worker-count-flag-needs-worker-type", None, (*JOB_FLAGS, *CUSTOM, "--worker-count", "2"),
            "--worker-count", "$.trainingInput.workerCount", "workerType is not set"),
    refused("worker-count-file-needs-worker-type", cfg("  workerCount: 3\n"), CUSTOM, At("workerCount"),
            "$.trainingInput.workerCount", "set workerType (--worker-machine-type)"),
    refused("ps-count-needs-ps-type", cfg("  parameterServerCount: 1\n"), CUSTOM, At("parameterServerCount"),
            "$.trainingInput.parameterServerCount", "parameterServerType is not set"),
    refused("ps-count-flag-needs-ps-type", None, (*JOB_FLAGS, *CUSTOM, "--parameter-server-count", "2"),
            "--parameter-server-count", "$.trainingInput.parameterServerCount",
            "--parameter-server-machine-type"),
    refused("evaluator-count-needs-evaluator-type", cfg("  evaluatorCount: 1\n"), CUSTOM,
            At("evaluatorCount"), "$.trainingInput.evaluatorCount", "evaluatorType is not set"),
    refused("negative-count-file", cfg("  workerCount: -1\n"), CUSTOM, At("workerCount"),
            "$.trainingInput.workerCount", "out of range"),
    # machine type names
    refused("master-type-uppercase-flag", None,
            (*JOB_FLAGS, "--scale-tier", "custom", "--master-machine-type", "N1-STANDARD-4"),
            "--master-machine-type", "$.trainingInput.masterType", "neither a Compute Engine"),
    refused("worker-type-with-space-file", cfg("  workerType: big machine\n  workerCount: 1\n"), CUSTOM,
            At("workerType"), "$.trainingInput.workerType", "'big machine' is neither"),
    refused("evaluator-type-empty-file", cfg("  evaluatorType: ''\n"), CUSTOM, At("evaluatorType"),
            "$.trainingInput.evaluatorType", "must not be empty"),
    refused("legacy-worker-with-compute-master", None,
            (*JOB_FLAGS, *CUSTOM, "--worker-count", "1", "--worker-machine-type", "complex_model_m"),
            "--worker-machine-type", "$.trainingInput.workerType",
            "legacy machine type but masterType is a Compute Engine type"),
    refused("legacy-master-with-compute-ps-file", cfg(
            "  scaleTier: CUSTOM\n  masterType: large_model\n"
            "  parameterServerType: n1-highmem-2\n  parameterServerCount: 1\n"
        ), (), At("masterType"), "$.trainingInput.masterType", "legacy machine type"),
    # image xor runtime
    refused("image-flag-and-runtime-file", cfg(), ("--master-image-uri", "gcr.io/p/trainer:1"),
            At("runtimeVersion"), "$.trainingInput.runtimeVersion", "not both"),
    refused("image-and-runtime-flags", cfg(base=CONTAINER), ("--runtime-version", "2.11"),
            "--runtime-version", "$.trainingInput.runtimeVersion",
            "set either runtimeVersion or masterConfig.imageUri, not both"),
    refused("neither-image-nor-runtime", None,
            ("--region", "us-central1", "--module-name", "trainer.task", "--packages", "gs://my-bucket/t.tar.gz"),
            "", "$.trainingInput.runtimeVersion",
            "set runtimeVersion (e.g. --runtime-version 2.11) or a custom container"),
    refused("neither-image-nor-runtime-file",
            cfg("  pythonModule: trainer.task\n  packageUris: [gs://my-bucket/t.tgz]\n", base=BARE), (),
            At("trainingInput:"), "$.trainingInput.runtimeVersion", "set runtimeVersion"),
    # python / runtime pairs
    refused("py37-rt114", None, (*JOB_FLAGS, "--runtime-version", "1.14", "--python-version", "3.7"),
            "--python-version", "$.trainingInput.pythonVersion", "3.7 needs runtimeVersion 1.15 or later"),
    refused("py35-rt115", None, (*JOB_FLAGS, "--runtime-version", "1.15", "--python-version", "3.5"),
            "--python-version", "$.trainingInput.pythonVersion", "3.5 needs runtimeVersion 1.4 to 1.14"),
    refused("py27-rt21", None, (*JOB_FLAGS, "--runtime-version", "2.1", "--python-version", "2.7"),
            "--python-version", "$.trainingInput.pythonVersion", "2.7 needs runtimeVersion 1.15 or earlier"),
    refused("py35-rt13", None, (*JOB_FLAGS, "--runtime-version", "1.3", "--python-version", "3.5"),
            "--python-version", "$.trainingInput.pythonVersion", "1.4 to 1.14"),
    refused("py37-rt114-file", cfg(
            "  pythonVersion: '3.7'\n  runtimeVersion: '1.14'\n",
            base=BARE + "  pythonModule: t.m\n  packageUris: [gs://my-bucket/t.tgz]\n",
        ), (), At("pythonVersion"), "$.trainingInput.pythonVersion",
            "needs runtimeVersion 1.15 or later (it is 1.14)"),
    refused("py36-not-available", None, (*JOB_FLAGS, "--python-version", "3.6"), "--python-version",
            "$.trainingInput.pythonVersion", "'3.6' is not available"),
    refused("python-with-container", cfg("  pythonVersion: '3.7'\n", base=CONTAINER), (), At("pythonVersion"),
            "$.trainingInput.pythonVersion", "no effect with a custom container"),
    refused("runtime-not-a-version", cfg(base=BARE + "  runtimeVersion: latest\n"), (), At("runtimeVersion"),
            "$.trainingInput.runtimeVersion", "'latest' is not valid"),
    # accelerators
    refused("accelerator-flag-on-legacy-master", cfg("  scaleTier: CUSTOM\n  masterType: complex_model_m\n"),
            ("--master-accelerator", "type=nvidia-tesla-t4,count=1"), "--master-accelerator",
            "$.trainingInput.masterConfig.acceleratorConfig",
            "only be attached to Compute Engine machine types"),
    refused("accelerator-flag-on-legacy-worker", None,
            (*JOB_FLAGS, "--scale-tier", "custom", "--master-machine-type", "standard", "--worker-count", "1",
             "--worker-machine-type", "standard_gpu", "--worker-accelerator", "type=nvidia-tesla-k80,count=2"),
            "--worker-accelerator", "$.trainingInput.workerConfig.acceleratorConfig", "not 'standard_gpu'"),
    refused("accelerator-file-without-count",
            cfg("  masterConfig:\n    acceleratorConfig:\n      type: NVIDIA_TESLA_T4\n"), (),
            At("acceleratorConfig"), "$.trainingInput.masterConfig.acceleratorConfig",
            "needs a count greater than 0"),
    refused("accelerator-file-count-zero",
            cfg("  masterConfig:\n    acceleratorConfig:\n      count: 0\n      type: NVIDIA_TESLA_T4\n"), (),
            At("acceleratorConfig"), "$.trainingInput.masterConfig.acceleratorConfig",
            "needs a count greater than 0"),
    refused("accelerator-file-without-type", cfg("  masterConfig:\n    acceleratorConfig:\n      count: 2\n"),
            (), At("acceleratorConfig"), "$.trainingInput.masterConfig.acceleratorConfig", "needs a type"),
    refused("accelerator-file-unknown-type",
            cfg("  masterConfig:\n    acceleratorConfig:\n      count: 2\n      type: NVIDIA_TESLA_H100\n"),
            (), At("H100"), "$.trainingInput.masterConfig.acceleratorConfig.type",
            "'NVIDIA_TESLA_H100' is not allowed"),
    refused("accelerator-file-flag-spelling",
            cfg("  masterConfig:\n    acceleratorConfig:\n      count: 1\n      type: nvidia-tesla-t4\n"), (),
            At("nvidia-tesla-t4"), "$.trainingInput.masterConfig.acceleratorConfig.type",
            "did you mean 'NVIDIA_TESLA_T4'?"),
    # durations and priority
    refused("max-wait-below-1800s", cfg("  scheduling:\n    maxWaitTime: 1799s\n"), (), At("maxWaitTime"),
            "$.trainingInput.scheduling.maxWaitTime", "below the minimum of 1800s"),
    refused("max-wait-fraction-below", cfg("  scheduling:\n    maxWaitTime: 1799.999999999s\n"), (),
            At("maxWaitTime"), "$.trainingInput.scheduling.maxWaitTime", "minimum of 1800s"),
    refused("max-wait-minutes", cfg("  scheduling:\n    maxWaitTime: 30m\n"), (), At("maxWaitTime"),
            "$.trainingInput.scheduling.maxWaitTime", "'30m' is not valid"),
    refused("max-running-zero", cfg("  scheduling:\n    maxRunningTime: 0s\n"), (), At("maxRunningTime"),
            "$.trainingInput.scheduling.maxRunningTime", "must be more than 0s"),
    refused("max-running-zero-fraction", cfg("  scheduling:\n    maxRunningTime: 0.000000000s\n"), (),
            At("maxRunningTime"), "$.trainingInput.scheduling.maxRunningTime", "more than 0s"),
    refused("max-running-no-unit", cfg("  scheduling:\n    maxRunningTime: '3600'\n"), (),
            At("maxRunningTime"), "$.trainingInput.scheduling.maxRunningTime", "is not valid"),
    refused("max-running-ten-fraction-digits", cfg("  scheduling:\n    maxRunningTime: 1.0123456789s\n"), (),
            At("maxRunningTime"), "$.trainingInput.scheduling.maxRunningTime", "is not valid"),
    refused("max-running-negative", cfg("  scheduling:\n    maxRunningTime: -5s\n"), (), At("maxRunningTime"),
            "$.trainingInput.scheduling.maxRunningTime", "is not valid"),
    refused("priority-1001", cfg("  scheduling:\n    priority: 1001\n"), (), At("priority"),
            "$.trainingInput.scheduling.priority", "at most 1000"),
    refused("priority-negative", cfg("  scheduling:\n    priority: -1\n"), (), At("priority"),
            "$.trainingInput.scheduling.priority", "at least 0"),
    # packages
    refused("no-packages", None, NO_PACKAGES, "", "$.trainingInput.packageUris", "needs packages: pass --package-path and/or --packages"),
    refused("no-packages-file-empty-list",
            cfg("  packageUris: []\n", base=BARE + "  runtimeVersion: '2.11'\n  pythonModule: t.m\n"), (),
            At("packageUris"), "$.trainingInput.packageUris", "needs packages"),
    refused("no-module", cfg(base=BARE + "  runtimeVersion: '2.11'\n  packageUris: [gs://my-bucket/t.tgz]\n"),
            (), At("trainingInput:"), "$.trainingInput.pythonModule", "needs a module: pass --module-name"),
    refused("101-packages-file", cfg(
            "  packageUris:\n" + "".join(f"  - gs://my-bucket/p{i}.tgz\n" for i in range(101)),
            base=BARE + "  runtimeVersion: '2.11'\n  pythonModule: t.m\n",
        ), (), At("packageUris"), "$.trainingInput.packageUris", "has 101 items; at most 100"),
    refused("package-not-gs-file", cfg(
            "  packageUris:\n  - dist/trainer.tar.gz\n",
            base=BARE + "  runtimeVersion: '2.11'\n  pythonModule: t.m\n",
        ), (), At("dist/trainer"), "$.trainingInput.packageUris[0]", "'dist/trainer.tar.gz' is not valid"),
    refused("duplicate-package-names-file", cfg(
            "  packageUris:\n  - gs://my-bucket/a/pkg.tgz\n  - gs://my-bucket/b/pkg.tgz\n",
            base=BARE + "  runtimeVersion: '2.11'\n  pythonModule: t.m\n",
        ), (), At("b/pkg.tgz"), "$.trainingInput.packageUris[1]", "'pkg.tgz' appears twice"),
    refused("duplicate-package-names-flag", None,
            (*NO_PACKAGES, "--packages", "gs://my-bucket/a/pkg.tgz,gs://my-bucket/b/pkg.tgz"),
            "--packages/--package-path", "$.trainingInput.packageUris[1]", "appears twice"),
    refused("package-flag-bad-bucket-over-file", cfg(), ("--packages", "gs://goog-bucket/pkg.tgz"),
            "--packages/--package-path", "$.trainingInput.packageUris[0]", "'goog-bucket' is not allowed"),
    refused("local-package-without-staging", None, (*NO_PACKAGES, "--packages", "a/extra-1.0.tar.gz"),
            "--packages/--package-path", "$", "local packages need a staging location"),
    refused("package-path-without-staging", cfg(), ("--package-path", "trainer"), "--packages/--package-path",
            "$", "staging location"),
    refused("missing-local-package", None,
            (*JOB_FLAGS, "--packages", "dist/nothing.tar.gz", "--staging-bucket", "gs://my-bucket"),
            "--packages", "$", "dist/nothing.tar.gz: no such file"),
    refused("local-packages-same-name", None,
            (*JOB_FLAGS, "--packages", "a/extra-1.0.tar.gz,b/extra-1.0.tar.gz", "--staging-bucket", "gs://b-1"),
            "--packages", "$", "same file name 'extra-1.0.tar.gz'"),
    refused("package-path-without-init", None,
            (*JOB_FLAGS, "--package-path", "notpkg", "--staging-bucket", "gs://my-bucket"), "--package-path",
            "$", "notpkg has no __init__.py"),
    refused("package-path-not-a-dir", None,
            (*JOB_FLAGS, "--package-path", "missing_dir", "--staging-bucket", "gs://my-bucket"),
            "--package-path", "$", "missing_dir: no such directory"),
    # hyperparameters
    refused("hp-goal-required", cfg(
            "  hyperparameters:\n    params:\n    - parameterName: lr\n      type: DOUBLE\n"
            "      minValue: 0.1\n      maxValue: 1\n"
        ), (), At("hyperparameters"), "$.trainingInput.hyperparameters", "'goal' is required"),
    refused("hp-goal-unknown", cfg(
            "  hyperparameters:\n    goal: BIGGER\n    params:\n    - parameterName: lr\n"
            "      type: CATEGORICAL\n      categoricalValues: [a]\n"
        ), (), At("BIGGER"), "$.trainingInput.hyperparameters.goal", "'BIGGER' is not one of"),
    refused("hp-params-required", cfg("  hyperparameters:\n    goal: MINIMIZE\n"), (), At("hyperparameters"),
            "$.trainingInput.hyperparameters", "'params' is required"),
    refused("hp-duplicate-names", hp("""
            - parameterName: lr
              type: CATEGORICAL
              categoricalValues: [a]
            - parameterName: lr  # again
              type: CATEGORICAL
              categoricalValues: [b]
            """), (), At("lr  # again"), "$.trainingInput.hyperparameters.params[1].parameterName",
            "'lr' is used twice"),
    refused("hp-double-min-above-max", hp("""
            - parameterName: lr
              type: DOUBLE
              minValue: 0.5
              maxValue: 0.25
            """), (), At("minValue"), "$.trainingInput.hyperparameters.params[0].minValue",
            "minValue (0.5) must not be more than maxValue (0.25)"),
    refused("hp-integer-reversed", hp("""
            - parameterName: layers
              type: INTEGER
              minValue: 10
              maxValue: 2
            """), (), At("minValue"), "$.trainingInput.hyperparameters.params[0].minValue",
            "must not be more than"),
    refused("hp-double-without-max", hp("""
            - parameterName: lr
              type: DOUBLE
              minValue: 0.5
            """), (), At("- parameterName: lr"), "$.trainingInput.hyperparameters.params[0]",
            "needs minValue and maxValue"),
    refused("hp-integer-not-integral", hp("""
            - parameterName: layers
              type: INTEGER
              minValue: 1.5
              maxValue: 4
            """), (), At("minValue"), "$.trainingInput.hyperparameters.params[0].minValue",
            "INTEGER parameter needs a whole minValue"),
    refused("hp-categorical-without-values", hp("""
            - parameterName: optimizer
              type: CATEGORICAL
            """), (), At("optimizer"), "$.trainingInput.hyperparameters.params[0]",
            "CATEGORICAL parameter needs categoricalValues"),
    refused("hp-categorical-empty-values", hp("""
            - parameterName: optimizer
              type: CATEGORICAL
              categoricalValues: []
            """), (), At("categoricalValues"), "$.trainingInput.hyperparameters.params[0].categoricalValues",
            "at least 1"),
    refused("hp-discrete-not-increasing", hp("""
            - parameterName: batch
              type: DISCRETE
              discreteValues: [32, 64, 64, 128]
            """), (), At("discreteValues"), "$.trainingInput.hyperparameters.params[0].discreteValues",
            "strictly increasing"),
    refused("hp-discrete-decreasing", hp("""
            - parameterName: batch
              type: DISCRETE
              discreteValues: [128, 64]
            """), (), At("discreteValues"), "$.trainingInput.hyperparameters.params[0].discreteValues",
            "strictly increasing"),
    refused("hp-discrete-1001-values", hp(f"""
            - parameterName: batch
              type: DISCRETE
              discreteValues: [{", ".join(str(i) for i in range(1001))}]
            """), (), At("discreteValues"), "$.trainingInput.hyperparameters.params[0].discreteValues",
            "has 1001 items; at most 1000"),
    refused("hp-discrete-with-bounds", hp("""
            - parameterName: batch
              type: DISCRETE
              discreteValues: [1, 2]
              minValue: 1
            """), (), At("batch"), "$.trainingInput.hyperparameters.params[0]", "takes no minValue/maxValue"),
    refused("hp-parallel-exceeds-trials", hp(
            """
            - parameterName: lr
              type: DOUBLE
              minValue: 0.1
              maxValue: 1
            """,
            head=HP + "    maxParallelTrials: 5\n",
        ), (), At("maxParallelTrials"), "$.trainingInput.hyperparameters.maxParallelTrials",
            "maxParallelTrials (5) exceeds maxTrials (4)"),
    refused("hp-parallel-exceeds-default-trials", cfg(
            "  hyperparameters:\n    goal: MAXIMIZE\n"
            "    maxParallelTrials: 2\n    params:\n    - parameterName: o\n      type: CATEGORICAL\n"
            "      categoricalValues: [a, b]\n"
        ), (), At("maxParallelTrials"), "$.trainingInput.hyperparameters.maxParallelTrials",
            "exceeds maxTrials (1)"),
    refused("hp-log-scale-min-zero", hp("""
            - parameterName: lr
              type: DOUBLE
              minValue: 0
              maxValue: 1
              scaleType: UNIT_LOG_SCALE
            """), (), At("minValue"), "$.trainingInput.hyperparameters.params[0].minValue",
            "UNIT_LOG_SCALE needs minValue greater than 0"),
    refused("hp-reverse-log-scale-negative-min", hp("""
            - parameterName: lr
              type: DOUBLE
              minValue: -1
              maxValue: 1
              scaleType: UNIT_REVERSE_LOG_SCALE
            """), (), At("minValue"), "$.trainingInput.hyperparameters.params[0].minValue",
            "UNIT_REVERSE_LOG_SCALE needs minValue greater than 0"),
    refused("hp-infinite-max", hp("""
            - parameterName: lr
              type: DOUBLE
              minValue: 0
              maxValue: .inf
            """), (), At("maxValue"), "$.trainingInput.hyperparameters.params[0].maxValue",
            "must be a finite number"),
    refused("hp-nan-bound", hp("""
            - parameterName: lr
              type: DOUBLE
              minValue: .nan
              maxValue: 1
            """), (), At("minValue"), "$.trainingInput.hyperparameters.params[0].minValue",
            "must be a finite number"),
    refused("hp-zero-trials", hp(
            """
            - parameterName: o
              type: CATEGORICAL
              categoricalValues: [a]
            """,
            head=HP.replace("maxTrials: 4", "maxTrials: 0"),
        ), (), At("maxTrials"), "$.trainingInput.hyperparameters.maxTrials", "at least 1"),
    # jobDir and staging bucket
    refused("job-dir-local-path-file", cfg("  jobDir: /tmp/output\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "'/tmp/output' is not valid"),
    refused("job-dir-bad-bucket-file", cfg("  jobDir: gs://My_Bucket/out\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "bucket name 'My_Bucket' is invalid"),
    refused("job-dir-no-bucket-file", cfg("  jobDir: gs:///out\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "has no bucket name"),
    refused("job-dir-goog-bucket-file", cfg("  jobDir: gs://goog-out/x\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "not allowed"),
    refused("job-dir-ip-bucket-file", cfg("  jobDir: gs://192.168.5.4/x\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "not allowed"),
    refused("job-dir-two-char-bucket-file", cfg("  jobDir: gs://ab/x\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "is invalid"),
    refused("job-dir-64-char-bucket-file", cfg(f"  jobDir: gs://{'b' * 64}/x\n"), (), At("jobDir"),
            "$.trainingInput.jobDir", "longer than 63"),
    # containers
    refused("container-command-without-image",
            cfg("  masterConfig:\n    containerCommand: [python, -m, t]\n"), (), At("containerCommand"),
            "$.trainingInput.masterConfig.containerCommand", "needs a custom container image"),
    refused("worker-container-args-without-any-image", cfg("  workerConfig:\n    containerArgs: [--x]\n"), (),
            At("containerArgs"), "$.trainingInput.workerConfig.containerArgs",
            "needs a custom container image"),
    refused("container-args-and-user-args", cfg("    containerArgs: [--epochs, '3']\n", base=CONTAINER),
            ("--", "--lr", "0.1"), At("containerArgs"), "$.trainingInput.masterConfig.containerArgs",
            "containerArgs and trainingInput.args cannot both be set"),
    refused("container-command-and-file-args",
            cfg("    containerCommand: [python]\n  args: [--lr, '0.1']\n", base=CONTAINER), (),
            At("containerCommand"), "$.trainingInput.masterConfig.containerCommand", "cannot both be set"),
    refused("worker-image-without-master-image", cfg(), ("--worker-image-uri", "gcr.io/p/worker:1"),
            "--worker-image-uri", "$.trainingInput.workerConfig.imageUri", "the master has none"),
    refused("ps-image-without-master-image-file",
            cfg("  parameterServerConfig:\n    imageUri: gcr.io/p/ps:1\n"), (), At("gcr.io/p/ps:1"),
            "$.trainingInput.parameterServerConfig.imageUri", "the master has none"),
    # values given by flags meet the same schema as the file's
    refused("module-flag-not-dotted", None, (*JOB_FLAGS, "--module-name", "trainer/task.py"), "--module-name",
            "$.trainingInput.pythonModule", "'trainer/task.py' is a file path; give the module name 'trainer.task'"),
    refused("runtime-flag-not-a-version", None, (*JOB_FLAGS, "--runtime-version", "latest"), "--runtime-version",
            "$.trainingInput.runtimeVersion", "'latest' is not valid"),
    refused("service-account-flag-not-email", None, (*JOB_FLAGS, "--service-account", "trainer"),
            "--service-account", "$.trainingInput.serviceAccount", "'trainer' is not valid"),
    refused("empty-image-flag", cfg(base=BARE), ("--master-image-uri", ""), "--master-image-uri",
            "$.trainingInput.masterConfig.imageUri", "must not be empty"),
    refused("region-flag-uppercase", None, (*JOB_FLAGS, "--region", "US-CENTRAL1"), "--region",
            "$.trainingInput.region", "region 'US-CENTRAL1' is invalid"),
    refused("region-env-invalid", None, JOB_FLAGS[2:], "CLOUDSDK_COMPUTE_REGION", "$.trainingInput.region",
            "region 'us central' is invalid", env={"CLOUDSDK_COMPUTE_REGION": "us central"}),
    # region
    refused("region-missing", None,
            ("--runtime-version", "2.11", "--module-name", "t.m", "--packages", "gs://my-bucket/t.tgz"), "",
            "$.trainingInput.region",
            "no region: pass --region, set it in the file, or set CLOUDSDK_COMPUTE_REGION"),
    refused("region-missing-with-config", cfg(
            "  pythonModule: t.m\n  runtimeVersion: '2.11'\n  packageUris: [gs://my-bucket/t.tgz]\n",
            base="trainingInput:\n",
        ), (), At("trainingInput:"), "$.trainingInput.region", "no region"),
    refused("region-uppercase-file", cfg(BASE.replace("us-central1", "US-Central1"), base=""), (),
            At("region"), "$.trainingInput.region", "'US-Central1' is not valid"),
]
# fmt: on


@pytest.mark.parametrize("case", REFUSED)
def test_rule_refuses(workdir: Path, case: Refused) -> None:
    result = invoke(case.config, case.flags, job=case.job, env=case.env)
    assert_refused(result, case)


# fmt: off
ACCEPTED = [
    accepted("minimal-file", cfg()),
    accepted("minimal-flags", None, JOB_FLAGS),
    accepted("job-id-128-chars", None, JOB_FLAGS, job="J" + "j_9" * 42 + "x"),
    accepted("job-id-in-file-is-replaced", cfg("jobId: other_name\n")),
    accepted("labels-international-lowercase", cfg("labels:\n  ключ: значение\n  été: naïve\n  env: ''\n")),
    accepted("labels-flag-digits-dash-underscore", None, (*JOB_FLAGS, "--labels", "team-1_a=x-1_b,empty=")),
    accepted("labels-63-chars", cfg(f"labels:\n  {'k' * 63}: {'v' * 63}\n")),
    accepted("64-labels", None, (*JOB_FLAGS, "--labels", ",".join(f"k{i}=v" for i in range(64)))),
    accepted("zero-counts-without-custom", cfg("  workerCount: 0\n  parameterServerCount: '0'\n")),
    accepted("basic-gpu-flag", None, (*JOB_FLAGS, "--scale-tier", "basic-gpu")),
    accepted("custom-flags-full", None,
             (*JOB_FLAGS, *CUSTOM, "--worker-count", "2", "--worker-machine-type", "n1-standard-4",
              "--parameter-server-count", "1", "--parameter-server-machine-type", "n1-highmem-2")),
    accepted("custom-file-master-from-flag", cfg("  scaleTier: CUSTOM\n"),
             ("--master-machine-type", "n1-standard-8")),
    accepted("custom-flag-master-from-file", cfg("  masterType: n1-standard-8\n"),
             ("--scale-tier", "CUSTOM")),
    accepted("custom-file-evaluators", cfg(
            "  scaleTier: CUSTOM\n  masterType: n1-standard-4\n"
            "  evaluatorType: n1-standard-4\n  evaluatorCount: 1\n"
        )),
    accepted("all-legacy-machines", None,
             (*JOB_FLAGS, "--scale-tier", "custom", "--master-machine-type", "complex_model_m",
              "--worker-count", "2", "--worker-machine-type", "complex_model_m_gpu")),
    accepted("a2-machine", None,
             (*JOB_FLAGS, "--scale-tier", "custom", "--master-machine-type", "a2-highgpu-1g")),
    accepted("container-only", cfg(base=CONTAINER)),
    accepted("container-flag-only", None, ("--region", "us-central1", "--master-image-uri", "gcr.io/p/t:1")),
    accepted("container-command-and-args", cfg(
            "    containerCommand: [python, -m, trainer.task]\n    containerArgs: [--epochs, '3']\n",
            base=CONTAINER,
        )),
    accepted("container-args-empty-dashdash", cfg("    containerArgs: [--epochs, '3']\n", base=CONTAINER),
             ("--",)),
    accepted("container-worker-args-inherit-master-image", cfg(
            "  scaleTier: CUSTOM\n  masterType: n1-standard-4\n"
            "  workerType: n1-standard-4\n  workerCount: 1\n  workerConfig:\n    containerArgs: [--role, w]\n",
            base=CONTAINER,
        )),
    accepted("container-with-worker-image", cfg(base=CONTAINER), ("--worker-image-uri", "gcr.io/p/w:1")),
    accepted("py37-rt115", None, (*JOB_FLAGS, "--runtime-version", "1.15", "--python-version", "3.7")),
    accepted("py37-rt211", None, (*JOB_FLAGS, "--python-version", "3.7")),
    accepted("py35-rt114", None, (*JOB_FLAGS, "--runtime-version", "1.14", "--python-version", "3.5")),
    accepted("py35-rt14", None, (*JOB_FLAGS, "--runtime-version", "1.4", "--python-version", "3.5")),
    accepted("py27-rt115", None, (*JOB_FLAGS, "--runtime-version", "1.15", "--python-version", "2.7")),
    accepted("py27-rt14", None, (*JOB_FLAGS, "--runtime-version", "1.4", "--python-version", "2.7")),
    accepted("accelerator-flag", None,
             (*JOB_FLAGS, *CUSTOM, "--master-accelerator", "type=nvidia-tesla-t4,count=1")),
    accepted("accelerator-flag-api-spelling", None,
             (*JOB_FLAGS, *CUSTOM, "--master-accelerator", "count=2,type=NVIDIA_TESLA_V100")),
    accepted("accelerator-file",
             cfg("  masterConfig:\n    acceleratorConfig:\n      type: TPU_V3\n      count: '8'\n")),
    accepted("durations-and-priority",
             cfg("  scheduling:\n    maxWaitTime: 1800s\n    maxRunningTime: 0.5s\n    priority: 1000\n")),
    accepted("durations-nine-fraction-digits", cfg(
            "  scheduling:\n    maxWaitTime: 3600.123456789s\n    maxRunningTime: 604800s\n    priority: 0\n"
        )),
    accepted("100-packages", cfg(
            "  packageUris:\n" + "".join(f"  - gs://my-bucket/p{i}.tgz\n" for i in range(100)),
            base=BARE + "  runtimeVersion: '2.11'\n  pythonModule: t.m\n",
        )),
    accepted("package-path-with-staging-bucket", cfg(),
             ("--package-path", "trainer", "--staging-bucket", "gs://my-bucket")),
    accepted("local-package-with-job-dir", cfg(),
             ("--packages", "a/extra-1.0.tar.gz", "--job-dir", "gs://my-bucket/out")),
    accepted("local-package-with-file-job-dir", cfg("  jobDir: gs://my-bucket/out\n"),
             ("--packages", "a/extra-1.0.tar.gz")),
    accepted("hp-every-type", hp(
            """
             - parameterName: lr
               type: DOUBLE
               minValue: 0.0001
               maxValue: 0.1
               scaleType: UNIT_LOG_SCALE
             - parameterName: layers
               type: INTEGER
               minValue: 1
               maxValue: 8.0
             - parameterName: optimizer
               type: CATEGORICAL
               categoricalValues: [adam, sgd]
             - parameterName: batch
               type: DISCRETE
               discreteValues: [16, 32, 64.5]
             """,
            head=HP + "    maxParallelTrials: 4\n    algorithm: RANDOM_SEARCH\n",
        )),
    accepted("hp-1000-discrete-values", hp(f"""
             - parameterName: batch
               type: DISCRETE
               discreteValues: [{", ".join(str(i) for i in range(1000))}]
             """)),
    accepted("job-dir-dotted-bucket", cfg("  jobDir: gs://my.bucket.example.com/out\n")),
    accepted("job-dir-flag", cfg(), ("--job-dir", "gs://a_b-c1/out", "--staging-bucket", "gs://my-bucket")),
    accepted("region-from-env", None,
             ("--runtime-version", "2.11", "--module-name", "t.m", "--packages", "gs://my-bucket/t.tgz"),
             env={"CLOUDSDK_COMPUTE_REGION": "europe-west4"}),
]
# fmt: on


@pytest.mark.parametrize("case", ACCEPTED)
def test_rule_accepts(workdir: Path, case: Accepted) -> None:
    result = invoke(case.config, case.flags, job=case.job, env=case.env)
    body = assert_accepted(result)
    assert body["jobId"] == case.job


# fmt: off
BAD_FLAG_VALUES = [
    pytest.param(("--master-accelerator", "type=nvidia-tesla-t4,count=0"), "--master-accelerator",
                 "count '0' must be a whole number greater than 0", id="accelerator-count-zero"),
    pytest.param(("--worker-accelerator", "type=nvidia-tesla-t4,count=-2"), "--worker-accelerator",
                 "greater than 0", id="accelerator-count-negative"),
    pytest.param(("--master-accelerator", "type=nvidia-tesla-t4,count=two"), "--master-accelerator",
                 "whole number", id="accelerator-count-word"),
    pytest.param(("--master-accelerator", "type=nvidia-tesla-h100,count=1"), "--master-accelerator",
                 "accelerator type 'nvidia-tesla-h100' is unknown", id="accelerator-unknown-type"),
    pytest.param(("--parameter-server-accelerator", "type=nvidia-tesla-t4"), "--parameter-server-accelerator",
                 "give both type and count", id="accelerator-without-count"),
    pytest.param(("--master-accelerator", "count=1"), "--master-accelerator", "give both type and count",
                 id="accelerator-without-type"),
    pytest.param(("--master-accelerator", "nvidia-tesla-t4"), "--master-accelerator",
                 "expected type=TYPE,count=COUNT", id="accelerator-bare-type"),
    pytest.param(("--master-accelerator", "type=nvidia-tesla-t4,count=1,memory=2"), "--master-accelerator",
                 "expected type=TYPE,count=COUNT", id="accelerator-extra-key"),
    pytest.param(("--scale-tier", "gpu"), "--scale-tier", "'gpu' is not a scale tier",
                 id="scale-tier-unknown"),
    pytest.param(("--worker-count", "-1"), "--worker-count", "-1", id="worker-count-negative"),
    pytest.param(("--parameter-server-count", "many"), "--parameter-server-count", "many",
                 id="ps-count-word"),
    pytest.param(("--job-dir", "/tmp/out"), "--job-dir", "must be a Cloud Storage URL", id="job-dir-local"),
    pytest.param(("--job-dir", "gs://Out/x"), "--job-dir", "bucket name 'Out' is invalid",
                 id="job-dir-bad-bucket"),
    pytest.param(("--staging-bucket", "my-bucket"), "--staging-bucket", "gs://BUCKET",
                 id="staging-no-scheme"),
    pytest.param(("--staging-bucket", "gs://my-google-bucket"), "--staging-bucket", "not allowed",
                 id="staging-google-in-name"),
    pytest.param(("--staging-bucket", "gs://-bucket"), "--staging-bucket", "is invalid",
                 id="staging-leading-dash"),
    pytest.param(("--labels", "novalue"), "--labels", "'novalue' is not KEY=VALUE", id="labels-no-equals"),
    pytest.param(("--use-chief-in-tf-config", "maybe"), "--use-chief-in-tf-config", "maybe",
                 id="chief-not-bool"),
]
# fmt: on


@pytest.mark.parametrize(("flags", "flag", "message"), BAD_FLAG_VALUES)
def test_bad_flag_value_is_a_usage_error(
    workdir: Path, flags: tuple[str, ...], flag: str, message: str
) -> None:
    result = invoke(None, (*JOB_FLAGS, *flags))
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.output
    assert f"Invalid value for '{flag}'" in result.stderr
    assert message in result.stderr


def test_module_name_from_file_must_be_a_dotted_name(workdir: Path) -> None:
    config = cfg(
        base=BARE + "  runtimeVersion: '2.11'\n  packageUris: [gs://my-bucket/t.tgz]\n"
        "  pythonModule: trainer/task.py\n"
    )
    case = Refused(
        config, (), At("pythonModule"), "$.trainingInput.pythonModule", "'trainer/task.py' is not valid"
    )
    assert_refused(invoke(config, ()), case)


def test_all_rule_errors_are_reported_at_once(workdir: Path) -> None:
    config = cfg(
        textwrap.dedent("""\
      workerCount: 2
      jobDir: gs://Bad_Bucket/out
      scheduling:
        maxWaitTime: 60s
      hyperparameters:
        goal: MINIMIZE
        maxTrials: 2
        maxParallelTrials: 3
        params:
        - parameterName: lr
          type: DOUBLE
          minValue: 1
          maxValue: 0.1
    labels:
      Team: ml
    """)
    )
    result = invoke(config, ())
    assert result.exit_code == 2
    lines = error_lines(result)
    assert len(lines) == 6, result.stderr
    paths = {line.split(": ")[2] for line in lines}
    assert paths == {
        "$.trainingInput.workerCount",
        "$.trainingInput.jobDir",
        "$.trainingInput.scheduling.maxWaitTime",
        "$.trainingInput.hyperparameters.maxParallelTrials",
        "$.trainingInput.hyperparameters.params[0].minValue",
        "$.labels.Team",
    }
    assert all(line.startswith(f"ERROR: {CONFIG}:") for line in lines)


def test_file_and_flag_problems_are_reported_together(workdir: Path) -> None:
    result = invoke(
        cfg("  scheduling:\n    priority: 5\n    maxWaitTime: 10s\n"),
        ("--worker-count", "1", "--labels", "A=b", "--python-version", "2.7"),
    )
    lines = error_lines(result)
    assert result.exit_code == 2
    assert len(lines) == 4, result.stderr
    assert {line.split(": ")[1] for line in lines} == {
        "--worker-count",
        "--labels",
        "--python-version",
        f"{CONFIG}:10",
    }


def test_schema_and_rule_errors_are_reported_together(workdir: Path) -> None:
    result = invoke(cfg("  scaleTeir: CUSTOM\n  scheduling:\n    maxWaitTime: 60s\n"), ())
    paths = {line.split(": ")[2] for line in error_lines(result)}
    assert paths == {"$.trainingInput.scaleTeir", "$.trainingInput.scheduling.maxWaitTime"}


@pytest.mark.parametrize(
    ("flags", "missing"),
    [
        (("--kms-key", "k"), "--kms-keyring and --kms-location"),
        (("--kms-key", "k", "--kms-keyring", "r"), "--kms-location"),
    ],
)
def test_short_kms_key_needs_its_key_ring_and_location(
    workdir: Path, flags: tuple[str, ...], missing: str
) -> None:
    result = invoke(cfg(), flags)
    assert result.exit_code == 2
    assert any(
        line.startswith("ERROR: --kms-key: $.trainingInput.encryptionConfig.kmsKeyName: ") and missing in line
        for line in error_lines(result)
    ), result.stderr


def test_short_kms_key_with_its_parts_is_accepted(workdir: Path) -> None:
    result = invoke(cfg(), ("--kms-key", "k", "--kms-keyring", "r", "--kms-location", "us-central1"))
    assert result.exit_code == 0, result.stderr


# Module names: what `python -m` accepts -----------------------------------------------------------------------

# fmt: off
MODULE_NAMES = [
    # name, accepted, message part when refused
    ("trainer.task", True, ""),
    ("youtube-8m.train", True, ""),          # a real starter project's documented command
    ("8m.train", True, ""),                  # runpy looks parts up as file names: a digit first is fine
    ("class.train", True, ""),               # so is a keyword
    ("ünï.train", True, ""),
    ("pkg.sub-mod", True, ""),
    ("task", True, ""),
    (".trainer.task", False, "relative module name"),
    ("trainer..task", False, "empty part between dots"),
    ("trainer.task.", False, "empty part between dots"),
    ("trainer/task.py", False, "is a file path; give the module name 'trainer.task'"),
    ("trainer/task", False, "path separator"),
    ("trainer task", False, "whitespace or control characters"),
    ("trainer.task\n", False, "whitespace or control characters"),
    ("", False, "empty"),
]
# fmt: on


@pytest.mark.parametrize(("name", "ok", "message"), MODULE_NAMES)
def test_module_names_are_what_python_m_accepts(name: str, ok: bool, message: str) -> None:
    import re

    from mlsubmit.job.jobfile import job_schema
    from mlsubmit.job.rules import module_name_problem

    problem = module_name_problem(name)
    assert (problem is None) == ok, problem
    if not ok:
        assert problem is not None and message in problem
    pattern = job_schema()["$defs"]["TrainingInput"]["properties"]["pythonModule"]["pattern"]
    if name and not name.endswith("\n"):  # the schema's pattern agrees (a trailing newline is the rule's job)
        assert bool(re.search(pattern, name)) == ok


@pytest.mark.timeout(60)
def test_python_m_runs_every_accepted_module_name(tmp_path: Path) -> None:
    import subprocess
    import sys

    names = [name for name, ok, _ in MODULE_NAMES if ok]
    for name in names:
        *package, module = name.split(".")
        folder = tmp_path.joinpath(*package)
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(len(package)):
            tmp_path.joinpath(*package[: i + 1], "__init__.py").touch()
        (folder / f"{module}.py").write_text("print('ran')\n", encoding="utf-8")
    for name in names:
        done = subprocess.run(
            [sys.executable, "-m", name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert done.stdout == "ran\n", (name, done.stderr)


def test_hyphenated_module_flag_gives_the_body_gcloud_sends(workdir: Path) -> None:
    ti = assert_accepted(invoke(None, (*JOB_FLAGS[:4], "--packages", JOB_FLAGS[7], "--module-name",
                                       "youtube-8m.train")))["trainingInput"]  # fmt: skip
    assert ti["pythonModule"] == "youtube-8m.train"


# TPUs and unknown machine types -------------------------------------------------------------------------------


def test_custom_tpu_worker_with_a_compute_engine_master_is_accepted(workdir: Path) -> None:
    config = cfg(
        "  scaleTier: CUSTOM\n  masterType: n1-highcpu-16\n  workerType: cloud_tpu\n  workerCount: 1\n"
        "  workerConfig:\n    acceleratorConfig: {type: TPU_V3, count: 8}\n    tpuTfVersion: '2.11'\n"
    )
    ti = assert_accepted(invoke(config, ()))["trainingInput"]
    assert ti["workerConfig"]["acceleratorConfig"] == {"type": "TPU_V3", "count": "8"}


def test_cloud_tpu_with_a_gpu_is_refused(workdir: Path) -> None:
    config = cfg(
        "  scaleTier: CUSTOM\n  masterType: n1-highcpu-16\n  workerType: cloud_tpu\n  workerCount: 1\n"
        "  workerConfig:\n    acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}\n"
    )
    lines = error_lines(invoke(config, ()))
    assert lines == [
        f"ERROR: {CONFIG}:13: $.trainingInput.workerConfig.acceleratorConfig: a cloud_tpu machine takes TPU "
        "accelerators (TPU_V2, TPU_V3), not NVIDIA_TESLA_T4"
    ]


def test_unknown_tpu_machine_gets_one_line_that_says_how_to_ask_for_a_tpu(workdir: Path) -> None:
    config = cfg(
        "  scaleTier: CUSTOM\n  masterType: standard\n  workerType: cloud_tpu_v3\n  workerCount: 8\n"
    )
    lines = error_lines(invoke(config, ()))
    assert lines == [
        f"ERROR: {CONFIG}:10: $.trainingInput.workerType: machine type 'cloud_tpu_v3' is neither a Compute Engine "
        "type (like n1-standard-4) nor a legacy AI Platform type (like complex_model_m); for a TPU write "
        "workerType: cloud_tpu and choose the TPU version in workerConfig.acceleratorConfig (type TPU_V2 or "
        "TPU_V3, count 8)"
    ]


def test_misspelt_legacy_machine_gets_the_nearest_name(workdir: Path) -> None:
    config = cfg("  scaleTier: CUSTOM\n  masterType: complex_model_mm\n")
    (line,) = error_lines(invoke(config, ()))
    assert line.endswith("did you mean 'complex_model_m'?")


# -- whole values ----------------------------------------
# Values that look right but are not: a trailing newline, numbers beyond their API type, too many packages, and
# values that would reach a host name or a URL path. Each is refused by `training --dry-run` (exit 2, one line
# naming the file line or the flag), before anything is built or uploaded.
#
# Also: the rules are total over schema-invalid shapes, so every problem of the flags, the packages and the KMS key
# is reported next to the file's own.

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


# typed_view: the rules read only values of the right JSON type.


def test_a_valid_body_is_returned_as_is() -> None:
    body = {"jobId": "j", "trainingInput": {"region": "us-central1", "args": ["a"]}}
    assert typed_view(body) is body


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, {}),
        ([1], {}),
        ({"trainingInput": [1]}, {}),
        ({"trainingInput": {"masterConfig": "x", "region": "r"}}, {"trainingInput": {"region": "r"}}),
        ({"trainingInput": {"args": ["a", 5]}}, {"trainingInput": {}}),  # a bad item takes its list along
        (
            {"trainingInput": {"hyperparameters": {"params": [{"parameterName": "a", "minValue": "x"}]}}},
            {"trainingInput": {"hyperparameters": {"params": [{"parameterName": "a"}]}}},
        ),
        ({"labels": {"a": 5}}, {"labels": {"a": 5}}),  # labels stay: their rule speaks in label terms
    ],
)
def test_values_of_the_wrong_type_are_left_out(body: Any, expected: dict[str, Any]) -> None:
    before = repr(body)
    assert typed_view(body) == expected
    assert repr(body) == before  # the caller's body is not changed
