"""Benchmark the simulated GPU cluster: start-up, idle memory, and a 2,000-node pool.

Measures, and prints as JSON (``--json``) or a table:

1. cold start-up: the first ``SimCluster`` start in this process (binaries not yet in
   the page cache of this process, Python modules imported on the way), with the
   breakdown control plane / CRDs / controllers / nodes;
2. warm start-up: a second start right after the first was stopped;
3. idle memory (VmRSS) of every process and of this harness process, sampled after
   the cluster with ``--idle-nodes`` nodes has been idle for ``--idle-seconds``;
4. ``--scale`` nodes (default 2,000) registered and Ready: time to create them,
   time until all are Ready, and the API server's and kwok's memory afterwards.

Needs the binaries built (``python -m nvcre.testing.gobuild.build --sim``). It is a
benchmark, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from procstat import cpu_seconds, proc_status_kib

ROOT = Path(__file__).resolve().parents[1]


def rss_mib(pid: int) -> float | None:
    kib = proc_status_kib(pid, "VmRSS")
    return round(kib / 1024, 1) if kib is not None else None


def memory(cluster: Any) -> dict[str, float | None]:
    out = {name: rss_mib(pid) for name, pid in sorted(cluster.pids.items())}
    out["harness (python, player)"] = rss_mib(os.getpid())
    return out


def start(nodes: int, profile: str) -> tuple[Any, float]:
    from nvcre.testing.simcluster import SimCluster

    cluster = SimCluster(profile=profile, nodes=nodes)
    began = time.monotonic()
    cluster.start()
    return cluster, time.monotonic() - began


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "date": time.strftime("%Y-%m-%d"),
    }
    cluster, seconds = start(args.idle_nodes, args.profile)
    results["cold_start_seconds"] = round(seconds, 2)
    results["cold_breakdown"] = {k: round(v, 2) for k, v in cluster.timings.items()}
    try:
        time.sleep(args.idle_seconds)
        before = {n: cpu_seconds(p) for n, p in cluster.pids.items()}
        time.sleep(10)
        after = {n: cpu_seconds(p) for n, p in cluster.pids.items()}
        results["idle_rss_mib"] = memory(cluster)
        results["idle_rss_total_mib"] = round(sum(v or 0 for v in results["idle_rss_mib"].values()), 1)
        results["idle_cpu_percent_of_one_core"] = {n: round(100 * ((after[n] or 0) - (before[n] or 0)) / 10, 2) for n in before}
    finally:
        cluster.stop()

    cluster, seconds = start(args.idle_nodes, args.profile)
    results["warm_start_seconds"] = round(seconds, 2)
    results["warm_breakdown"] = {k: round(v, 2) for k, v in cluster.timings.items()}
    try:
        if args.scale:
            began = time.monotonic()
            names = cluster.add_nodes(profile=args.profile, count=args.scale, prefix="scale", wait=False, workers=args.workers)
            created = time.monotonic() - began
            cluster.wait_ready(names, timeout=args.scale_timeout)
            ready = time.monotonic() - began
            results["scale"] = {
                "nodes": len(names),
                "create_seconds": round(created, 1),
                "all_ready_seconds": round(ready, 1),
                "rss_mib_when_ready": memory(cluster),
            }
            time.sleep(args.idle_seconds)
            results["scale"]["rss_mib_after_idle"] = memory(cluster)
    finally:
        cluster.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="h100")
    parser.add_argument("--idle-nodes", type=int, default=4)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--scale", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--scale-timeout", type=float, default=600.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    results = run(args)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for key, value in results.items():
            print(f"{key}: {json.dumps(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
