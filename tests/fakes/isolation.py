"""The environment every test runs in (tests/conftest.py), and the work started before the first test
(tests/fakes/early.py): HOME, gcloud's config and ADC point at empty places so touching real credentials fails
loudly, and no variable of the caller's shell points anything at a real service."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

#: Variables of the caller's environment that would point a run at a real project, endpoint or interpreter.
UNSET = (
    "CLOUDSDK_CORE_PROJECT",
    "CLOUDSDK_COMPUTE_REGION",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_ML",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM",
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS",
    "GOOGLE_CLOUD_PROJECT",
    "STORAGE_EMULATOR_HOST",
    "MLSUBMIT_LOCAL_PYTHON",
    "MLSUBMIT_DEBUG",
)


def isolated_variables(home: Path) -> dict[str, str]:
    """The variables set for a test whose home is the empty folder ``home``."""
    return {
        "HOME": str(home),
        "CLOUDSDK_CONFIG": str(home / "gcloud"),
        "GOOGLE_APPLICATION_CREDENTIALS": str(home / "no-such-credentials.json"),
        "NO_GCE_CHECK": "True",  # google-auth must never probe the metadata server
        # the staging tests count package bytes: the run ledger's manifest copy in Cloud Storage (docs/cost.md)
        # is off but where a test turns it on (tests/acceptance/test_jobs_ledger.py)
        "MLSUBMIT_NO_GCS_MANIFEST": "1",
        # The suite speaks ml v1 as gcloud did, by choice: no shut-down notice
        # (tests/acceptance/test_default_target.py asserts it without this variable).
        "MLSUBMIT_TARGET": "ml",
    }


def isolated(environ: Mapping[str, str], home: Path) -> dict[str, str]:
    """``environ`` as a test sees it, its home being ``home``."""
    kept = {key: value for key, value in environ.items() if key not in UNSET}
    return {**kept, **isolated_variables(home)}
