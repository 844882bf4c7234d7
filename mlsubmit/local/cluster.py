"""Which replicas of a local cluster run on which loopback ports (docs/local.md). Unlike gcloud's RunDistributed:
empty roles are left out of ``cluster`` (``"ps": []`` breaks TensorFlow 2), ports are free ones unless a start port
is given, evaluators stay out of ``cluster`` unless asked (https://cloud.google.com/ai-platform/training/docs/distributed-training-details)."""

from __future__ import annotations

import socket
from collections.abc import Collection, Sequence
from contextlib import ExitStack
from dataclasses import dataclass

from mlsubmit.errors import LocalRunError, UsageError
from mlsubmit.job.vocab import EVALUATOR, PARAMETER_SERVER, PRIMARY_TASKS, WORKER
from mlsubmit.local.request import LocalTrainRequest

MAX_PORT = 65535


@dataclass(frozen=True)
class Replica:
    """One process of the local cluster: its TF_CONFIG task and, if it listens, its address."""

    role: str  # "chief" | "master" | "worker" | "ps" | "evaluator"
    index: int
    address: str | None  # "localhost:PORT"; None for an evaluator kept out of the cluster

    @property
    def name(self) -> str:
        """The label of output prefixes and messages: ``chief``, ``worker-1``, ``ps-0``, ``evaluator-0``."""
        return self.role if self.is_primary else f"{self.role}-{self.index}"

    @property
    def is_primary(self) -> bool:
        """The chief (or master): its exit ends the run and gives the exit status."""
        return self.role in PRIMARY_TASKS


@dataclass(frozen=True)
class ClusterPlan:
    """Every replica to start, and the ``cluster`` mapping for TF_CONFIG (None for a single process)."""

    replicas: tuple[Replica, ...]  # the primary last
    cluster: dict[str, list[str]] | None


def plan_distributed(
    workers: int,
    ps: int,
    evaluators: int,
    evaluators_in_cluster: bool,
    ports: Sequence[int],
    primary_name: str = "chief",
) -> ClusterPlan:
    """A cluster on ``localhost`` ``ports`` (one per member), its replicas in gcloud's order, ps first, primary last."""
    addresses = [f"localhost:{p}" for p in ports]
    primary_addr, rest = addresses[0], addresses[1:]
    ps_addrs, rest = rest[:ps], rest[ps:]
    worker_addrs, eval_addrs = rest[:workers], rest[workers:]
    listed = ((PARAMETER_SERVER.task, ps_addrs), (WORKER.task, worker_addrs), (EVALUATOR.task, eval_addrs))
    cluster = {primary_name: [primary_addr]} | {role: addresses for role, addresses in listed if addresses}
    replicas: list[Replica] = [Replica(PARAMETER_SERVER.task, i, a) for i, a in enumerate(ps_addrs)]
    replicas += [Replica(WORKER.task, i, a) for i, a in enumerate(worker_addrs)]
    replicas += [Replica(EVALUATOR.task, i, eval_addrs[i] if eval_addrs else None) for i in range(evaluators)]
    replicas.append(Replica(primary_name, 0, primary_addr))
    return ClusterPlan(replicas=tuple(replicas), cluster=cluster)


def check_ports_free(ports: Sequence[int]) -> None:
    """Refuse ports something already listens on, before any replica starts and fails obscurely in gRPC."""
    busy: list[int] = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    if busy:
        raise UsageError(
            f"port(s) {', '.join(str(p) for p in busy)} already in use on localhost; choose another --start-port or omit it."
        )


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on loopback now (held open together so none comes twice)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


# Tries at finding free ports that no running trial holds (ports are probed, then bound by the replicas).
PORT_ATTEMPTS = 50


def plan_cluster(request: LocalTrainRequest, slot: int = 0, busy: Collection[int] = ()) -> ClusterPlan:
    """Replicas and addresses on ``--start-port``'s block (slot N: the N-th) or free ports (not ``busy``)."""
    if not request.distributed:  # no ``cluster`` at all: TensorFlow runs it as a local job
        return ClusterPlan(replicas=(Replica(request.primary_name, 0, None),), cluster=None)
    counts = (request.workers, request.ps, request.evaluators, request.evaluators_in_cluster)
    count = 1 + request.workers + request.ps + (request.evaluators if request.evaluators_in_cluster else 0)
    if request.start_port is not None:  # gcloud's block, refused up front when it does not fit
        start = request.start_port + slot * count
        if (last := start + count - 1) > MAX_PORT:
            raise UsageError(
                f"--start-port {start} leaves no room for {count} ports (the last would be {last} > {MAX_PORT}); "
                f"use a start port of at most {MAX_PORT - count + 1}."
            )
        ports = list(range(start, last + 1))
        check_ports_free(ports)
    else:
        for _ in range(PORT_ATTEMPTS):
            ports = free_ports(count)
            if not set(ports) & set(busy):
                break
        else:
            raise LocalRunError("could not find free loopback ports apart from the running trials' ports.")
    return plan_distributed(*counts, ports, request.primary_name)
