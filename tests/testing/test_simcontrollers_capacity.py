"""The simulated cluster's capacity knobs: upstream defaults unless asked, each flag where it belongs."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.testing import simcontrollers
from nvcre.testing.simcluster import LARGE, Capacity, SimCluster


def test_the_default_capacity_changes_nothing_upstream_sets():
    assert Capacity().controller_manager_flags() == ()
    assert Capacity().node_lease_seconds == 40
    assert Capacity().node_lease_parallelism is None
    assert SimCluster().plane.controller_manager_flags == ()


def test_the_large_capacity_lifts_client_limits_and_slows_heartbeats_with_a_matching_grace():
    flags = LARGE.controller_manager_flags()
    assert flags == ("--kube-api-qps=200", "--kube-api-burst=400", "--concurrent-job-syncs=20", "--node-monitor-grace-period=1800s")
    # a Lease renewed every quarter of its duration must fit the grace several times over
    assert LARGE.node_lease_seconds / 4 * 3 <= LARGE.node_monitor_grace_seconds  # type: ignore[operator]
    assert SimCluster(capacity=LARGE).plane.controller_manager_flags == flags


@pytest.mark.parametrize(("qps", "expected"), [(None, None), (200, {"qps": 200, "burst": 400})])
def test_the_trainer_config_carries_its_client_limits_only_when_asked(qps: int | None, expected: dict[str, Any] | None):
    config = simcontrollers.trainer_config(9443, 8081, qps=qps)
    assert config.get("clientConnection") == expected
    assert "controller" not in config
    workers = simcontrollers.trainer_config(9443, 8081, workers=LARGE.trainer_workers)["controller"]
    assert workers == {"groupKindConcurrency": {"TrainJob.trainer.kubeflow.org": 8}}
    assert config["webhook"] == {"port": 9443, "host": "127.0.0.1"}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}


def test_kwok_gets_a_config_file_only_for_its_lease_workers():
    config = simcontrollers.kwok_config(16)
    assert (config["apiVersion"], config["kind"]) == ("config.kwok.x-k8s.io/v1alpha1", "KwokConfiguration")
    assert config["options"]["nodeLeaseParallelism"] == 16
    # kwok does not default a file's options: every stage worker count must be stated, or none runs
    others = {key: value for key, value in config["options"].items() if key != "nodeLeaseParallelism"}
    assert others == {key: value for key, value in simcontrollers.KWOK_DEFAULT_OPTIONS.items() if key != "nodeLeaseParallelism"}
    assert all(config["options"][key] >= 1 for key in config["options"] if key.endswith("Parallelism"))
    # at 10,000 nodes the large capacity needs 10,000 / (lease / 4) renewals a second; upstream's
    # 4 workers managed about 20 a second on a saturated API server
    assert 10_000 / (LARGE.node_lease_seconds / 4) <= 40
    assert (LARGE.node_lease_parallelism or 4) > 4
