"""A lean Kubernetes API client over :class:`mlsubmit.services.wire.Wire` (docs/kubernetes.md "Why our own
client"): ``http`` only to loopback, the kubeconfig's TLS settings and client certificates, tokens from ``token``,
``tokenFile`` (re-read per request) or the exec plugin (run again once after a 401)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from mlsubmit.errors import KubeApiError, ServiceAnswerError, UsageError
from mlsubmit.job.imageref import is_loopback
from mlsubmit.proc.processes import temporary_directory
from mlsubmit.services import retry
from mlsubmit.services.answers import read_json
from mlsubmit.services.kubernetes.exec_plugin import EXPIRY_MARGIN_S, Credential, run_plugin
from mlsubmit.services.kubernetes.kubeconfig import KubeContext, read_token_file
from mlsubmit.services.wire import Wire, deadline_from_env, origin_of

MAX_LOG_BYTES = 8 * 1024 * 1024


def server_problem(server: str) -> str | None:
    """Why mlsubmit will not talk to ``server`` (http to a host that is not loopback), or None."""
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"server {server[:120]!r} is not an http(s) URL with a host"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return (
            f"server {server[:120]} is plain http to a host that is not loopback: the token would cross the "
            "network in clear text; use https"
        )
    if parts.query or parts.fragment:
        return f"server {server[:120]!r} has a query or fragment"
    return None


def _load_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a certificate chain from files only: a private folder, removed at once."""
    with temporary_directory("mlsubmit-kube-") as folder:  # the janitor removes it should we be killed
        paths = []
        for name, data in (("client.crt", cert), ("client.key", key)):
            path = os.path.join(folder, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            paths.append(path)
        try:
            context.load_cert_chain(paths[0], paths[1])
        except ssl.SSLError as err:
            raise UsageError(f"the client certificate and key do not load ({err.reason or err}).") from None


class KubeClient:
    """JSON calls to one cluster's API server, signed as the kubeconfig's user (module docstring)."""

    def __init__(
        self, ctx: KubeContext, env: Mapping[str, str], *, notify: Callable[[str], None] | None = None
    ) -> None:
        if problem := server_problem(ctx.server):
            raise UsageError(f"{ctx.source}: context {ctx.name}: {problem}.")
        self.ctx = ctx
        self.env = env
        # GETs are tried again here; a create only in KubeJobs.create, which reads back first
        self.policy = retry.RetryPolicy.from_env(env, retry.API_POLICY)
        self.notify = notify
        self.origin = origin_of(ctx.server)
        self._plugin_said: Credential | None = None
        self.wire = Wire(
            deadline=deadline_from_env(env), tls=lambda: self.ssl_context, server_name=ctx.tls_server_name
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self.wire.close()

    @functools.cached_property
    def ssl_context(self) -> ssl.SSLContext:
        """The cluster's TLS context, made on the first connection."""
        ctx = self.ctx
        context = ssl.create_default_context()
        if ctx.ca_data:
            try:
                context.load_verify_locations(cadata=ctx.ca_data.decode("ascii", "replace"))
            except ssl.SSLError as err:
                raise UsageError(
                    f"{ctx.source}: the cluster's certificate-authority does not load ({err.reason})."
                ) from None
        if ctx.insecure:  # only when the kubeconfig says insecure-skip-tls-verify: true
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        cert, key = ctx.client_cert, ctx.client_key
        if cert is None and self.ctx.token is None and (got := self._plugin()) and got.token is None:
            cert, key = got.client_cert, got.client_key
        if cert is not None and key is not None:
            _load_pair(context, cert, key)
        return context

    def _plugin(self) -> Credential | None:
        """The exec plugin's credential (None: no plugin), the plugin run on first use and once it expires."""
        got, spec = self._plugin_said, self.ctx.exec
        stale = got is None or (got.expires is not None and got.expires - EXPIRY_MARGIN_S <= time.time())
        if spec is not None and stale:
            got = self._plugin_said = run_plugin(spec, self.env)
        return got

    def _token(self) -> str | None:
        if self.ctx.token:
            return self.ctx.token
        if self.ctx.token_file:
            return read_token_file(self.ctx.token_file, f"{self.ctx.source}: context {self.ctx.name}")
        return got.token if (got := self._plugin()) else None

    def raw(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        max_bytes: int | None = None,
        accept: str = "application/json",
    ) -> bytes:
        """Send one call; the answer's bytes, or :class:`KubeApiError` with the server's Status message."""
        q = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.ctx.server + path + (f"?{urlencode(q)}" if q else "")  # path: escaped by path_of
        data = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            token = self._token()
            response, answer = self.wire.send(
                method,
                url,
                body=data,
                headers={"accept": accept},
                origin=self.origin,
                token=(lambda: token) if token else None,  # noqa: B023  (read at once, in this iteration)
                max_bytes=max_bytes,
            )
            if response.status == 401 and attempt == 1 and self.ctx.exec is not None:
                self._plugin_said = None  # client-go: an expired plugin token gets one fresh try
                continue
            break
        if 200 <= response.status < 300:
            return answer
        raise _error(method, path, response.status, answer)

    def call(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        """:meth:`raw` decoded as a JSON object; a GET that fails transiently is tried again as ``policy`` allows, a
        create never is here (the backend reads back first)."""
        send = functools.partial(self.raw, method, path, **kw)
        if method == "GET":
            answer = retry.call(send, "reading", self.policy, notify=self.notify, reason=str)
        else:
            answer = send()
        data = read_json(answer, f"{method} {path}")  # bounded: numbers, depth (services/answers.py)
        if isinstance(data, str):
            raise ServiceAnswerError(f"{method} {path}: the API server's answer is not JSON.")
        if not isinstance(data, dict):
            raise ServiceAnswerError(f"{method} {path}: the API server answered with no JSON object.")
        return data


def _error(method: str, path: str, status: int, answer: bytes) -> KubeApiError:
    reason, message = "", ""
    with contextlib.suppress(ServiceAnswerError):
        data = read_json(answer, f"{method} {path}")
        if isinstance(data, dict):
            reason, message = str(data.get("reason") or ""), str(data.get("message") or "")
    if 300 <= status < 400:
        message = (
            "the API server answered with a redirect, which is not followed (the token stays with the server)"
        )
    text = f"{method} {path}: HTTP {status}" + (f" {reason}" if reason else "")
    return KubeApiError(text + (f": {message[:300]}" if message else ""), status, reason)


def path_of(*parts: str) -> str:
    """``/apis/kubeflow.org/v1/namespaces/NS/tfjobs/NAME`` from its parts, each escaped whole."""
    return "/" + "/".join(quote(p, safe="") if i else p for i, p in enumerate(parts) if p)
