"""Measurement benchmarks: NCCL log parsing throughput and node health checks per node event.

Run: ``.venv/bin/python benchmarks/parse_bench.py [--megabytes N] [--repeat N]``. The NCCL case
parses a launcher log built by repeating the real two-node A100 capture in
``golden/measure/`` (timestamped, about 85% noise lines) up to the requested size, and a
noise-free table-only log; it prints MB/s (median of the repeats) and the peak traced memory of
one parse. The health case times one ``NodeHealthMonitor.check`` on a realistic Node (labels,
conditions, capacity) for the default expression and a condition-scanning one. Goal: at least
100 MB/s for the NCCL parser. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from pathlib import Path

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.judge.health import compile_monitor
from nvcre.runtime.measure.nccl import parse_bandwidth

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "golden/measure/nccl-allreduce-a100-2node-launcher/input.log"


def _log(megabytes: float, rows_only: bool) -> str:
    sample = SAMPLE.read_text(encoding="utf-8")
    if rows_only:
        sample = "\n".join(line for line in sample.splitlines() if line[36:].lstrip()[:1].isdigit()) + "\n"
    copies = max(1, int(megabytes * 1024 * 1024 / len(sample)))
    return sample * copies


def bench_nccl(megabytes: float, repeat: int) -> None:
    profile = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nccl-bandwidth")
    for label, rows_only in (("launcher log (real capture, repeated)", False), ("bandwidth rows only", True)):
        text = _log(megabytes, rows_only)
        size_mb = len(text.encode("utf-8")) / (1024 * 1024)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            parsed = parse_bandwidth(text, profile)
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        parse_bandwidth(text, profile)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        median = statistics.median(times)
        print(
            f"nccl  {label:<40} {size_mb:7.1f} MB  {size_mb / median:7.1f} MB/s (median of {repeat}, best "
            f"{size_mb / min(times):.1f})  rows {parsed.row_count}  peak {peak / 2**20:.1f} MiB"
        )


def _node(index: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"gpu-node-{index:03d}",
            "labels": {
                "kubernetes.io/hostname": f"gpu-node-{index:03d}",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.clique": f"clique-{index // 18}",
                "topology.kubernetes.io/zone": "zone-a",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"providerID": f"aws:///us-east-1a/i-{index:017x}", "taints": []},
        "status": {
            "capacity": {"cpu": "192", "memory": "2063937820Ki", "nvidia.com/gpu": "8", "pods": "110"},
            "allocatable": {"cpu": "191", "memory": "2061840668Ki", "nvidia.com/gpu": "8", "pods": "110"},
            "conditions": [
                {"type": t, "status": "False", "reason": f"No{t}", "message": "ok", "lastHeartbeatTime": "2026-03-01T10:00:00Z"}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
                {"type": "GPUHealthy", "status": "True", "reason": "Healthy", "message": "all 8 GPUs healthy"},
            ],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250}"}],
        },
    }


def bench_health(repeat: int) -> None:
    nodes = [_node(i) for i in range(200)]
    for expression in (
        "node.spec.unschedulable == true",
        "node.status.conditions.exists(c, c.type == 'GPUHealthy' && c.status == 'False')",
    ):
        monitor = compile_monitor(expression)
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            for node in nodes:
                monitor.check(node)
            runs.append((time.perf_counter() - start) / len(nodes))
        per = statistics.median(runs)
        print(f"health {expression[:58]:<58} {per * 1e6:8.1f} us/node event ({1 / per:,.0f} nodes/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=float, default=64.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bench_nccl(args.megabytes, args.repeat)
    bench_health(args.repeat)


if __name__ == "__main__":
    main()
