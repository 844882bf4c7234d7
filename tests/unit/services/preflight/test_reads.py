"""The service account's resource name (services.preflight.reads)."""

from __future__ import annotations

from mlsubmit.services.preflight.reads import service_account_name


def test_service_account_resource_name_names_the_project_when_it_can() -> None:
    assert (
        service_account_name("a@p.iam.gserviceaccount.com")
        == "projects/p/serviceAccounts/a@p.iam.gserviceaccount.com"
    )
    assert service_account_name("1-compute@developer.gserviceaccount.com").startswith("projects/-/")
