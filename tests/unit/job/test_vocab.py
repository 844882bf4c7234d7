"""The shared vocabulary: roles, tiers, chief/master, Cloud Storage URLs, the package-path check."""

from __future__ import annotations

from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.job.vocab import (
    EVALUATOR,
    MASTER,
    PARAMETER_SERVER,
    ROLES,
    TIER_POOLS,
    gcs_url_problem,
    primary_task_name,
    replica_counts,
    split_gcs_uri,
)

IMAGE = {"masterConfig": {"imageUri": "gcr.io/p/i:1"}}


def test_roles_spell_every_field_flag_and_task_name() -> None:
    assert [r.key for r in ROLES] == ["master", "worker", "parameter_server", "evaluator"]
    assert [(r.type_field, r.count_field, r.config_field) for r in ROLES] == [
        ("masterType", None, "masterConfig"),
        ("workerType", "workerCount", "workerConfig"),
        ("parameterServerType", "parameterServerCount", "parameterServerConfig"),
        ("evaluatorType", "evaluatorCount", "evaluatorConfig"),
    ]
    assert [r.task for r in ROLES] == ["chief", "worker", "ps", "evaluator"]
    assert [r.pool for r in ROLES] == [0, 1, 2, 3]
    assert MASTER.type_flag == "--master-machine-type"
    assert PARAMETER_SERVER.type_flag == "--parameter-server-machine-type"
    assert EVALUATOR.type_flag is None


@pytest.mark.parametrize(
    ("training_input", "expected"),
    [
        ({}, "chief"),
        ({"runtimeVersion": "1.15"}, "master"),
        ({"runtimeVersion": "2.0"}, "master"),
        ({"runtimeVersion": "2.1"}, "chief"),
        ({"runtimeVersion": "2.11"}, "chief"),
        ({"runtimeVersion": "1.15", "useChiefInTfConfig": True}, "master"),  # no effect without a container
        (IMAGE, "master"),
        ({**IMAGE, "useChiefInTfConfig": True}, "chief"),
        ({**IMAGE, "useChiefInTfConfig": False}, "master"),
        ({"runtimeVersion": ["2", "0"]}, "chief"),  # schema-invalid shapes do not crash
        ({"masterConfig": "gcr.io/p/i"}, "chief"),
    ],
)
def test_primary_task_name(training_input: dict[str, Any], expected: str) -> None:
    assert primary_task_name(training_input) == expected


@pytest.mark.parametrize(
    ("training_input", "expected"),
    [
        ({}, {"master": 1}),
        ({"scaleTier": "BASIC_GPU"}, {"master": 1}),
        ({"scaleTier": "STANDARD_1"}, {"master": 1, "worker": 4, "parameter_server": 3}),
        ({"scaleTier": "standard_1"}, {"master": 1, "worker": 4, "parameter_server": 3}),
        ({"scaleTier": "PREMIUM_1"}, {"master": 1, "worker": 19, "parameter_server": 11}),
        (
            {"scaleTier": "CUSTOM", "workerCount": "2", "parameterServerCount": 1, "evaluatorCount": "0"},
            {"master": 1, "worker": 2, "parameter_server": 1},
        ),
        ({"scaleTier": "CUSTOM", "workerCount": "two"}, {"master": 1}),
        ({"scaleTier": "BASIC_TPU"}, {"master": 1}),
    ],
)
def test_replica_counts_expand_the_tier(training_input: dict[str, Any], expected: dict[str, int]) -> None:
    assert replica_counts(training_input) == expected


def test_tier_pools_and_replica_counts_agree() -> None:
    for tier, pools in TIER_POOLS.items():
        assert replica_counts({"scaleTier": tier}) == {role: n for role, (n, _m, _a) in pools.items()}


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("gs://my-bucket/out", None),
        ("gs://a.b.c/x", None),
        ("/local/out", "must be a Cloud Storage URL"),
        ("gs:///x", "has no bucket name"),
        ("gs://My_Bucket/x", "is invalid"),
        ("gs://googlebucket/x", "is not allowed"),
        ("gs://my-bucket/out\n", "line break"),
        ("gs://my-bucket\n/out", "line break"),
    ],
)
def test_gcs_url_problem(url: str, problem: str | None) -> None:
    found = gcs_url_problem(url, "jobDir")
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_split_gcs_uri_uses_the_same_bucket_rule() -> None:
    assert split_gcs_uri("gs://b-1/a/b") == ("b-1", "a/b")
    for bad in ("gs://Bad_Bucket/x", "gs://googly/x", "gs://b-1/x\n", "gs://b-1\x1b[31m/x"):
        with pytest.raises(UsageError) as raised:
            split_gcs_uri(bad)
        assert "\n" not in str(raised.value) and "\x1b" not in str(raised.value)


# --- every enumeration once: the click choices are vocab's tuples, job.schema.json's enums equal them ----------


def schema_enum(*path: str) -> list[str]:
    from mlsubmit.job.jobfile import job_schema

    node: Any = job_schema()["$defs"]
    for key in path:
        node = node[key]
    return list(node["enum"])


def test_the_schema_enums_are_the_vocabulary() -> None:
    from mlsubmit.job.vocab import (
        FRAMEWORKS,
        ML_V1_ACCELERATORS,
        RESERVATION_AFFINITIES,
        SCALE_TIERS,
        SCHEDULING_STRATEGIES,
        VERTEX_ONLY_ACCELERATORS,
    )

    assert schema_enum("TrainingInput", "properties", "scaleTier") == list(SCALE_TIERS)
    assert schema_enum("AcceleratorConfig", "properties", "type") == [
        *ML_V1_ACCELERATORS,
        *VERTEX_ONLY_ACCELERATORS,
    ]
    assert schema_enum("Scheduling", "properties", "strategy") == list(SCHEDULING_STRATEGIES)
    affinity = schema_enum("ReservationAffinity", "properties", "reservationAffinityType")
    assert sorted(affinity) == sorted(RESERVATION_AFFINITIES.values())
    assert schema_enum("Vertex", "properties", "framework") == list(FRAMEWORKS)


def test_the_schema_names_every_roles_fields() -> None:
    from mlsubmit.job.jobfile import job_schema

    fields = set(job_schema()["$defs"]["TrainingInput"]["properties"])
    for role in ROLES:
        assert {role.type_field, role.config_field, role.count_field or role.type_field} <= fields, role.key


def click_choices(command_path: list[str], option: str) -> list[str]:
    import click

    from mlsubmit.cli import cli

    command: Any = cli
    for name in command_path:
        command = command.get_command(click.Context(command), name)
    (param,) = [p for p in command.params if option in getattr(p, "opts", ())]
    assert isinstance(param.type, click.Choice)
    return list(param.type.choices)


@pytest.mark.parametrize(
    ("command", "option", "expected"),
    [
        (["training"], "--target", "TARGETS"),
        (["validate"], "--target", "TARGETS"),
        (["jobs", "wait"], "--target", "TARGETS"),
        (["local", "train"], "--target", "TARGETS"),
        (["training"], "--framework", "FRAMEWORKS"),
        (["preflight"], "--framework", "FRAMEWORKS"),
        (["training"], "--builder", "BUILDERS"),
        (["local", "train"], "--builder", "BUILDERS"),
        (["training"], "--staging-layout", "STAGING_LAYOUTS"),
        (["export"], "--format", "EXPORT_FORMATS"),
        (["training"], "--reservation-affinity", "RESERVATION_AFFINITIES"),
    ],
)
def test_the_click_choices_are_the_vocabulary(command: list[str], option: str, expected: str) -> None:
    from mlsubmit.job import vocab

    assert click_choices(command, option) == list(getattr(vocab, expected))


def test_the_scheduling_strategy_flag_spells_the_api_values() -> None:
    from mlsubmit.job.vocab import SCHEDULING_STRATEGIES, enum_spelling

    choices = click_choices(["training"], "--scheduling-strategy")
    assert choices == ["standard", "spot", "flex-start"]
    assert [enum_spelling(c) for c in choices] == list(SCHEDULING_STRATEGIES)


def test_the_other_framework_and_target_tables_cover_the_vocabulary() -> None:
    from typing import get_args

    from mlsubmit.images.bases import DEFAULT_VERSIONS
    from mlsubmit.job.vocab import EXPORT_FORMATS, FRAMEWORKS, TARGETS
    from mlsubmit.migrate import checkup
    from mlsubmit.targets.translate import Kind
    from mlsubmit.targets.vertex_images import PREBUILT_IMAGES

    assert list(DEFAULT_VERSIONS) == list(FRAMEWORKS)
    assert list(checkup._PYPI) == list(FRAMEWORKS)
    assert {image.framework for image in PREBUILT_IMAGES} == set(FRAMEWORKS)
    assert get_args(Kind) == (*TARGETS, *EXPORT_FORMATS)
