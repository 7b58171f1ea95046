"""A slow link found on four real nodes: one node's pod bridge is rate-limited (``tc tbf``, inside
the environment's own network namespace), and the all-reduce, run over TCP between the pods by
the nccl-tests CPU stand-in, measures it.

With a bus-bandwidth floor the healthy pairs meet, ``communication/nccl-all-reduce`` in pairs
(``nodesPerJob: 2``) FAILS with ``ThresholdViolation`` on the slow node's pair while the other pair
passes; ``nvcrectl certification diagnose`` turns the failed category into the diagnose
Certification, whose run names a bad link ending at the slow node, unless this machine's shared
CPUs made a healthy node measure far under its peers alone, which the run must then report as
``ThresholdViolation`` (its bandwidth), never as a failed workload.
A single-node run cannot see the slow bridge here (one pod's ranks talk inside the pod, where a
GPU node's NCCL with shared memory and P2P off would go through its NIC), so the diagnose finds
the fault on the paths, as a link between the slow node and its pair. The last test stops the
environment and checks the host is as it was."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import nvcrectl, started, trouble

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

NODES = 4
#: what the slow node's bridge lets through towards its pods: 0.5 MB/s. A faster filter makes
#: shorter rounds but a weaker fault: behind 32mbit a pair's runs took 25 s instead of 55, but the
#: sizes under the filter's 64 KB burst, which refills eight times as fast, lifted its average to
#: 0.01 to 0.05 GB/s, over the floor in two of its four runs in one diagnose, and the link went unnamed.
#: Even at 4mbit that 64 KB bucket once let a small size through at a healthy figure, over the
#: floor, and the slow pair passed: the bucket now holds 10 ms of the rate (at least 8 KiB)
RATE = "4mbit"
#: the floor (GB/s). On this machine a healthy pair measured 0.10 to 0.16 GB/s and a pair behind
#: this link 0.00 to 0.02 (printed with two decimals, as nccl-tests prints it): a floor at the
#: slow pair's figure lets it pass, so the floor sits above it and several times below the healthy pairs
FLOOR = 0.03
CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: {name}
spec:
  target:
    nodeSelector:
      nvidia.com/gpu.present: "true"
  categories:
  - domain: communication
    variant: nccl-all-reduce
    options:
      nodesPerJob: 2
      gpusPerNode: 2
      maxBytes: 512K
      numIterations: 5
      numCycles: 1
      thresholds:
        busBandwidthGBps: "value >= {floor}"
"""


@dataclass
class Environment:
    """The shared environment, what the host looked like before it, its memory sampler, the slow node."""

    cluster: Any
    host_before: dict[str, Any]
    sampler: Any
    slow: str = ""
    failed: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def env(request: pytest.FixtureRequest) -> Iterator[Environment]:
    """Four real h100 nodes with the workload image, JobSet, the Trainer and the nvcre controller."""
    from nvcre.testing.realnodes import footprint

    with started(request, nodes=NODES) as (cluster, before):
        environment = Environment(cluster, before, footprint.PeakSampler(cluster))
        with environment.sampler:
            yield environment


def run(env: Environment, path: Path, timeout: str = "6m") -> tuple[subprocess.CompletedProcess[str], dict[str, Any], str]:
    """``certification run --wait`` of the document at ``path``; (the run, its results, its namespace)."""
    results = path.with_suffix(".json")
    done = nvcrectl(
        env.cluster, "certification", "run", "--cert-file", str(path), "--grant-run-access", "--wait", "--timeout", timeout,
        "--results-file", str(results), timeout=900,
    )  # fmt: skip
    created = re.search(r"created in namespace (\S+?)\.?$", done.stderr, re.MULTILINE)
    assert created is not None and results.is_file(), (done.returncode, done.stdout[-2000:], done.stderr[-3000:])
    return done, json.loads(results.read_text()), created.group(1)


def test_the_slow_nodes_pair_fails_its_floor_while_the_healthy_pair_meets_it(env: Environment, tmp_path: Path) -> None:
    cluster = env.cluster
    env.slow = cluster.node_names[-1]
    cluster.set_fault(env.slow, f"slow-link:{RATE}")
    cert = tmp_path / "slow-link.yaml"
    cert.write_text(CERTIFICATION.format(name="slow-link", floor=FLOOR))
    done, results, namespace = run(env, cert)
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-3000:])
    env.failed = {"name": "slow-link", "namespace": namespace, "results": results}
    assert results["result"] == "FAILED" and results["totalNodes"] == NODES
    [category] = results["categories"]
    print(f"pairs: {json.dumps(category['groupBandwidth'])}")
    [failed] = category["failedGroups"]
    assert env.slow in failed["nodes"] and len(failed["nodes"]) == 2, failed
    # Both nodes of the slow pair are blamed with ThresholdViolation, and no node of the other pair.
    assert sorted((d["name"], d["reason"]) for d in results["failedNodeDetails"]) == sorted(
        (n, "ThresholdViolation") for n in failed["nodes"]
    )
    groups = {row["group"]: row for row in category["groupBandwidth"]}
    assert len(groups) == 2 and [row["failed"] for row in groups.values()].count(True) == 1, groups


def test_diagnose_finds_a_bad_link_ending_at_the_slow_node_or_blames_a_healthy_one_only_on_bandwidth(
    env: Environment, tmp_path: Path
) -> None:
    assert env.failed, "the failed run of the first test is needed"
    printed = nvcrectl(env.cluster, "certification", "diagnose", env.failed["name"], "-n", env.failed["namespace"], timeout=120)
    assert printed.returncode == 0, printed.stderr
    assert "testScale: diagnose" in printed.stdout, printed.stdout
    document = tmp_path / "slow-link-diagnose.yaml"
    document.write_text(printed.stdout)
    done, results, namespace = run(env, document, timeout="14m")
    [category] = results["categories"]
    diagnosis = category.get("diagnose") or {}
    named = set(diagnosis.get("confirmedFaulty") or [])
    links = [set(f.get("groupA", [])) | set(f.get("groupB", [])) for f in diagnosis.get("infrastructureFaults") or []]
    print(f"diagnose: {json.dumps(category.get('diagnosis'))}")
    # each run of the diagnose: its stage, nodes, verdict and bus bandwidth, then what went wrong
    for test in diagnosis.get("tests") or []:
        print(f"  {test.get('stage')} {','.join(test.get('nodes') or [])} passed={test.get('passed')} {test.get('busBW', '')}")
    print(trouble(env.cluster, namespace))
    assert diagnosis.get("stage") == "complete", (done.returncode, category)
    healthy = set(env.cluster.node_names) - {env.slow}
    # The nodes share this machine's two cores, so a healthy node's single-node run can measure
    # well under its peers (1.26 to 4.21 GB/s on one run); twice in five runs a healthy node was
    # blamed that way. Such a blame must say what it is, the bandwidth against its peers, never a
    # failed workload: a crash is not noise.
    blamed = {entry["name"]: entry for entry in (category.get("diagnosis") or {}).get("confirmedNodes") or []}
    for node in named & healthy:
        assert blamed[node]["reason"] == "ThresholdViolation", blamed[node]
        print(f"warning: healthy {node} blamed on its single-node bandwidth: {blamed[node]['message']}")
    if not named & healthy:
        # Named alone, or as the one end every bad link found has in common.
        assert env.slow in named or (links and all(env.slow in link for link in links)), (done.returncode, category)


def test_the_stack_stays_within_its_memory_and_stops_leaving_the_host_as_found(env: Environment) -> None:
    from nvcre.testing.realnodes import cgroups, footprint, hoststate

    cluster = env.cluster
    if env.slow:
        cluster.set_fault(env.slow, "none")
    pids = footprint.stack_pids(cluster)
    env.sampler.__exit__(None, None, None)
    print(f"peak resident memory of the 4-node stack: {env.sampler.peak / (1 << 20):.0f} MiB")
    assert 0 < env.sampler.peak < (6 << 30), env.sampler.peak
    cluster.stop()
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert cgroups.pids(cluster.cgroup_top) == set()
    assert hoststate.differences(env.host_before, hoststate.snapshot()) == []
