"""Plan benchmarks: wall time of ``plan_workflow`` (and one Job expansion) on large synthetic clusters.

Run: ``.venv/bin/python benchmarks/plan_bench.py [--nodes 2000] [--repeat 7]``. Prints, per case,
the median and worst wall time over the repeats, and the median CPU time (on a shared machine the
wall time swings with everyone else's load; the CPU time much less). The goals: under 0.3 s for a full-scale and an
intra-node plan at 2,000 nodes, under 1 s for every case at 10,000 (``--nodes 10000``); nothing
here asserts a time, so a slow machine never fails a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from nvcre.compiler.expand import expand_job
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.plan import plan_workflow


def cluster(count: int) -> Any:
    nodes = []
    for i in range(count):
        name = f"gpu-{i:05d}"
        labels = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "rack": f"r{i // 18:03d}",
        }
        spec: dict[str, Any] = {"unschedulable": True} if i % 97 == 0 else {}
        gpus = "4" if i % 101 == 0 else "8"
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {"allocatable": {"nvidia.com/gpu": gpus}},
            }
        )
    return facts_from_documents(nodes)


def workflow(num_nodes: int | None, **orchestration: Any) -> dict[str, Any]:
    trainer: dict[str, Any] = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "bench-communication-nccl-a-00000", "namespace": "bench", "uid": "00000000-0000-4000-8000-000000000000"},
        "spec": {
            "jobTemplate": {
                "spec": {"workload": {"trainJob": {"runtimeRef": {"kind": "TrainingRuntime", "name": "rt"}, "trainer": trainer}}}
            },
            "orchestration": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, **orchestration},
        },
    }


def timed(run: Callable[[], Any], repeat: int) -> tuple[float, float, float, Any]:
    """(median wall s, worst wall s, median CPU s, the last result) over ``repeat`` runs."""
    times = []
    cpu = []
    result = None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(times), max(times), statistics.median(cpu), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    facts = cluster(args.nodes)
    cases = {
        "full-scale": workflow(None),
        "intra-node": workflow(1),
        "8 per job": workflow(8),
        "topology 16 per job": workflow(16, topology={"topologyKey": "rack"}),
    }
    for label, document in cases.items():

        def run(document: dict[str, Any] = document) -> Any:
            return plan_workflow(document, facts)

        median, worst, cpu, plan = timed(run, args.repeat)
        print(
            f"plan {label:<20} {args.nodes} nodes  {len(plan.groups):>5} groups  median {median * 1000:7.1f} ms  "
            f"worst {worst * 1000:7.1f} ms  CPU median {cpu * 1000:7.1f} ms"
        )
    plan = plan_workflow(cases["intra-node"], facts)
    median, worst, cpu, _ = timed(lambda: [expand_job(cases["intra-node"], plan, g, 1) for g in plan.groups[:100]], args.repeat)
    print(
        f"expand_job x100 (intra-node plan)          median {median * 1000:7.1f} ms  worst {worst * 1000:7.1f} ms  "
        f"CPU median {cpu * 1000:7.1f} ms"
    )


if __name__ == "__main__":
    main()
