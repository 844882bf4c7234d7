"""A ``--packages`` archive holding what never ships (mlsubmit.sdist.never_ship) is refused on a plain submit too,
for every target, before anything is uploaded or created (issue 26): the image path and ``migrate`` refused it
already."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.acceptance.test_hostile_secrets import SA_KEY
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.cli import run_cli
from tests.fakes.cloudbuild_api import build_env


def sdist_with_env(folder: Path) -> Path:
    archive = folder / "helper-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (("helper-1.0/helper/__init__.py", b""), ("helper-1.0/.env", b"API_KEY=abc\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def wheel_with_key(folder: Path) -> Path:
    wheel = folder / "helper-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("helper/__init__.py", "")
        zipped.writestr("helper/key.json", json.dumps(SA_KEY))
    return wheel


@pytest.mark.parametrize(
    ("make", "said"),
    [(sdist_with_env, "helper-1.0/.env (an environment file)"),
     (wheel_with_key, "helper/key.json (a service-account key)")],
)  # fmt: skip
@pytest.mark.parametrize("target", ["vertex", "ml"])
def test_a_plain_submit_refuses_a_package_holding_a_secret_before_any_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object, said: str, target: str
) -> None:
    assert callable(make)
    package = make(tmp_path)
    with FakeGoogleApis(project="p") as server:
        for key, value in build_env(server).items():
            monkeypatch.setenv(key, value)
        result = run_cli(
            ["training", "j1", "--target", target, "--region", "us-central1", "--packages", str(package),
             "--module-name", "helper.task", "--staging-bucket", "gs://stage", "--runtime-version", "2.11",
             "--python-version", "3.7"]
        )  # fmt: skip
        sent = server.requests_matching(None, r".")
    assert result.exit_code == 2, result.stderr
    assert f"--packages {package} holds what never ships: {said}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert sent == []  # nothing uploaded, nothing created, not even a lookup
