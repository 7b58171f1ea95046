#!/usr/bin/env python3
"""Controller plumbing costs, and (``--sim``) end-to-end latency on the simulated GPU cluster.

Offline: work-queue throughput (add + get + done per key, with de-duplication), informer store
relist (``Store.replace``) and label-filtered listing over many pods, and one ``/metrics``
scrape over many Certifications, Workflows and Jobs. With ``--sim``: seconds from creating a
healthy 4-node ``nccl-all-reduce`` Certification to ``Succeeded``, with the in-process
controller, and the controller's peak RSS. Prints a Markdown table.

    python benchmarks/controller_bench.py [--keys 100000] [--pods 10000] [--jobs 20000] [--sim]
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any

from prometheus_client import generate_latest

from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.queue import WorkQueue
from nvcre.runtime.metrics.registry import ControllerMetrics


def _obj(namespace: str, name: str, labels: dict[str, str], life: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name, "labels": labels, "resourceVersion": "1"},
        "status": {"conditions": [{"type": life, "status": "True", "reason": "R", "message": ""}]},
    }


def bench_queue(keys: int) -> dict[str, float]:
    queue: WorkQueue[tuple[str, str]] = WorkQueue()
    started = time.perf_counter()
    for i in range(keys):
        key = ("ns", f"k{i}")
        queue.add(key)
        queue.add(key)  # a duplicate costs a set lookup, nothing more
    for _ in range(keys):
        queue.done(queue.get(timeout=1))
    elapsed = time.perf_counter() - started
    return {"keys": keys, "seconds": elapsed, "ops_per_second": keys / elapsed}


def bench_store(pods: int) -> dict[str, float]:
    items = [_obj("ns", f"pod-{i}", {"nvcre.nvidia.com/job": f"job-{i % 500}"}, "InProgress") for i in range(pods)]
    store = Store(("nvcre.nvidia.com/job",))
    started = time.perf_counter()
    events, _ = store.replace(items)
    relist = time.perf_counter() - started
    started = time.perf_counter()
    for j in range(100):
        store.list("ns", {"nvcre.nvidia.com/job": f"job-{j}"})
    scan = (time.perf_counter() - started) / 100
    started = time.perf_counter()
    for j in range(100):
        store.by_label("ns", "nvcre.nvidia.com/job", f"job-{j}")
    indexed = (time.perf_counter() - started) / 100
    return {"pods": pods, "relist_ms": relist * 1000, "events": len(events), "label_scan_ms": scan * 1000, "label_index_ms": indexed * 1000}


def bench_scrape(jobs: int) -> dict[str, float]:
    lives = ("InProgress", "Succeeded", "Failed")
    stores = {plural: Store() for plural in ("certifications", "workflows", "jobs", "bandwidthmeasurements")}
    certs = max(1, jobs // 20)
    flows = max(1, jobs // 4)
    stores["certifications"].replace(_obj("ns", f"c{i}", {}, lives[i % 3]) for i in range(certs))
    stores["workflows"].replace(
        _obj("ns", f"w{i}", {"nvcre.nvidia.com/certification": f"c{i % certs}"}, lives[i % 3]) for i in range(flows)
    )
    stores["jobs"].replace(_obj("ns", f"j{i}", {"nvcre.nvidia.com/workflow": f"w{i % flows}"}, lives[i % 3]) for i in range(jobs))
    metrics = ControllerMetrics(stores, lambda: True)
    started = time.perf_counter()
    body = generate_latest(metrics.registry)
    elapsed = time.perf_counter() - started
    return {"objects": certs + flows + jobs, "scrape_ms": elapsed * 1000, "bytes": len(body)}


def bench_sim() -> dict[str, float]:
    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.runtime.kube.resources import CERTIFICATIONS
    from nvcre.runtime.reconcile.context import Settings
    from nvcre.testing.simcluster import SimCluster

    with SimCluster() as sim:
        nodes = sim.add_nodes(profile="h100", count=4, prefix="bench")
        kube = ApiServerClient.from_kubeconfig(str(sim.kubeconfig))
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        config = ControllerConfig(
            namespace="bench", metrics_address="0", health_address="0", leader_elect=False, settings=Settings(poll_interval=1.0)
        )
        controller = Controller(kube, config).start()
        try:
            started = time.perf_counter()
            kube.create(
                {
                    "apiVersion": "nvcre.nvidia.com/v1alpha1",
                    "kind": "Certification",
                    "metadata": {"name": "bench", "namespace": "bench"},
                    "spec": {"target": {"nodeNames": nodes}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
                }
            )
            while True:
                life = cond.lifecycle(kube.get(CERTIFICATIONS, "bench", "bench").get("status"))
                if life in ("Succeeded", "Failed") or time.perf_counter() - started > 300:
                    break
                time.sleep(0.2)
            elapsed = time.perf_counter() - started
        finally:
            controller.stop()
            kube.close()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"verdict": life, "seconds_to_verdict": elapsed, "peak_rss_mib": rss_mib}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--sim", action="store_true", help="also time a Certification on the simulated cluster")
    args = parser.parse_args()
    rows = [
        ("work queue", bench_queue(args.keys)),
        ("store relist + filtered list", bench_store(args.pods)),
        ("/metrics scrape", bench_scrape(args.jobs)),
    ]
    if args.sim:
        rows.append(("simulated cluster, 4-node nccl-all-reduce", bench_sim()))
    print("| measurement | result |")
    print("|---|---|")
    for name, values in rows:
        cells = ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
