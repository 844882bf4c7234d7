"""What never ships (docs/security.md): a trainer folder holding a service-account key, a ``.env``, a PEM key,
a cloud CLI's folder and the very token file mlsubmit was given. None of it reaches the sdist, the image's build
context (read back from the loopback Cloud Storage the build was given) or ``migrate``'s output, and the user is
told which files were left out, without a byte of them."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlsubmit.sdist import build
from tests.fakes.cli import run_cli, run_cli_process
from tests.fakes.cloudbuild_api import FakeCloudBuild, build_env
from tests.fakes.containers import Storage
from tests.fakes.trainers import write_trainer

MARK = b"NEVER-SHIP-7f3a"  # in every secret; must be in no byte that leaves the machine
SA_KEY = {
    "type": "service_account",
    "project_id": "p",
    "private_key_id": "abc",
    "private_key": "-----BEGIN PRIVATE KEY-----\n" + MARK.decode() + "\n-----END PRIVATE KEY-----\n",
    "client_email": "trainer@p.iam.gserviceaccount.com",
}


def plant_secrets(trainer: Path) -> dict[str, str]:
    """Secrets of every kind in the trainer folder; their paths relative to its parent, and why they are secret."""
    (trainer / "sa-key.json").write_text(json.dumps(SA_KEY, indent=2))  # by content, whatever its name
    (trainer / "data").mkdir(exist_ok=True)
    (trainer / "data" / "creds.txt").write_bytes(  # a PEM key under an innocent name
        b"-----BEGIN RSA PRIVATE KEY-----\n" + MARK + b"\n-----END RSA PRIVATE KEY-----\n"
    )
    (trainer / ".env").write_bytes(b"API_KEY=" + MARK + b"\n")
    (trainer / ".env.production").write_bytes(b"DB_PASSWORD=" + MARK + b"\n")
    (trainer / ".env.example").write_text("API_KEY=\n")  # a template: ships
    (trainer / "home" / ".aws").mkdir(parents=True)
    (trainer / "home" / ".aws" / "credentials").write_bytes(b"[default]\naws_secret_access_key=" + MARK)
    (trainer / "home" / ".config" / "gcloud").mkdir(parents=True)
    (trainer / "home" / ".config" / "gcloud" / "active_config").write_bytes(MARK)
    (trainer / ".token").write_bytes(b"tok-" + MARK + b"\n")  # the --access-token-file: caught by path only
    (trainer / "model.json").write_text(json.dumps({"type": "linear", "layers": 3}))  # a JSON that ships
    (trainer / ".env.\x1b]0;owned\x07").write_bytes(b"K=" + MARK)  # its name is shown escaped, never raw
    return {
        "trainer/sa-key.json": "a service-account key",
        "trainer/data/creds.txt": "a PEM private key",
        "trainer/.env": "an environment file",
        "trainer/.env.production": "an environment file",
        "trainer/home/.aws/credentials": ".aws",
        "trainer/home/.config/gcloud/active_config": ".config/gcloud",
        "trainer/.token": "a credential file mlsubmit reads",
        "'trainer/.env.\\x1b]0;owned\\x07'": "an environment file",
    }


def archive_bytes(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Every file in ``data`` (a .tar.gz), and in each .tar.gz inside it, as (name, bytes)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is None:
                continue
            content = handle.read()
            yield member.name, content
            if member.name.endswith(".tar.gz"):
                for name, inner in archive_bytes(content):
                    yield f"{member.name}!{name}", inner


def test_a_submit_with_its_image_ships_no_secret_and_says_what_it_left_out(
    basic_trainer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = plant_secrets(basic_trainer)
    with FakeCloudBuild(project="p") as server:
        for name, value in build_env(server).items():
            monkeypatch.setenv(name, value)
        result = run_cli(
            ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
             "gs://stage", "--target", "vertex", "--region", "us-central1", "--build-image", "--builder",
             "cloud-build", "--output-image-uri", f"127.0.0.1:{server.port}/p/mlsubmit/trainer",
             "--access-token-file", "trainer/.token"]
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        objects = {uri: bytes(obj.data) for uri, obj in server.objects.items()}
        tokens = {r.headers.get("authorization") for r in server.requests_matching(None, r".")}
    assert tokens - {None} == {"Bearer tok-" + MARK.decode()}  # the token file was used, yet not shipped
    contexts = [data for uri, data in objects.items() if uri.endswith(".tar.gz")]
    assert contexts, objects.keys()
    shipped = {name: data for data in contexts for name, data in archive_bytes(data)}
    assert any(name.endswith("trainer/task.py") for name in shipped), shipped.keys()
    assert any(name.endswith("trainer/model.json") for name in shipped)
    assert any(name.endswith("trainer/.env.example") for name in shipped)
    for uri, data in objects.items():
        plain = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        assert MARK not in data and MARK not in plain, uri
    for name, data in shipped.items():
        assert MARK not in data, name
    warning = [line for line in result.stderr.splitlines() if "secrets never ship" in line]
    assert len(warning) == 1, result.stderr
    for rel, why in secrets.items():
        assert rel in warning[0] and why in warning[0], (rel, warning[0])
    assert MARK.decode() not in result.stderr + result.stdout
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr


def test_a_dry_run_and_migrate_leave_the_secrets_out_too(basic_trainer: Path, tmp_path: Path) -> None:
    secrets = plant_secrets(basic_trainer)
    (basic_trainer / "cluster.yaml").write_bytes(b"users:\n- user: {token: " + MARK + b"}\n")
    (basic_trainer / "cfg").mkdir()
    (basic_trainer / "cfg" / "properties").write_bytes(
        b"[core]\naccount = " + MARK + b"\n"
    )  # CLOUDSDK_CONFIG's folder
    kubeconfig = {  # files and folders mlsubmit and the libraries it uses read
        "KUBECONFIG": f"/nonexistent:{basic_trainer / 'cluster.yaml'}",
        "CLOUDSDK_CONFIG": str(basic_trainer / "cfg"),
    }
    dry = run_cli(
        ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
         "gs://stage", "--dry-run", "--access-token-file", "trainer/.token"], env=kubeconfig
    )  # fmt: skip
    assert dry.exit_code == 0, dry.stderr
    assert all(rel in dry.stderr for rel in secrets), dry.stderr
    out = tmp_path / "migrated"
    migrated = run_cli(
        ["migrate", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--staging-bucket",
         "gs://stage", "--output-dir", str(out), "--project", "p"], env=kubeconfig
    )  # fmt: skip
    assert migrated.exit_code in (0, 1), migrated.stderr
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".tar.gz") for p in written), written
    for path in written:
        data = path.read_bytes()
        assert MARK not in data, path
        if path.name.endswith(".tar.gz"):
            for name, content in archive_bytes(data):
                assert MARK not in content, (path, name)
    assert "trainer/sa-key.json" in migrated.stderr and "trainer/cluster.yaml" in migrated.stderr
    assert "trainer/cfg/properties" in migrated.stderr


def test_a_projects_own_backend_build_is_filtered_the_same_way(tmp_path: Path) -> None:
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    plant_secrets(trainer)
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='trainer', version='1.0', packages=['trainer'],\n"
        "      package_data={'trainer': ['*', '.*', 'data/*', 'home/.aws/*']})\n"
    )
    (tmp_path / "MANIFEST.in").write_text("recursive-include trainer *\n")
    from mlsubmit.sdist import never_ship  # (imported here: the other tests run on any mlsubmit)

    never_ship.add_credential_file(trainer / ".token")  # as `--access-token-file trainer/.token` does
    sdist = build.build_sdist(trainer, tmp_path / "dist")
    names = [
        name for name, data in archive_bytes(sdist.read_bytes()) if MARK not in data or pytest.fail(name)
    ]
    assert any(name.endswith("trainer/__init__.py") for name in names)
    assert not any(name.endswith(("sa-key.json", "/.env", "creds.txt")) for name in names), names


def test_a_built_package_holding_a_key_is_refused_before_an_image_is_planned(basic_trainer: Path) -> None:
    wheel = basic_trainer.parent / "helper-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("helper/__init__.py", "")
        zipped.writestr("helper/key.json", json.dumps(SA_KEY))
    result = run_cli(
        ["training", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--packages", str(wheel),
         "--staging-bucket", "gs://stage", "--target", "vertex", "--region", "us-central1", "--build-image",
         "--dry-run"], env={"CLOUDSDK_CORE_PROJECT": "p"}
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert "helper/key.json (a service-account key)" in result.stderr and str(wheel) in result.stderr
    assert "Traceback" not in result.stderr and MARK.decode() not in result.stderr


SEARCHING_TASK = """\
import os, sys
here = os.path.dirname(__file__)
found = [os.path.join(d, f) for d, _, fs in os.walk(here) for f in fs]
print("replica sees", sorted(os.path.relpath(p, here) for p in found))
"""


@pytest.mark.containers
def test_the_pushed_images_layers_hold_no_secret(
    container_storage: Storage, base_image: str, loopback_registry: str, tmp_path: Path
) -> None:
    trainer = write_trainer(tmp_path, SEARCHING_TASK)
    secrets = plant_secrets(trainer)
    repository = f"{loopback_registry}/mlsubmit/secrets-left-out"  # a name no other test pushes to
    built = run_cli_process(
        ["local", "train", "--package-path", str(trainer), "--module-name", "trainer.task", "--builder",
         "buildah", "--build-image", "--output-image-uri", repository, "--base-image", base_image,
         "--job-dir", str(tmp_path / "out")],
        cwd=tmp_path, env={**container_storage.env, "GOOGLE_APPLICATION_CREDENTIALS": str(trainer / ".token")},
        timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert "task.py" in built.stdout and "sa-key.json" not in built.stdout  # what the replica saw installed
    assert all(rel in built.stderr for rel in secrets), built.stderr
    pinned = re.search(
        rf"Image built and pushed: {re.escape(repository)}@(sha256:[0-9a-f]{{64}})", built.stderr
    )
    assert pinned, built.stderr
    # Every layer of the pushed image, read back from the registry: no byte of any secret.
    name = repository.split("/", 1)[1]
    base_url = f"http://{loopback_registry}/v2/{name}"
    accept = (
        "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
    )
    manifest = json.loads(_get(f"{base_url}/manifests/{pinned.group(1)}", accept))
    layers = [layer["digest"] for layer in manifest["layers"]]
    seen_task = False
    for digest in layers:
        blob = _get(f"{base_url}/blobs/{digest}")
        plain = gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob
        assert MARK not in plain, digest
        seen_task = seen_task or b'print("replica sees"' in plain
    assert seen_task  # the trainer's own code is in a layer: the search read the right bytes


def _get(url: str, accept: str | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return bytes(answer.read())


def test_migrate_refuses_a_built_package_holding_a_key(basic_trainer: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "helper-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("helper/__init__.py", "")
        zipped.writestr("helper/.env", "API_KEY=" + MARK.decode())
    out = tmp_path / "migrated"
    result = run_cli(
        ["migrate", "j1", "--config", "legacy.yaml", "--package-path", "trainer", "--packages", str(wheel),
         "--staging-bucket", "gs://stage", "--output-dir", str(out), "--project", "p"]
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert f"--packages {wheel} holds what never ships: helper/.env (an environment file)" in result.stderr
    assert not out.exists() or not any(out.rglob("*.whl"))
