"""Kubeconfig as kubectl reads it, exec credential plugins, and where a token may go
(mlsubmit.services.kubernetes; docs/kubernetes.md "Kubeconfig, as kubectl reads it")."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from mlsubmit.errors import ApiError, ExecPluginError, KubeApiError, ServiceAnswerError, UsageError
from mlsubmit.services.kubernetes.client import KubeClient
from mlsubmit.services.kubernetes.kubeconfig import load_context
from tests.fakes.hostile_http import HostileServer, answer
from tests.fakes.kubeconfig import write_kubeconfig

TOKEN = "kube-secret-token"
VERSION = json.dumps({"gitVersion": "v1.32.0"}).encode()


def config(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_two_files_merge_first_wins_per_name(tmp_path: Path) -> None:
    first = config(
        tmp_path / "a",
        {
            "current-context": "a",
            "clusters": [{"name": "shared", "cluster": {"server": "https://first.example:6443"}}],
            "users": [{"name": "u", "user": {"token": "t-first"}}],
            "contexts": [{"name": "a", "context": {"cluster": "shared", "user": "u", "namespace": "team-a"}}],
        },
    )
    second = config(
        tmp_path / "b",
        {
            "current-context": "b",
            "clusters": [
                {"name": "shared", "cluster": {"server": "https://second.example:6443"}},
                {"name": "other", "cluster": {"server": "https://other.example"}},
            ],
            "users": [{"name": "u", "user": {"token": "t-second"}}, {"name": "v", "user": {"token": "t-v"}}],
            "contexts": [{"name": "b", "context": {"cluster": "other", "user": "v"}}],
        },
    )
    env = {"KUBECONFIG": os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])}
    ctx = load_context(env)
    assert (ctx.name, ctx.server, ctx.namespace, ctx.token) == (
        "a",
        "https://first.example:6443",
        "team-a",
        "t-first",
    )
    other = load_context(env, context="b", namespace="ns-2")
    assert (other.server, other.namespace, other.token) == ("https://other.example", "ns-2", "t-v")
    with pytest.raises(UsageError, match=r"context .c. is in no kubeconfig .*\(contexts: a, b\)"):
        load_context(env, context="c")
    with pytest.raises(UsageError, match="--namespace: 'Bad_NS' is not a namespace name"):
        load_context(env, namespace="Bad_NS")


def test_inline_data_wins_over_files_and_bad_base64_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"from-file")
    user = {
        "client-certificate-data": base64.b64encode(b"CERT").decode(),
        "client-key-data": base64.b64encode(b"KEY").decode(),
    }
    path = write_kubeconfig(
        tmp_path / "kc",
        "https://k.example",
        user=user,
        cluster={"certificate-authority": "ca.crt"},
    )
    ctx = load_context({"KUBECONFIG": str(path)})
    assert (ctx.ca_data, ctx.client_cert, ctx.client_key) == (b"from-file", b"CERT", b"KEY")
    write_kubeconfig(
        path, "https://k.example", user={"client-key-data": "!!", "client-certificate-data": "QQ=="}
    )
    with pytest.raises(UsageError, match=r"users\[test-user\]\.client-key-data: not base64"):
        load_context({"KUBECONFIG": str(path)})


@pytest.mark.parametrize(
    ("user", "cluster", "message"),
    [
        (
            {"auth-provider": {"name": "gcp"}},
            {},
            r"users\[test-user\]\.auth-provider: auth providers are gone",
        ),
        (
            {"token": "t"},
            {"proxy-url": "http://proxy:3128"},
            r"clusters\[test-cluster\]\.proxy-url: .*not supported",
        ),
        ({"client-certificate-data": "QQ=="}, {}, "client-certificate and client-key go together"),
        (
            {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1alpha1"}},
            {},
            "v1alpha1 is not supported",
        ),
    ],
)
def test_what_mlsubmit_cannot_use_is_one_line_naming_the_key(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any], message: str
) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://k.example", user=user, cluster=cluster)
    with pytest.raises(UsageError, match=message):
        load_context({"KUBECONFIG": str(path)})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100 + "]" * 100, r"kc:1: values nest deeper than 32 levels"),
        ("[" * 50_000 + "]" * 50_000, r"kc:1: (values nest deeper|not a valid kubeconfig)"),
        ("clusters: [" + "1," * 250_000 + "]", "holds more than 200000 values"),
        ("clusters: [\n  - {name: a\n", r"kc:\d+: not a valid kubeconfig \(YAML"),
        ("- just\n- a list\n", "a kubeconfig is a mapping"),
    ],
)
def test_a_hostile_or_broken_kubeconfig_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "kc").write_text(text)
    with pytest.raises(UsageError, match=message):
        load_context({"KUBECONFIG": str(tmp_path / "kc")})


def test_plain_http_goes_only_to_loopback(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "http://10.1.2.3:8080")
    with pytest.raises(UsageError, match="plain http to a host that is not loopback"):
        KubeClient(load_context({"KUBECONFIG": str(path)}), {})


def test_a_redirect_is_not_followed_and_the_token_stays_home(tmp_path: Path) -> None:
    with HostileServer(answer(200, VERSION), host="127.0.0.2") as elsewhere:
        moved = answer(302, b"", {"Location": f"{elsewhere.url}version"})
        with HostileServer(moved) as server:
            path = write_kubeconfig(tmp_path / "kc", server.url.rstrip("/"))
            client = KubeClient(load_context({"KUBECONFIG": str(path)}), {})
            with pytest.raises(ApiError) as err:
                client.call("GET", "/version")
            client.close()
        assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
        assert elsewhere.requests == []
        assert "redirect, which is not followed" in str(err.value) and TOKEN not in str(err.value)


def test_a_token_file_is_read_on_each_request(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("first-token\n")
    with HostileServer(answer(200, VERSION)) as server:
        path = write_kubeconfig(tmp_path / "kc", server.url.rstrip("/"), user={"tokenFile": "token"})
        client = KubeClient(load_context({"KUBECONFIG": str(path)}), {})
        client.call("GET", "/version")
        (tmp_path / "token").write_text("rotated-token\n")
        client.call("GET", "/version")
        client.close()
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer first-token",
        "Bearer rotated-token",
    ]


PLUGIN = """#!{python}
import json, os, sys, time
with open({count!r}, "a") as fh:
    fh.write("run\\n")
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
mode = sys.argv[1]
if mode == "fail":
    print("gke-gcloud-auth-plugin: not logged in; run gcloud auth login", file=sys.stderr)
    sys.exit(1)
if mode == "hang":
    time.sleep(60)
stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + int(sys.argv[2])))
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                  "status": {{"token": "plugin-token", "expirationTimestamp": stamp}}}}))
"""


def plugin_config(
    tmp_path: Path, server: str, *args: str, version: str = "client.authentication.k8s.io/v1"
) -> Path:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN.format(python=sys.executable, count=str(tmp_path / "runs")))
    script.chmod(0o755)
    user = {
        "exec": {
            "apiVersion": version,
            "command": "./plugin.py",
            "args": list(args),
            "interactiveMode": "Never",
        }
    }
    return write_kubeconfig(tmp_path / "kc", server, user=user)


def runs(tmp_path: Path) -> int:
    path = tmp_path / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize(
    "version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]
)
def test_an_exec_plugin_token_is_kept_until_it_expires(tmp_path: Path, version: str) -> None:
    with HostileServer(answer(200, VERSION)) as server:
        path = plugin_config(tmp_path, server.url.rstrip("/"), "ok", "3600", version=version)
        client = KubeClient(load_context({"KUBECONFIG": str(path)}), {"PATH": os.environ["PATH"]})
        client.call("GET", "/version")
        client.call("GET", "/version")
        assert runs(tmp_path) == 1
        expired = plugin_config(tmp_path, server.url.rstrip("/"), "ok", "0")  # already within the margin
        client = KubeClient(load_context({"KUBECONFIG": str(expired)}), {"PATH": os.environ["PATH"]})
        client.call("GET", "/version")
        client.call("GET", "/version")
        client.close()
    assert runs(tmp_path) == 3
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer plugin-token"}


def test_a_failing_plugin_is_one_line_with_its_reason(tmp_path: Path) -> None:
    path = plugin_config(tmp_path, "https://k.example", "fail")
    client = KubeClient(load_context({"KUBECONFIG": str(path)}), {"PATH": os.environ["PATH"]})
    with pytest.raises(ExecPluginError, match="exited with status 1: gke-gcloud-auth-plugin: not logged in"):
        client.call("GET", "/version")


def test_a_hanging_plugin_is_stopped_in_time(tmp_path: Path) -> None:
    path = plugin_config(tmp_path, "https://k.example", "hang")
    env = {"PATH": os.environ["PATH"], "MLSUBMIT_KUBE_EXEC_TIMEOUT": "1"}
    client = KubeClient(load_context({"KUBECONFIG": str(path)}), env)
    started = time.monotonic()
    with pytest.raises(ExecPluginError, match="gave no credential within 1s"):
        client.call("GET", "/version")
    assert time.monotonic() - started < 10


# --- TLS: the cluster's CA and a client certificate, inline ------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    if not any((Path(p) / "openssl").exists() for p in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("pki")
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    (d / "named.ext").write_text("subjectAltName=DNS:kubernetes.default.svc\n")
    for name, ext in (
        ("server", ["-extfile", "san.ext"]),
        ("named", ["-extfile", "named.ext"]),
        ("client", []),
    ):
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={name}",
            cwd=d,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            *ext,
            cwd=d,
        )
    return d


@dataclass
class TlsServer:
    url: str
    seen: list[str | None]  # the client certificate's common name of each request


@pytest.fixture
def tls_server(pki: Path) -> Iterator[TlsServer]:
    """An HTTPS server on 127.0.0.1 with the test CA's certificate that requires a client certificate."""
    yield from _tls_server(pki, "server")


@pytest.fixture
def named_tls_server(pki: Path) -> Iterator[TlsServer]:
    """The same, with a certificate for kubernetes.default.svc only (not for 127.0.0.1)."""
    yield from _tls_server(pki, "named")


def _tls_server(pki: Path, cert: str) -> Iterator[TlsServer]:
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            peer = self.connection.getpeercert()  # type: ignore[attr-defined]
            seen.append(dict(x[0] for x in peer["subject"]).get("commonName") if peer else None)
            self.send_response(200)
            self.send_header("Content-Length", str(len(VERSION)))
            self.end_headers()
            self.wfile.write(VERSION)

        def log_message(self, *args: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / f"{cert}.crt", pki / f"{cert}.key")
    context.load_verify_locations(pki / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield TlsServer(f"https://127.0.0.1:{httpd.server_address[1]}", seen)
    finally:
        httpd.shutdown()
        httpd.server_close()


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_inline_ca_and_client_certificate_over_tls(tmp_path: Path, pki: Path, tls_server: TlsServer) -> None:
    user = {"client-certificate-data": b64(pki / "client.crt"), "client-key-data": b64(pki / "client.key")}
    path = write_kubeconfig(
        tmp_path / "kc",
        tls_server.url,
        user=user,
        cluster={"certificate-authority-data": b64(pki / "ca.crt")},
    )
    client = KubeClient(load_context({"KUBECONFIG": str(path)}), {})
    assert client.call("GET", "/version")["gitVersion"] == "v1.32.0"
    client.close()
    assert tls_server.seen == ["client"]
    untrusted = write_kubeconfig(
        tmp_path / "kc2", tls_server.url, user=user
    )  # the system's CAs do not know it
    client = KubeClient(load_context({"KUBECONFIG": str(untrusted)}), {})
    with pytest.raises(ssl.SSLCertVerificationError):
        client.call("GET", "/version")
    client.close()


def test_an_exec_plugin_may_give_a_client_certificate(
    tmp_path: Path, pki: Path, tls_server: TlsServer
) -> None:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {
            "clientCertificateData": (pki / "client.crt").read_text(),
            "clientKeyData": (pki / "client.key").read_text(),
        },
    }
    (tmp_path / "credential.json").write_text(json.dumps(credential))
    script = tmp_path / "cert-plugin"
    script.write_text(f"#!/bin/sh\ncat {tmp_path / 'credential.json'}\n")
    script.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(script)}}
    path = write_kubeconfig(
        tmp_path / "kc", tls_server.url, user=user, cluster={"certificate-authority": str(pki / "ca.crt")}
    )
    client = KubeClient(load_context({"KUBECONFIG": str(path)}), {"PATH": os.environ["PATH"]})
    assert client.call("GET", "/version")["gitVersion"] == "v1.32.0"
    client.close()
    assert tls_server.seen == ["client"]


def test_tls_server_name_checks_the_certificate_for_that_name(
    tmp_path: Path, pki: Path, named_tls_server: TlsServer
) -> None:
    user = {"client-certificate-data": b64(pki / "client.crt"), "client-key-data": b64(pki / "client.key")}
    trust = {"certificate-authority-data": b64(pki / "ca.crt")}
    plain = write_kubeconfig(tmp_path / "kc", named_tls_server.url, user=user, cluster=trust)
    client = KubeClient(load_context({"KUBECONFIG": str(plain)}), {})
    with pytest.raises(ssl.SSLCertVerificationError):  # the certificate is not for 127.0.0.1
        client.call("GET", "/version")
    client.close()
    named = write_kubeconfig(
        tmp_path / "kc2",
        named_tls_server.url,
        user=user,
        cluster={**trust, "tls-server-name": "kubernetes.default.svc"},
    )
    client = KubeClient(load_context({"KUBECONFIG": str(named)}), {})
    assert client.call("GET", "/version")["gitVersion"] == "v1.32.0"
    client.close()


@pytest.mark.parametrize(
    "body", [b"[" * 200_000 + b"]" * 200_000, b'{"kind": "Status", "code": 1' + b"0" * 5000 + b"}"]
)
def test_a_hostile_answer_is_one_line_not_a_crash(tmp_path: Path, body: bytes) -> None:
    # Nesting deep enough to exhaust the parser's stack, or a 5,000-digit number: bounded as every API answer is.
    for status in (200, 500):
        with HostileServer(answer(status, body)) as server:
            path = write_kubeconfig(tmp_path / "kc", server.url.rstrip("/"))
            fast_retries = {"MLSUBMIT_RETRY_INITIAL_DELAY": "0.01"}  # a 500 to a GET is tried again
            client = KubeClient(load_context({"KUBECONFIG": str(path)}), fast_retries)
            with pytest.raises((ServiceAnswerError, KubeApiError)) as err:
                client.call("GET", "/version")
            client.close()
        assert len(str(err.value).splitlines()) == 1 and len(str(err.value)) < 400


def test_a_plugin_printing_hostile_json_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "deep.py"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write('[' * 200000 + ']' * 200000)\n")
    script.chmod(0o755)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "./deep.py",
            "interactiveMode": "Never",
        }
    }
    path = write_kubeconfig(tmp_path / "kc", "https://k.example", user=user)
    client = KubeClient(load_context({"KUBECONFIG": str(path)}), {"PATH": os.environ["PATH"]})
    with pytest.raises(ExecPluginError, match="nested too deep or with an out-of-range number"):
        client.call("GET", "/version")
