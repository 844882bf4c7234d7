"""A Kubernetes API server on 127.0.0.1 for the ``--target kubernetes`` tests: ``kmock``'s stateful emulator (PyPI)
in a thread of its own, with what it lacks added here, and a controller stand-in that plays the training operator.

Added to kmock: ``kind`` on list bodies, label selectors and ``limit``/``continue`` paging on lists, pod logs with
``timestamps``/``sinceTime``/``previous``, SelfSubjectAccessReview (``allow_create``), namespaces (``namespaces``)
and a record of every request (``calls``: method, path with query, JSON body) to compare with kubectl's.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

kmock = pytest.importorskip("kmock", reason="kmock (PyPI) is the Kubernetes API emulator of these tests")
import aiohttp.web  # noqa: E402  (kmock's own dependency)

TFJOBS = "kubeflow.org/v1/tfjobs"
PYTORCHJOBS = "kubeflow.org/v1/pytorchjobs"
PODS = "v1/pods"
CORE_RESOURCES = [
    {
        "name": "namespaces",
        "singularName": "namespace",
        "namespaced": False,
        "kind": "Namespace",
        "verbs": ["get", "list"],
    },
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": ["get", "list"]},
    {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
]
KINDS = {"tfjobs": "TFJob", "pytorchjobs": "PyTorchJob", "pods": "Pod", "localqueues": "LocalQueue"}


@dataclass
class Call:
    """One request as the server saw it."""

    method: str
    path: str  # with the query string
    body: Any
    authorization: str | None = None
    raw: bytes = b""  # the body as sent (kubectl sends built-in kinds as protobuf: ``body`` is then None)


class _Emulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock's emulator with the additions of the module docstring."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.calls: list[Call] = []
        self.namespaces: set[str] = {"default"}
        self.allow_create = True
        self.logs: dict[tuple[str, str, bool], list[tuple[str, str]]] = {}  # (ns, pod, previous) -> lines
        self.drop_next_create_answer = False
        self.faults: list[tuple[str, str, int]] = []  # (method, path part, status): answered once each, first
        self.served: dict[
            str, list[dict[str, Any]]
        ] = {}  # "kubeflow.org/v1" -> its APIResourceList resources

    async def _handle(self, request: Any) -> aiohttp.web.StreamResponse:
        method = str(request.method.value if hasattr(request.method, "value") else request.method).upper()
        url = request.url
        path = url.path
        auth = request.headers.get("Authorization") or request.headers.get("authorization")
        raw = bytes(request.body or b"")
        self.calls.append(Call(method, url.path_qs, request.data if request.body else None, auth, raw))
        for fault in list(self.faults):
            if fault[0] == method and fault[1] in url.path_qs:
                self.faults.remove(fault)
                return _status(fault[2], "ServiceUnavailable", "injected")
        parts = path.strip("/").split("/")
        if method == "GET" and parts == [
            "api",
            "v1",
        ]:  # core discovery (kmock's fails without declared kinds)
            return aiohttp.web.json_response(
                {
                    "apiVersion": "v1",
                    "kind": "APIResourceList",
                    "groupVersion": "v1",
                    "resources": CORE_RESOURCES,
                }
            )
        if method == "GET" and len(parts) == 3 and parts[0] == "apis" and "watch" not in request.params:
            group_version = "/".join(parts[1:])
            if group_version not in self.served:
                return _status(404, "NotFound", "the server could not find the requested resource")
            return aiohttp.web.json_response(
                {
                    "apiVersion": "v1",
                    "kind": "APIResourceList",
                    "groupVersion": group_version,
                    "resources": self.served[group_version],
                }
            )
        if method == "GET" and path.endswith("/log") and len(parts) == 7 and parts[:2] == ["api", "v1"]:
            return self._serve_log(parts[3], parts[5], request.params)
        if method == "POST" and path.endswith("/selfsubjectaccessreviews"):
            body = dict(request.data or {})
            body["status"] = {
                "allowed": self.allow_create,
                **({} if self.allow_create else {"reason": "no RBAC rule"}),
            }
            return aiohttp.web.json_response(body, status=201)
        if method == "GET" and len(parts) == 4 and parts[:3] == ["api", "v1", "namespaces"]:
            if parts[3] in self.namespaces:
                return aiohttp.web.json_response(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": parts[3]}}
                )
            return _status(404, "NotFound", f'namespaces "{parts[3]}" not found')
        if request.action == kmock.action.LIST and method == "GET":
            return await self._serve_paged(request)
        if request.action == kmock.action.CREATE and self.drop_next_create_answer:
            self.drop_next_create_answer = False
            await super()._handle(request)  # the object is made ...
            raise ConnectionResetError("answer lost")  # ... and the answer never arrives
        return await super()._handle(request)

    def _serve_log(self, ns: str, pod: str, params: Any) -> aiohttp.web.StreamResponse:
        previous = params.get("previous") == "true"
        key = (ns, pod, previous)
        if key not in self.logs:
            return _status(
                400, "BadRequest", f'previous terminated container "tensorflow" in pod "{pod}" not found'
            )
        since = params.get("sinceTime")
        lines = [(s, m) for s, m in self.logs[key] if not since or s[:19] >= since[:19]]
        text = "".join(f"{s} {m}\n" if params.get("timestamps") == "true" else f"{m}\n" for s, m in lines)
        return aiohttp.web.Response(text=text, content_type="text/plain")

    async def _serve_paged(self, request: Any) -> aiohttp.web.StreamResponse:
        async with self._lock:
            items = [
                obj.raw
                for (res, ns, _name), obj in self.objects.items()
                if res == request.resource
                and (request.namespace is None or ns == request.namespace)
                and not obj.deleted
            ]
        selector = request.params.get("labelSelector") or ""
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            items = [o for o in items if ((o.get("metadata") or {}).get("labels") or {}).get(key) == value]
        items.sort(key=lambda o: o["metadata"]["name"])
        start = int(request.params.get("continue") or 0)
        limit = int(request.params.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        more = start + limit < len(items)
        plural = request.resource.plural
        return aiohttp.web.json_response(
            {
                "apiVersion": "v1"
                if not request.resource.group
                else f"{request.resource.group}/{request.resource.version}",
                "kind": KINDS.get(plural, plural.capitalize()) + "List",
                "metadata": {"resourceVersion": "1", **({"continue": str(start + limit)} if more else {})},
                "items": page,
            }
        )


def _status(code: int, reason: str, message: str) -> aiohttp.web.StreamResponse:
    return aiohttp.web.json_response(
        {
            "apiVersion": "v1",
            "kind": "Status",
            "status": "Failure",
            "reason": reason,
            "message": message,
            "code": code,
        },
        status=code,
    )


@dataclass
class KubeServer:
    """The running emulator: ``url``, ``api`` (the emulator) and helpers to play the operator."""

    api: _Emulator
    url: str
    loop: asyncio.AbstractEventLoop
    stop_controller: threading.Event = field(default_factory=threading.Event)

    def run(self, coro: Any) -> Any:
        """Run ``coro`` in the server's loop (nothing once the server stops: the operator may still be playing)."""
        if not self.loop.is_running():
            coro.close()
            return None
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)
        except RuntimeError:
            coro.close()
            return None

    def objects(self, resource: str = TFJOBS, namespace: str | None = None) -> list[dict[str, Any]]:
        async def read() -> list[dict[str, Any]]:
            async with self.api._lock:
                return [
                    json.loads(json.dumps(obj.raw))
                    for (res, ns, _n), obj in self.api.objects.items()
                    if str(res.plural) == resource.rsplit("/", 1)[-1]
                    and not obj.deleted
                    and (namespace is None or ns == namespace)
                ]

        return self.run(read()) or []  # none once the server stops (the operator stand-in may still look)

    def put(self, resource: str, namespace: str, name: str, obj: dict[str, Any]) -> None:
        async def write() -> None:
            async with self.api._lock:
                self.api.objects[resource, namespace, name] = obj

        self.run(write())

    def put_all(self, resource: str, namespace: str, objs: dict[str, dict[str, Any]]) -> None:
        """Several objects in one step (no request sees some of them and not the others)."""

        async def write() -> None:
            async with self.api._lock:
                for name, obj in objs.items():
                    self.api.objects[resource, namespace, name] = obj

        self.run(write())

    def patch(self, resource: str, namespace: str, name: str, patch: dict[str, Any]) -> None:
        async def write() -> None:
            async with self.api._lock:
                self.api.objects[resource, namespace, name].patch(patch)

        self.run(write())

    def declare_crd(self) -> None:
        # /apis lists the group (kmock's discovery); /apis/kubeflow.org/v1 is served from ``served`` (above)
        self.api.resources[TFJOBS] = kmock.ResourceInfo(
            kind="TFJob",
            singular="tfjob",
            namespaced=True,
            verbs={"create", "get", "list", "watch", "delete"},
        )
        self.api.resources[TFJOBS] = kmock.ResourceInfo(
            kind="TFJob",
            singular="tfjob",
            namespaced=True,
            verbs={"create", "get", "list", "watch", "delete"},
        )
        self.api.served["kubeflow.org/v1"] = [
            {
                "name": "tfjobs",
                "singularName": "tfjob",
                "namespaced": True,
                "kind": "TFJob",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            },
            {
                "name": "tfjobs/status",
                "singularName": "",
                "namespaced": True,
                "kind": "TFJob",
                "verbs": ["get", "patch", "update"],
            },
            {
                "name": "pytorchjobs",
                "singularName": "pytorchjob",
                "namespaced": True,
                "kind": "PyTorchJob",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            },
        ]
        self.api.resources[PYTORCHJOBS] = kmock.ResourceInfo(
            kind="PyTorchJob",
            singular="pytorchjob",
            namespaced=True,
            verbs={"create", "get", "list", "delete"},
        )


@contextmanager
def kube_server(*, crd: bool = True) -> Iterator[KubeServer]:
    """The emulator on 127.0.0.1 in a thread of its own, until the block ends."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        async with _Emulator() as api, kmock.Server(api) as server:
            box["api"], box["url"] = api, f"http://127.0.0.1:{server.port}"
            box["stop"] = asyncio.Event()
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(20), "kmock did not start"
    server = KubeServer(box["api"], box["url"], loop)
    if crd:
        server.declare_crd()
    try:
        yield server
    finally:
        server.stop_controller.set()
        loop.call_soon_threadsafe(box["stop"].set)
        thread.join(20)


def stamp(t: float) -> str:
    """An RFC 3339 timestamp with nanoseconds, as the kubelet writes them."""
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
    return f"{whole}.{int((t % 1) * 1e9):09d}Z"


def operator(
    server: KubeServer,
    *,
    outcome: str = "Succeeded",
    failing: tuple[str, int] | None = None,
    lines: int = 3,
    restart: tuple[str, int] | None = None,
    base: float = 1_790_000_000.0,
) -> threading.Thread:
    """The training operator's stand-in: for each new TFJob or PyTorchJob, pods per replica with the operator's labels, then
    Running with ``lines`` log lines per replica (interleaved in time), then ``outcome``; ``failing`` names the
    replica whose container exits 1; ``restart`` one whose container restarted once (its first attempt's log
    under ``previous=true``)."""

    def play(resource: str, tf: dict[str, Any]) -> None:
        meta, ns = tf["metadata"], tf["metadata"].get("namespace") or "default"
        name = meta["name"]
        cond = [{"type": "Created", "status": "True", "reason": "TFJobCreated"}]
        server.patch(resource, ns, name, {"status": {"conditions": cond}})
        container = "pytorch" if "pytorchReplicaSpecs" in tf["spec"] else "tensorflow"
        # Logs first, then every pod at once: a log round sees no pod or all of them with their whole logs.
        pods: dict[str, dict[str, Any]] = {}
        for n, (rtype, i) in enumerate(
            (rtype, i)
            for rtype, spec in (tf["spec"].get("tfReplicaSpecs") or tf["spec"]["pytorchReplicaSpecs"]).items()
            for i in range(int(spec.get("replicas", 1)))
        ):
            pod = f"{name}-{rtype.lower()}-{i}"
            restarted = restart == (rtype, i)
            if restarted:
                server.api.logs[(ns, pod, True)] = [
                    (stamp(base - 5 + 0.001 * k), f"attempt 1 line {k}") for k in range(2)
                ]
            server.api.logs[(ns, pod, False)] = [
                (stamp(base + k + 0.01 * n), f"{rtype.lower()} {i} line {k}") for k in range(lines)
            ]
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": rtype.lower(),
                "training.kubeflow.org/replica-index": str(i),
            }
            status = {"name": container, "restartCount": 1 if restarted else 0, "state": {"running": {}}}
            pods[pod] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": ns, "labels": labels},
                "spec": {"containers": [{"name": container, "image": "trainer"}]},  # kubectl logs checks it
                "status": {"phase": "Running", "containerStatuses": [status]},
            }
        server.put_all(PODS, ns, pods)
        server.patch(
            resource,
            ns,
            name,
            {
                "status": {
                    "conditions": [*cond, {"type": "Running", "status": "True"}],
                    "startTime": "2026-11-27T10:00:00Z",
                }
            },
        )
        time.sleep(0.3)
        final = {"type": outcome, "status": "True", "message": f"TFJob {ns}/{name} is {outcome.lower()}."}
        if failing:
            rtype, i = failing
            pod = f"{name}-{rtype.lower()}-{i}"
            server.patch(
                PODS,
                ns,
                pod,
                {
                    "status": {
                        "phase": "Failed",
                        "containerStatuses": [
                            {
                                "name": container,
                                "restartCount": 0,
                                "state": {"terminated": {"exitCode": 1, "reason": "Error"}},
                            }
                        ],
                    }
                },
            )
        server.patch(
            resource,
            ns,
            name,
            {
                "status": {
                    "conditions": [*cond, {"type": "Running", "status": "False"}, final],
                    "completionTime": "2026-11-27T10:05:00Z",
                }
            },
        )

    def loop() -> None:
        seen: set[str] = set()
        while not server.stop_controller.is_set():
            for resource in (TFJOBS, PYTORCHJOBS):
                for tf in server.objects(resource):
                    key = f"{resource}/{tf['metadata'].get('namespace')}/{tf['metadata']['name']}"
                    if key not in seen:
                        seen.add(key)
                        play(resource, tf)
            time.sleep(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread
