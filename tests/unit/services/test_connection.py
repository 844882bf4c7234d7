"""services.connection: where Cloud Storage is (the emulator, an override or Google, signed or not), and tokens and
endpoints that reach a host name or a URL path are checked before use (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlsubmit.errors import UsageError
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


TOKEN_CASES = [
    ("ya29.a0AfB_byC-token_1234", None),
    ("", "is empty"),
    ("a\nb", "more than one line"),
    ("a\rb", "more than one line"),
    ("a b", "position 2"),
    ("ab\u00e9", "position 3"),
    ("ab\x00", "position 3"),
    ("x" * (16 * 1024 + 1), "longer than"),
]


ENDPOINT_CASES = [
    ("X", "https://ml.googleapis.com/", None),
    ("X", "http://127.0.0.1:8080/ml", None),
    ("STORAGE_EMULATOR_HOST", "localhost:9023", None),
    ("X", "localhost:9023", "http:// or https://"),
    ("X", "ftp://h/", "http:// or https://"),
    ("X", "https:///path", "with a host"),
    ("X", "http://h:70000/", "with a host"),
    ("X", "http://u:p@h/", "user name or password"),
    ("X", "http://h/?q", "query"),
    ("X", "http://h/#f", "query"),
    ("X", "http://h/\n", "visible ASCII"),
]


@pytest.mark.parametrize(("token", "problem"), TOKEN_CASES)
def test_token_problem(token: str, problem: str | None) -> None:
    from mlsubmit.services.connection import token_problem

    found = token_problem(token)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
        assert token[:3] not in found or not token


def test_a_token_is_read_once_stripped_and_checked(tmp_path: Path) -> None:
    from mlsubmit.services.connection import read_access_token

    token_file = tmp_path / "t"
    token_file.write_text(" tok-123456789 \n")
    assert read_access_token({}, str(token_file)) == "tok-123456789"
    assert read_access_token({"CLOUDSDK_AUTH_ACCESS_TOKEN": "env-tok\n"}, None) == "env-tok"
    assert read_access_token({}, None) is None
    with pytest.raises(UsageError, match="not shown") as caught:
        read_access_token({"CLOUDSDK_AUTH_ACCESS_TOKEN": "secret-part\nsecond"}, None)
    assert "secret" not in str(caught.value) and "second" not in str(caught.value)


@pytest.mark.parametrize(("name", "url", "problem"), ENDPOINT_CASES)
def test_endpoint_problem(name: str, url: str, problem: str | None) -> None:
    from mlsubmit.services.connection import endpoint_problem

    found = endpoint_problem(name, url)
    assert found is None if problem is None else (found is not None and problem in found and url not in found)
