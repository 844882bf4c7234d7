"""services.settings: flags beat the environment, read in one place; factories build each service once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.services.retry import PollPolicy, RetryPolicy
from mlsubmit.services.settings import Settings
from mlsubmit.services.vertex import COLLECTION_SCHEMAS

ENV = {
    "CLOUDSDK_CORE_PROJECT": "env-project",
    "CLOUDSDK_COMPUTE_REGION": "env-region",
    "CLOUDSDK_AUTH_ACCESS_TOKEN": "env-token-123456",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "http://127.0.0.1:1/ml",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": "http://127.0.0.1:1/vertex/",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": "http://127.0.0.1:1/logging/",
}


def test_the_environment_applies_when_no_flag_is_given() -> None:
    settings = Settings.from_flags(ENV, target="vertex")
    assert settings.project() == "env-project"
    assert settings.region == "env-region"
    assert settings.endpoint("aiplatform") == "http://127.0.0.1:1/vertex/"
    assert settings.endpoint("ml") == "http://127.0.0.1:1/ml/"
    assert settings.hint_flags == " --target vertex --region env-region"


def test_flags_beat_the_environment(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("file-token-123456\n", encoding="utf-8")
    settings = Settings.from_flags(
        ENV,
        target="vertex",
        project="flag-project",
        region="flag-region",
        access_token_file=str(token),
        api_endpoint="http://127.0.0.1:2/flag",
    )
    assert settings.project() == "flag-project"
    assert settings.region == "flag-region"
    assert settings.credentials()[0].token == "file-token-123456"
    assert settings.endpoint("aiplatform") == "http://127.0.0.1:2/flag/"
    # --api-endpoint is the target API's: logging keeps its own override
    assert settings.endpoint("logging") == "http://127.0.0.1:1/logging/"


class Planned:
    """What ``Settings.for_job`` reads from a ``submit.Plan``."""

    def __init__(self, service: str, region: str | None) -> None:
        self.service, self.region = service, region


def test_the_jobs_region_replaces_the_command_lines() -> None:
    settings = Settings.from_flags({**ENV, "CLOUDSDK_COMPUTE_REGION": ""}, target="vertex")
    assert settings.region is None and settings.hint_flags == " --target vertex"
    moved = Settings.for_job(Planned("vertex", "europe-west4"), ENV)
    assert moved.region == "europe-west4" and moved.hint_flags == " --target vertex --region europe-west4"


def test_the_jobs_region_wins_over_a_bad_region_variable_it_replaced() -> None:
    """The merge already chose the job's region over CLOUDSDK_COMPUTE_REGION: the variable is not read again."""
    env = {**ENV, "CLOUDSDK_COMPUTE_REGION": "not a region/.."}
    assert Settings.for_job(Planned("vertex", "us-central1"), env).region == "us-central1"
    with pytest.raises(UsageError, match="CLOUDSDK_COMPUTE_REGION"):
        Settings.from_flags(env, target="vertex")


def test_settings_close_their_wire_when_the_command_ends() -> None:
    with Settings.from_flags(ENV) as settings:
        wire = settings.wire()
        wire.connections[("http", "127.0.0.1", 1)] = _Closing()  # type: ignore[index]
    assert _Closing.closed and wire.connections == {}


class _Closing:
    closed = False

    def close(self) -> None:
        _Closing.closed = True


def test_ml_suggests_no_extra_flags_and_needs_no_region() -> None:
    settings = Settings.from_flags({"CLOUDSDK_AUTH_ACCESS_TOKEN": "t" * 10, "CLOUDSDK_CORE_PROJECT": "p"})
    assert (
        settings.target == "ml"
        and settings.hint_flags == ""
        and settings.endpoint("ml").startswith("https://ml.")
    )


def test_vertex_without_a_region_is_a_usage_error() -> None:
    settings = Settings.from_flags({"CLOUDSDK_CORE_PROJECT": "p"}, target="vertex")
    with pytest.raises(UsageError, match="--target vertex needs a region"):
        settings.endpoint("aiplatform")


def test_no_token_means_application_default_credentials() -> None:
    assert Settings.from_flags({}).access_token() is None


def test_an_unknown_target_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--target tpu"):
        Settings.from_flags({}, target="tpu")


def test_retry_and_poll_policies_come_from_the_environment() -> None:
    settings = Settings.from_flags({"MLSUBMIT_RETRY_INITIAL_DELAY": "0.5", "MLSUBMIT_POLL_INTERVAL": "2"})
    assert settings.retry == RetryPolicy(initial=0.5)
    assert settings.storage_retry.initial == 0.5 and settings.storage_retry.deadline == 300.0
    assert settings.poll == PollPolicy.fixed(2.0)
    assert Settings.from_flags({}).retry == RetryPolicy()


def test_factories_build_each_service_once_on_one_wire() -> None:
    env = {
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_COMPUTE_REGION": "us-r1",
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "t",
    }
    settings = Settings.from_flags(env, target="vertex")
    backend = settings.jobs_backend(collection="customJobs")
    assert backend is settings.jobs_backend(collection="customJobs")
    assert (backend.project, backend.region) == ("p", "us-r1")
    assert settings.logging() is settings.logging()
    wires = {id(s._client.wire) for s in (backend.service, settings.logging(), settings.storage())}
    assert wires == {id(settings.wire())}  # one pool of connections for the whole command


def test_vertex_jobs_commands_see_custom_and_tuning_jobs_alike() -> None:
    settings = Settings.from_flags(
        {"CLOUDSDK_CORE_PROJECT": "p", "CLOUDSDK_COMPUTE_REGION": "us-r1", "CLOUDSDK_AUTH_ACCESS_TOKEN": "t"},
        target="vertex",
    )
    both = settings.jobs_backend()
    assert (both.project, both.region) == ("p", "us-r1")
    assert both.custom.collection == "customJobs"
    assert both.tuning.collection == "hyperparameterTuningJobs"
    assert COLLECTION_SCHEMAS[both.tuning.collection] == "GoogleCloudAiplatformV1HyperparameterTuningJob"


# -- values that reach a host name or a URL path (docs/security.md) -------------------------------


@pytest.mark.parametrize(
    ("env", "flags", "said"),
    [
        ({"CLOUDSDK_COMPUTE_REGION": "127.0.0.2:80?"}, {"target": "vertex"}, "CLOUDSDK_COMPUTE_REGION"),
        ({}, {"target": "vertex", "region": "us-central1\n"}, "--region"),
        ({}, {"project": "a/b"}, "--project"),
        ({"CLOUDSDK_CORE_PROJECT": "a?b"}, {}, "CLOUDSDK_CORE_PROJECT"),
        ({}, {"api_endpoint": "javascript:x"}, "--api-endpoint"),
        (
            {"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "gs://x"},
            {},
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
        ),
    ],
)
def test_from_flags_refuses_values_that_reach_urls(
    env: dict[str, str], flags: dict[str, Any], said: str
) -> None:
    with pytest.raises(UsageError, match=said):
        Settings.from_flags(env, **flags)


def test_a_region_for_ml_from_the_environment_is_not_a_host_and_not_checked() -> None:
    assert Settings.from_flags({"CLOUDSDK_COMPUTE_REGION": "weird value"}).region == "weird value"
    with pytest.raises(UsageError, match="region"):
        Settings.for_job(Planned("ml", "a.b"), {})


def test_an_adc_project_that_cannot_be_a_path_segment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlsubmit.services import connection

    monkeypatch.setattr(connection, "credentials", lambda token: (object(), "p/../x"))
    with pytest.raises(UsageError, match="Application Default Credentials"):
        Settings.from_flags({}).project()


def test_only_the_checked_token_reaches_the_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mlsubmit.services import connection

    seen: list[str | None] = []
    monkeypatch.setattr(connection, "credentials", seen.append)
    token_file = tmp_path / "t"
    token_file.write_text("file-token-1234\n")
    Settings.from_flags(
        {"CLOUDSDK_AUTH_ACCESS_TOKEN": "env-token"}, access_token_file=str(token_file)
    ).credentials()
    assert seen == ["file-token-1234"]


def test_without_an_injected_http_every_service_shares_one_lean_wire() -> None:
    from mlsubmit.services import rest

    env = {
        "CLOUDSDK_CORE_PROJECT": "p",
        "CLOUDSDK_AUTH_ACCESS_TOKEN": "tok",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML": "http://127.0.0.1:9/",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "http://127.0.0.2:9/storage/v1/",
        "MLSUBMIT_HTTP_TIMEOUT": "7",
    }
    settings = Settings.from_flags(env)
    ml = settings.service("ml")
    storage = settings.storage()
    assert isinstance(ml, rest.Resource) and isinstance(storage, rest.Resource)
    assert ml._client.wire is storage._client.wire is settings.wire()
    assert settings.wire().deadline == 7
    assert ml._client.origin == ("http", "127.0.0.1", 9) and ml._client.token is not None
    assert ml._client.token() == "tok"
    assert storage._client.base_url == "http://127.0.0.2:9/storage/v1/"


def test_an_emulator_gets_no_token() -> None:
    settings = Settings.from_flags(
        {"CLOUDSDK_AUTH_ACCESS_TOKEN": "tok", "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9"}
    )
    assert settings.storage()._client.token is None


def test_application_default_credentials_are_refreshed_only_when_invalid() -> None:
    from mlsubmit.services.connection import token_source

    class Creds:
        valid = False
        token = None
        refreshed = 0

        def refresh(self, request: Any) -> None:
            self.refreshed += 1
            self.valid, self.token = True, f"fresh-{self.refreshed}"

    creds = Creds()
    token = token_source(creds)
    assert (token(), token(), creds.refreshed) == ("fresh-1", "fresh-1", 1)
    creds.valid = False
    assert token() == "fresh-2"
