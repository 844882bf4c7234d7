"""The local cluster layout: which replicas run, in which order, on which ports (mlsubmit.local.cluster)."""

from __future__ import annotations

import socket

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.local.cluster import Replica, check_ports_free, free_ports, plan_distributed


@pytest.mark.parametrize(
    ("workers", "ps", "evaluators", "in_cluster", "expected_cluster", "expected_names"),
    [
        # chief + 1 worker, no ps: no "ps" key at all (gcloud writes "ps": [], which breaks TF 2 MWMS)
        (1, 0, 0, False, {"chief": ["localhost:9000"], "worker": ["localhost:9001"]}, ["worker-0", "chief"]),
        # gcloud's port order: primary, ps, workers
        (
            2,
            1,
            0,
            False,
            {
                "chief": ["localhost:9000"],
                "ps": ["localhost:9001"],
                "worker": ["localhost:9002", "localhost:9003"],
            },
            ["ps-0", "worker-0", "worker-1", "chief"],
        ),
        # chief alone but distributed: a cluster of one
        (0, 0, 0, False, {"chief": ["localhost:9000"]}, ["chief"]),
        # evaluators run but stay out of the cluster, as on the service
        (
            1,
            0,
            2,
            False,
            {"chief": ["localhost:9000"], "worker": ["localhost:9001"]},
            ["worker-0", "evaluator-0", "evaluator-1", "chief"],
        ),
        # ... unless asked for
        (
            1,
            0,
            1,
            True,
            {"chief": ["localhost:9000"], "worker": ["localhost:9001"], "evaluator": ["localhost:9002"]},
            ["worker-0", "evaluator-0", "chief"],
        ),
    ],
)
def test_distributed_layout(
    workers: int,
    ps: int,
    evaluators: int,
    in_cluster: bool,
    expected_cluster: dict[str, list[str]],
    expected_names: list[str],
) -> None:
    count = 1 + workers + ps + (evaluators if in_cluster else 0)
    plan = plan_distributed(workers, ps, evaluators, in_cluster, list(range(9000, 9000 + count)))
    assert plan.cluster == expected_cluster
    assert [r.name for r in plan.replicas] == expected_names  # ps first, primary last, as gcloud starts them
    for replica in plan.replicas:
        if replica.role == "evaluator" and not in_cluster:
            assert replica.address is None
        else:
            assert replica.address == plan.cluster[replica.role][replica.index]


def test_master_as_primary_name() -> None:
    plan = plan_distributed(1, 0, 0, False, [1, 2], primary_name="master")
    assert plan.cluster == {"master": ["localhost:1"], "worker": ["localhost:2"]}
    assert plan.replicas[-1] == Replica("master", 0, "localhost:1")


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(8)
    assert len(set(ports)) == 8
    check_ports_free(ports)  # nothing listens there once released


def test_busy_port_is_refused_up_front() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = sock.getsockname()[1]
        with pytest.raises(UsageError, match=f"{busy} already in use"):
            check_ports_free([busy])
