"""Where Cloud Storage is: the emulator, an endpoint override or Google, and whether requests go unsigned."""

from __future__ import annotations

import pytest

from mlsubmit.services.connection import storage_root_url


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("https://storage.googleapis.com/", False)),
        ({"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9023"}, ("http://127.0.0.1:9023/", True)),
        ({"STORAGE_EMULATOR_HOST": "localhost:9023"}, ("http://localhost:9023/", True)),
        (
            {
                "STORAGE_EMULATOR_HOST": "http://127.0.0.1:1",
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "https://x/",
            },
            ("http://127.0.0.1:1/", True),
        ),
        (
            {"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "https://psc.example/storage/v1/"},
            ("https://psc.example/", False),
        ),
        ({"CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": "http://127.0.0.1:5"}, ("http://127.0.0.1:5/", False)),
        ({"API_ENDPOINT_OVERRIDE": "https://gcs.example"}, ("https://gcs.example/", False)),
    ],
)
def test_storage_root_url(env: dict[str, str], expected: tuple[str, bool]) -> None:
    assert storage_root_url(env) == expected
