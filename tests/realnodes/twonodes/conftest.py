"""One environment of two real h100 nodes (the workload image, JobSet, the Trainer and the nvcre
controller as it ships) shared by every module of this package, so the lane pays for one bring-up
instead of one per module.

The modules keep out of each other's way: each run has a namespace of its own, and a test that
puts a fault on a node clears it before it ends, however it ends. After the package's last test
the environment is stopped here, and the stop is checked as every real-node module used to check
its own: the stack's peak resident memory stayed under ``MEMORY_CEILING``, every process it
started is gone, its cgroups are empty, its working directory is gone and the host is as it was found.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realnodes.realnodes_helpers import Environment, started

#: the stack's resident memory (control plane, controllers, nodes, pods) must stay below this
MEMORY_CEILING = 4 << 30
CONTROLLERS = {"jobset-controller", "trainer-controller-manager", "nvcre-controller"}


@pytest.fixture(scope="package")
def env(request: pytest.FixtureRequest) -> Iterator[Environment]:
    """Two real h100 nodes with the workload image, JobSet, the Trainer and the nvcre controller."""
    from nvcre.testing.realnodes import cgroups, footprint, hoststate

    with started(request, nodes=2) as (cluster, before):
        sampler = footprint.PeakSampler(cluster)
        with sampler:
            yield Environment(cluster, before, sampler)
        assert CONTROLLERS <= set(cluster.pids), sorted(cluster.pids)
        pids, workdir = footprint.stack_pids(cluster), cluster.workdir
        cluster.stop()
    print(f"peak resident memory of the 2-node stack: {sampler.peak / (1 << 20):.0f} MiB")
    assert 0 < sampler.peak < MEMORY_CEILING, sampler.peak
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert cgroups.pids(cluster.cgroup_top) == set()
    assert hoststate.differences(before, hoststate.snapshot()) == []
    assert not workdir.exists()
