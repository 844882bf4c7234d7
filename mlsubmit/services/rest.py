"""googleapiclient-like Resources from Google's static discovery documents over ``services.wire``, raising its
``HttpError``; every path value is percent-encoded (``.``/``..`` refused): none changes the host, query or path."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urljoin

from mlsubmit.errors import ServiceAnswerError, UsageError
from mlsubmit.services.answers import error_fields, read_json
from mlsubmit.services.wire import Origin, TokenSource, Wire, origin_of

# api -> its static discovery document; the second line's are read by the preflight (docs/getting-jobs-to-start.md)
DOCUMENTS = {
    n.split(".")[0]: n for n in ("ml.v1", "aiplatform.v1", "logging.v2", "storage.v1", "cloudbuild.v1")
}
DOCUMENTS |= {n.split(".")[0]: n for n in ("serviceusage.v1", "iam.v1", "cloudkms.v1")}
DOCUMENTS["serviceusage.v1beta1"] = "serviceusage.v1beta1"
_TEMPLATE = re.compile(r"\{(\+?)([^}]+)\}")


@functools.cache
def document(api: str) -> dict[str, Any]:
    """The static discovery document of ``api`` shipped in google-api-python-client, read as a file."""
    spec = find_spec("googleapiclient")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root, "discovery_cache", "documents", f"{DOCUMENTS[api]}.json")
        if path.is_file():
            doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return doc
    raise RuntimeError(f"google-api-python-client lacks the static {DOCUMENTS[api]} discovery document")


_RESERVED_SAFE = "/:@!$&'()*+,;="


def _path_value(name: str, value: Any, reserved: bool) -> str:
    text = str(value)
    if reserved and any(seg in (".", "..") for seg in text.split("/")):
        raise UsageError(f"{name} {text!r}: '.' and '..' are not allowed in a resource name.")
    # {+name} is RFC 6570 reserved expansion (as googleapiclient sends it: `projects/example.com:p/jobs/j`), but
    # ?, # and % are always encoded, so no value can end the path or start a query or fragment.
    return quote(text, safe=_RESERVED_SAFE if reserved else "")


def expand(template: str, params: Mapping[str, Any]) -> str:
    """Fill a discovery path template: ``{+name}`` keeps ``/`` between segments, ``{name}`` encodes all."""

    def fill(match: re.Match[str]) -> str:
        plus, name = match.groups()
        if name not in params:
            raise TypeError(f"missing required parameter {name!r}")
        return _path_value(name, params[name], bool(plus))

    return _TEMPLATE.sub(fill, template)


class Request:
    """One prepared call; :meth:`execute` sends it (``num_retries`` is ignored: ``services.retry`` retries)."""

    def __init__(self, client: Client, method: str, uri: str, body: bytes | None) -> None:
        self._client = client
        self.method = method
        self.uri = uri
        self.body = body

    def execute(self, num_retries: int = 0) -> Any:
        """The decoded JSON answer; googleapiclient's HttpError for an error status."""
        return self._client.execute(self)


class Client:
    """What a Resource needs to send: the base URL, the shared wire, and the token for this origin only."""

    def __init__(
        self,
        base_url: str,
        wire: Wire,
        token: TokenSource | None,
        service_path: str = "",
        common: Mapping[str, Any] | None = None,
    ) -> None:
        self.common: Mapping[str, Any] = common or {}  # parameters every method takes (fields, ...)
        self.root_url = base_url if base_url.endswith("/") else base_url + "/"
        self.service_path = service_path
        self.base_url = self.root_url + service_path
        self.origin: Origin = origin_of(self.base_url)
        self.wire = wire
        self.token = token

    def request(self, method: Mapping[str, Any], kwargs: Mapping[str, Any]) -> Request:
        params = {**self.common, **method.get("parameters", {})}
        if unknown := set(kwargs) - set(params) - {"body"}:
            raise TypeError(f"{method.get('id')}: unexpected parameters {sorted(unknown)}")
        path = expand(method["path"], kwargs)
        query: list[tuple[str, str]] = []
        for name, value in kwargs.items():
            if name == "body" or value is None or params[name].get("location") != "query":
                continue
            values = value if isinstance(value, list | tuple) else [value]
            query += [(name, str(v).lower() if isinstance(v, bool) else str(v)) for v in values]
        if "alt" not in kwargs:
            query.append(("alt", "json"))
        uri = urljoin(self.base_url, path) + "?" + urlencode(query)
        body = kwargs.get("body")
        data = None if body is None else json.dumps(body).encode("utf-8")
        return Request(self, str(method["httpMethod"]), uri, data)

    def execute(
        self, request: Request, headers: Mapping[str, str] | None = None, deadline: float | None = None
    ) -> Any:
        response, content = self.wire.send(
            request.method,
            request.uri,
            body=request.body,
            headers=headers,
            origin=self.origin,
            token=self.token,
            deadline=deadline,
        )
        if not 200 <= response.status < 300:
            raise http_error(response, content, request.uri)
        if response.status == 204:
            return {}
        # Not JSON (empty, or a proxy's or captive portal's HTML page): the text goes back as it is, and the
        # caller's answer check (services.answers) names the call and what came back (exit 1).
        return read_json(content, f"{request.method} {request.uri.partition('?')[0]}")


def http_error(response: Any, content: bytes, uri: str) -> Exception:
    """The error to raise for an error answer: googleapiclient's ``HttpError`` (see ``_safe_http_error``)."""
    return _safe_http_error()(response, content, uri=uri)


@functools.lru_cache(maxsize=1)
def _safe_http_error() -> Callable[..., Exception]:
    """``HttpError`` with its reason from ``answers.error_fields`` (its own parser crashes on odd bodies)."""
    from googleapiclient.errors import HttpError

    class SafeHttpError(HttpError):  # type: ignore[misc]
        def _get_reason(self) -> str:
            try:
                payload = read_json(self.content, "an error answer")
            except ServiceAnswerError:
                payload = None
            _status, message = error_fields(payload)
            return (message or str(getattr(self.resp, "reason", "") or "")).strip()

    return SafeHttpError


class Resource:
    """A discovery resource: sub-resources and methods as attributes, like googleapiclient's Resource."""

    def __init__(self, client: Client, description: Mapping[str, Any]) -> None:
        self._client = client  # services.poll.drop_connections closes its wire's connections
        self._description = description

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        sub = self._description.get("resources", {}).get(name)
        if sub is not None:
            return lambda: Resource(self._client, sub)
        method = self._description.get("methods", {}).get(name)
        if method is not None:
            return lambda **kwargs: self._client.request(method, kwargs)
        raise AttributeError(name)


def client(api: str, endpoint: str, wire: Wire, token: TokenSource | None) -> Resource:
    """The root Resource of ``api`` at root URL ``endpoint`` (plus the document's ``servicePath``)."""
    doc = document(api)
    common = {k: v for k, v in doc.get("parameters", {}).items() if k.isidentifier()}
    return Resource(Client(endpoint, wire, token, str(doc.get("servicePath", "")), common), doc)
