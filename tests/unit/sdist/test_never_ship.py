"""The one rule of what never ships (mlsubmit.sdist.never_ship), table by table: by name, by content, as a
credential file mlsubmit reads; and what looks close but ships."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlsubmit.sdist import never_ship


@pytest.mark.parametrize(
    ("rel", "secret"),
    [
        ("trainer/.env", True),
        ("trainer/.env.production", True),
        ("trainer/.envrc", True),
        ("trainer/.env.example", False),
        ("trainer/.env.sample", False),
        ("trainer/config/prod.env", True),
        ("trainer/environment.yml", False),
        ("trainer/env.py", False),
        ("trainer/.netrc", True),
        ("trainer/.pypirc", True),
        ("trainer/.git-credentials", True),
        ("trainer/keys/id_ed25519", True),
        ("trainer/keys/id_ed25519.pub", False),
        ("trainer/store.p12", True),
        ("trainer/home/.aws/config", True),
        ("trainer/home/.kube/config", True),
        ("trainer/home/.ssh/known_hosts", True),
        ("trainer/home/.config/gcloud/configurations/config_default", True),
        ("trainer/home/.config/other/settings", False),
        ("trainer/gcloud/credentials.db", True),
        ("trainer/application_default_credentials.json", True),
        ("trainer/data/aws.csv", False),
    ],
)
def test_by_name(rel: str, secret: bool) -> None:
    assert (never_ship.reason_by_name(rel) is not None) is secret


KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (json.dumps({"type": "service_account", "private_key": KEY}, indent=2), "a service-account key"),
        (
            json.dumps({"type": "authorized_user", "refresh_token": "1//x"}),
            "a Google authorized user credential",
        ),
        (
            json.dumps({"type": "external_account", "audience": "//iam"}),
            "a Google external account credential",
        ),
        (KEY, "a PEM private key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n", "a PEM private key"),
        ("-----BEGIN EC PRIVATE KEY-----\nMHc\n", "a PEM private key"),
        ("ya29.a0AfB_byC1234567890abcdefghijklmnop\n", "an OAuth access token"),
        (json.dumps({"type": "linear", "layers": 3}), None),
        (json.dumps({"type": "service_account"})[:-1], None),  # not JSON: not a credential file
        ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", None),
        ("-----BEGIN PUBLIC KEY-----\nMIIB\n", None),
        ("print('ya29.not-a-token-file-because-it-is-code')\n", None),
        ("", None),
    ],
)
def test_by_content(content: str, why: str | None) -> None:
    assert never_ship.reason_by_content(content.encode()) == why


def test_the_credential_files_mlsubmit_reads_by_path_and_by_hard_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    token = package / "token.txt"
    token.write_text("opaque-token\n")
    linked = package / "copy.txt"
    linked.hardlink_to(token)
    adc = package / "adc.json"
    adc.write_text("{}")
    config = package / "gcloud-config"
    config.mkdir()
    (config / "properties").write_text("[core]\n")
    monkeypatch.setattr(never_ship, "_credential_files", set())
    never_ship.add_credential_file(token)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(config))
    credentials = never_ship.Credentials(within=package)
    for path in (token, linked, adc, config / "properties"):
        info = path.stat()
        assert credentials.holds(path, (info.st_dev, info.st_ino)), path
    assert not credentials.holds(package / "__init__.py")


def test_a_folder_given_as_a_credential_file_or_holding_the_package_leaves_nothing_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "task.py").write_text("")
    monkeypatch.setattr(never_ship, "_credential_files", set())
    never_ship.add_credential_file(tmp_path)  # --access-token-file DIR: refused when read, not a file here
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    assert not never_ship.Credentials(within=package).holds(package / "task.py")


def test_a_prebuilt_archive_is_checked_member_by_member_in_bounded_memory(tmp_path: Path) -> None:
    # A zip of 1,500 members that inflate to 64 KiB each is 2 MB on disk; holding every member's head before
    # checking any would take about 100 MB.
    import tracemalloc
    import zipfile

    archive = tmp_path / "trainer-0.1.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for n in range(1500):
            zipped.writestr(f"trainer/blob{n}.bin", bytes(64 * 1024))
        zipped.writestr("trainer/key.json", json.dumps({"type": "service_account", "private_key": "x"}))
    tracemalloc.start()
    try:
        with pytest.raises(never_ship.PackagingError, match=r"key\.json"):
            never_ship.refuse_archive(archive)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024
