"""The simulated cluster's capacity knobs: upstream defaults unless asked, each flag where it belongs."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.testing import simcontrollers
from nvcre.testing.simcluster import LARGE, Capacity, SimCluster


def test_the_default_capacity_changes_nothing_upstream_sets():
    assert Capacity().controller_manager_flags() == ()
    assert Capacity().node_lease_seconds == 40
    assert SimCluster().plane.controller_manager_flags == ()


def test_the_large_capacity_lifts_client_limits_and_slows_heartbeats_with_a_matching_grace():
    flags = LARGE.controller_manager_flags()
    assert flags == ("--kube-api-qps=200", "--kube-api-burst=400", "--concurrent-job-syncs=20", "--node-monitor-grace-period=900s")
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
