"""Tables for the fakes' pure helpers: the filter language, the discovery schema check, body normalisation."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.compare import normalize_custom_job_body, normalize_job_body
from tests.fakes.filters import FilterError, compile_filter
from tests.fakes.schema_check import check_body

JOB = {
    "jobId": "census_1",
    "state": "RUNNING",
    "displayName": "census",
    "labels": {"team": "ml", "env": "prod"},
    "createTime": "2024-03-01T10:00:00.123Z",
    "trainingInput": {"workerCount": "4", "args": ["--a", "b"], "enableWebAccess": False},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("state=RUNNING", True),
        ("state=QUEUED", False),
        ('state="RUNNING"', True),
        ("state!=RUNNING", False),
        ("labels.team=ml", True),
        ('labels.team="ml" AND labels.env=dev', False),
        ("labels.team=ml labels.env=prod", True),  # implicit AND
        ("labels.team=xx OR labels.env=prod", True),
        ("NOT labels.team=xx", True),
        ("-labels.team=ml", False),
        ("(state=QUEUED OR state=RUNNING) AND jobId:census*", True),
        ("jobId:cen*", True),
        ("jobId:rnn*", False),
        ("jobId:sus", True),
        ("labels:team", True),
        ("labels.missing=x", False),
        ("labels.missing!=x", True),
        ("display_name=census", True),  # snake_case reaches camelCase keys
        ("training_input.worker_count>=4", True),
        ("training_input.worker_count>10", False),
        ("training_input.args=b", True),  # any element of a list
        ("training_input.enable_web_access=false", True),
        ('createTime>"2024-03-01T09:59:59Z"', True),
        ('createTime<"2024-03-01T10:00:00.1Z"', False),
    ],
)
def test_filter_language(text: str, expected: bool) -> None:
    assert compile_filter(text)(JOB) is expected


def test_filter_compares_severity_by_rank() -> None:
    assert compile_filter("severity>=WARNING")({"severity": "ERROR"})
    assert not compile_filter("severity>=WARNING")({"severity": "INFO"})


@pytest.mark.parametrize("text", ["state=", "(state=RUNNING", "state=RUNNING)", "= x"])
def test_filter_syntax_errors(text: str) -> None:
    with pytest.raises(FilterError):
        compile_filter(text)


@pytest.mark.parametrize(
    ("training", "message"),
    [
        ({"workerCount": "x"}, "Invalid value at 'job.training_input.worker_count' (TYPE_INT64), \"x\""),
        ({"workerCount": 1.5}, "(TYPE_INT64), 1.5"),
        ({"scaleTier": "basic"}, "Invalid value at 'job.training_input.scale_tier' (TYPE_ENUM), \"basic\""),
        ({"enableWebAccess": "true"}, "(TYPE_BOOL)"),
        ({"args": "--epochs 3"}, "'job.training_input.args': expected a list"),
        ({"args": [3]}, "Invalid value at 'job.training_input.args[0]' (TYPE_STRING), 3"),
        ({"masterConfig": "n1"}, "Invalid value at 'job.training_input.master_config'"),
        ({"scheduling": {"maxWaitTime": "30m"}}, "Illegal duration format"),
        ({"hyperparameters": {"params": [{"minValue": "low"}]}}, "params[0].min_value' (TYPE_DOUBLE)"),
        ({"hyperparameters": {"maxTrials": "x"}}, "max_trials' (TYPE_INT32)"),
        (
            {"masterConfig": {"nope": 1}},
            "Invalid JSON payload received. Unknown name \"nope\" at 'job.training_input.master_config': "
            "Cannot find field.",
        ),
    ],
)
def test_schema_check_messages(training: dict[str, Any], message: str) -> None:
    errors, _ = check_body("ml.v1", "GoogleCloudMlV1__Job", {"jobId": "j", "trainingInput": training}, "job")
    assert len(errors) == 1
    assert message in errors[0][1]


def test_schema_check_accepts_valid_values_and_normalises() -> None:
    body = {
        "jobId": "j",
        "labels": {"a": "b"},
        "createTime": "2024-01-01T00:00:00Z",
        "trainingInput": {
            "worker_count": 3,
            "parameterServerCount": "2",
            "scheduling": {"maxRunningTime": "3600.5s", "priority": 5},
            "hyperparameters": {
                "maxTrials": "10",
                "params": [{"parameterName": "lr", "minValue": 0.1, "maxValue": 1}],
            },
            "jobDir": None,
        },
    }
    errors, normal = check_body("ml.v1", "GoogleCloudMlV1__Job", body, "job")
    assert errors == []
    assert "createTime" not in normal  # "Output only." fields are accepted and dropped
    assert normal["trainingInput"]["workerCount"] == "3"
    assert normal["trainingInput"]["parameterServerCount"] == "2"
    assert normal["trainingInput"]["hyperparameters"]["maxTrials"] == 10
    assert "jobDir" not in normal["trainingInput"]


GCLOUD_BODY = {
    "jobId": "j2",
    "labels": {"team": "ml"},
    "trainingInput": {
        "args": ["--epochs", "3"],
        "enableWebAccess": False,
        "masterConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}},
        "masterType": "n1-standard-8",
        "packageUris": [
            "gs://bkt/j2/63414a431cfc2c056ad79ae9c67e50fe0a6a3cc006910983028b8453c335b5f1/trainer-0.0.0.tar.gz"
        ],
        "pythonModule": "trainer.task",
        "region": "us-central1",
        "scaleTier": "CUSTOM",
        "workerCount": "2",
        "workerType": "n1-standard-4",
    },
}


def test_normalize_equates_spellings_with_the_same_meaning() -> None:
    ours = {
        "jobId": "j2",
        "labels": {"team": "ml"},
        "trainingInput": {
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-8",
            "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}, "diskConfig": {}},
            "workerType": "n1-standard-4",
            "workerCount": 2,
            "parameterServerCount": "0",
            "packageUris": ["gs://bkt/j2/" + "0" * 64 + "/trainer-0.0.0.tar.gz"],
            "pythonModule": "trainer.task",
            "region": "us-central1",
            "args": ["--epochs", "3"],
            "useChiefInTfConfig": False,
            "hyperparameters": None,
        },
    }
    assert normalize_job_body(ours) == normalize_job_body(GCLOUD_BODY)
    assert normalize_job_body(GCLOUD_BODY)["trainingInput"]["packageUris"] == [
        "gs://bkt/j2/<sha256>/trainer-0.0.0.tar.gz"
    ]
    assert "enableWebAccess" not in normalize_job_body(GCLOUD_BODY)["trainingInput"]


@pytest.mark.parametrize(
    "change",
    [
        {"args": ["--epochs", "4"]},
        {"args": ["3", "--epochs"]},  # order matters
        {"workerCount": "3"},
        {"enableWebAccess": True},
        {"packageUris": ["gs://bkt/j2/other/trainer-0.0.0.tar.gz"]},
        {"bogusField": "x"},  # unknown keys survive, so a stray field is a difference
        {"scheduling": {"maxRunningTime": "3600s"}},
    ],
)
def test_normalize_keeps_real_differences(change: dict[str, Any]) -> None:
    other = {**GCLOUD_BODY, "trainingInput": {**GCLOUD_BODY["trainingInput"], **change}}
    assert normalize_job_body(other) != normalize_job_body(GCLOUD_BODY)


def test_normalize_hash_placeholder_is_optional_and_durations_canonical() -> None:
    raw = normalize_job_body(GCLOUD_BODY, hash_placeholder=False)
    assert raw["trainingInput"]["packageUris"] == GCLOUD_BODY["trainingInput"]["packageUris"]
    a = {"jobId": "j", "trainingInput": {"scheduling": {"maxRunningTime": "3600.000s"}}}
    b = {"jobId": "j", "trainingInput": {"scheduling": {"max_running_time": "3600s"}}}
    assert normalize_job_body(a) == normalize_job_body(b)
    assert normalize_job_body({"jobId": "j", "labels": {"a": ""}})["labels"] == {"a": ""}  # map values kept


def test_normalize_custom_job_keeps_empty_pool_positions() -> None:
    body = {
        "displayName": "x",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1"},
                    "replicaCount": 1,
                    "diskSpec": {"bootDiskSizeGb": 100},
                },
                {},
                {"machineSpec": {"machineType": "n1"}, "replicaCount": "2"},
            ],
            "enableWebAccess": False,
        },
    }
    normal = normalize_custom_job_body(body)
    pools = normal["jobSpec"]["workerPoolSpecs"]
    assert pools[1] == {} and pools[0]["replicaCount"] == "1" and pools[2]["replicaCount"] == "2"
    assert pools[0]["diskSpec"]["bootDiskSizeGb"] == 100
    assert "enableWebAccess" not in normal["jobSpec"]
