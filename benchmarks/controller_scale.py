#!/usr/bin/env python3
"""The controller at scale: one Certification over thousands of simulated GPU nodes.

Starts the simulated cluster, registers ``--nodes`` GPU nodes (kwok plays their kubelets), then
for each scenario starts the controller as a child process (``--serve-controller``: the normal
controller plus a count of node health evaluations), submits one Certification in a namespace
of its own and waits for its verdict:

* ``full-scale``: ``communication/nccl-all-reduce`` over node groups of ``--nodes-per-job``;
* ``intra-node``: the same category with ``testScale: intra-node``, one Job per node.

Per scenario it reports the controller's peak RSS (``VmHWM`` from ``/proc``), the API requests
the controller sent (counted client side, read from ``nvcre_api_requests_total`` on its
``/metrics``) in total and per Job, the work queues' wait (mean, from the histogram; longest),
node events and health evaluations per node event, and ``plan_workflow``'s wall time on the
Workflow the controller created with the cluster's real Node objects. It also reads the API
server's own ``/metrics`` before and after each scenario (``apiserver_side.py``): every client's
requests by verb, LIST and WATCH calls by resource, objects held, watches open, the largest
answers, and the server's and etcd's peak RSS. A run that does not succeed also keeps the
Certification's conditions and its failed nodes counted by reason. Prints a table (or JSON).

Every process it starts belongs to the simulated cluster and is stopped on exit, on Ctrl-C and
on failure. A benchmark, not a test: run it by hand on a quiet machine.

    python benchmarks/controller_scale.py [--nodes 2000] [--nodes-per-job 8] [--quick]
        [--scenario full-scale --scenario intra-node] [--timeout 1800] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procstat import cpu_seconds, proc_status_kib

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("full-scale", "intra-node")
CATEGORY = {"domain": "communication", "variant": "nccl-all-reduce"}
MiB = 1024 * 1024

# ------------------------------------------------------------------ small pure helpers


def cpu_snapshot(pids: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process that can still be read."""
    out = {}
    for name, pid in pids.items():
        used = cpu_seconds(pid)
        if used is not None:
            out[name] = used
    return out


def cpu_shares(before: Mapping[str, float], after: Mapping[str, float], seconds: float) -> dict[str, Any]:
    """CPU seconds each process used between two snapshots, busiest first, with the machine's
    cores that the whole set kept busy on average."""
    used = {name: round(after[name] - before.get(name, 0.0), 1) for name in after}
    ordered = dict(sorted(used.items(), key=lambda kv: -kv[1]))
    total = sum(ordered.values())
    return {
        "cpu_seconds_by_process": ordered,
        "cpu_seconds_total": round(total, 1),
        "cores_busy_on_average": round(total / seconds, 2) if seconds > 0 else None,
        "cores": os.cpu_count(),
    }


@dataclass
class Scrape:
    """The samples of one ``/metrics`` answer that this benchmark reads."""

    requests: dict[tuple[str, str], float] = field(default_factory=dict)
    queue_wait_sum: dict[str, float] = field(default_factory=dict)
    queue_wait_count: dict[str, float] = field(default_factory=dict)
    queue_longest: dict[str, float] = field(default_factory=dict)
    queue_adds: dict[str, float] = field(default_factory=dict)
    queue_coalesced: dict[str, float] = field(default_factory=dict)
    node_events: dict[str, float] = field(default_factory=dict)
    reconciles: dict[tuple[str, str], float] = field(default_factory=dict)
    reconcile_seconds: dict[str, float] = field(default_factory=dict)
    health_evaluations: float = 0.0


def parse_metrics(text: str) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    out = Scrape()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels, value = sample.labels, float(sample.value)
            if sample.name == "nvcre_api_requests_total":
                out.requests[(labels["verb"], labels["resource"])] = value
            elif sample.name == "nvcre_workqueue_queue_duration_seconds_sum":
                out.queue_wait_sum[labels["name"]] = value
            elif sample.name == "nvcre_workqueue_queue_duration_seconds_count":
                out.queue_wait_count[labels["name"]] = value
            elif sample.name == "nvcre_workqueue_longest_wait_seconds":
                out.queue_longest[labels["name"]] = value
            elif sample.name == "nvcre_workqueue_adds_total":
                out.queue_adds[labels["name"]] = value
            elif sample.name == "nvcre_workqueue_coalesced_adds_total":
                out.queue_coalesced[labels["name"]] = value
            elif sample.name == "nvcre_node_events_total":
                out.node_events[labels["result"]] = value
            elif sample.name == "nvcre_controller_reconcile_duration_seconds_sum":
                out.reconcile_seconds[labels["controller"]] = value
            elif sample.name == "nvcre_controller_reconcile_total":
                out.reconciles[(labels["controller"], labels["result"])] = value
            elif sample.name == "nvcre_bench_health_evaluations_total":
                out.health_evaluations = value
    return out


def grew(after: Mapping[Any, float], before: Mapping[Any, float]) -> dict[Any, float]:
    """Per-key growth between two scrapes (keys that did not grow are left out)."""
    out = {key: value - before.get(key, 0.0) for key, value in after.items()}
    return {key: value for key, value in out.items() if value > 0}


def summarise(
    name: str,
    jobs: int,
    nodes: int,
    before: Scrape,
    after: Scrape,
    *,
    peak_rss_kib: int | None,
    seconds: float,
    verdict: str,
    plan_seconds: Sequence[float],
) -> dict[str, Any]:
    """One scenario's row: the growth between the scrape at submit and the one at the verdict."""
    requests = grew(after.requests, before.requests)
    total = sum(requests.values())
    lease = sum(v for (_, resource), v in requests.items() if resource == "leases")
    watches = sum(v for (verb, _), v in requests.items() if verb == "watch")
    waits = grew(after.queue_wait_count, before.queue_wait_count)
    wait_sum = grew(after.queue_wait_sum, before.queue_wait_sum)
    handed = sum(waits.values())
    events = grew(after.node_events, before.node_events)
    relevant = events.get("relevant", 0.0)
    health = after.health_evaluations - before.health_evaluations
    per_job = {f"{verb} {resource}": round(v / jobs, 2) for (verb, resource), v in sorted(requests.items())} if jobs else {}
    return {
        "scenario": name,
        "nodes": nodes,
        "jobs": jobs,
        "verdict": verdict,
        "seconds_to_verdict": round(seconds, 1),
        "controller_peak_rss_mib": round(peak_rss_kib / 1024, 1) if peak_rss_kib else None,
        "api_requests": int(total),
        "api_requests_per_job": round(total / jobs, 2) if jobs else None,
        "api_requests_per_job_without_lease_and_watch": round((total - lease - watches) / jobs, 2) if jobs else None,
        "api_requests_by_kind_per_job": per_job,
        "queue_keys_handed_out": int(handed),
        "queue_mean_wait_ms": round(1000 * sum(wait_sum.values()) / handed, 2) if handed else None,
        "queue_longest_wait_ms": {k: round(1000 * v, 1) for k, v in sorted(after.queue_longest.items()) if v > 0},
        "queue_coalesced_adds": int(sum(grew(after.queue_coalesced, before.queue_coalesced).values())),
        "queue_adds": int(sum(grew(after.queue_adds, before.queue_adds).values())),
        "reconciles": {f"{c}/{r}": int(v) for (c, r), v in sorted(grew(after.reconciles, before.reconciles).items())},
        "reconcile_seconds": {c: round(v, 1) for c, v in sorted(grew(after.reconcile_seconds, before.reconcile_seconds).items())},
        "node_events_relevant": int(relevant),
        "node_events_ignored": int(events.get("ignored", 0.0)),
        "health_evaluations": int(health),
        "health_evaluations_per_relevant_node_event": round(health / relevant, 2) if relevant else None,
        "plan_ms_median": round(1000 * statistics.median(plan_seconds), 1) if plan_seconds else None,
        "plan_ms_worst": round(1000 * max(plan_seconds), 1) if plan_seconds else None,
    }


# ------------------------------------------------------------------ the controller child


def serve_controller(args: argparse.Namespace) -> int:
    """Run the controller as ``python -m nvcre.runtime`` would, counting health evaluations."""
    from prometheus_client import Counter

    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.judge import health
    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.runtime.logs import configure
    from nvcre.runtime.reconcile.context import Settings

    configure("warning")
    if args.memory_report:
        _trace_memory(Path(args.memory_report), args.memory_every)
    kube = ApiServerClient.from_kubeconfig(args.kubeconfig)
    config = ControllerConfig(
        namespace=args.namespace,
        metrics_address=f"127.0.0.1:{args.metrics_port}",
        health_address=f"127.0.0.1:{args.health_port}",
        leader_elect=True,
        lease_namespace=args.namespace,
        workers=args.workers,
        settings=Settings(poll_interval=args.poll_interval),
    )
    controller = Controller(kube, config)
    if args.heap_report:
        _report_heap(Path(args.heap_report), args.memory_every, controller)
    evaluations = Counter("nvcre_bench_health_evaluations", "Node health monitor evaluations", registry=controller.metrics.registry)
    original = health.NodeHealthMonitor.check

    def counted(self: Any, node: Mapping[str, Any]) -> Any:
        evaluations.inc()
        return original(self, node)

    health.NodeHealthMonitor.check = counted  # type: ignore[method-assign]
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        return controller.run(stop)
    finally:
        kube.close()


def _trace_memory(path: Path, every: float) -> None:
    """Trace allocations and, every ``every`` seconds, append the 25 places holding the most
    live memory (4 frames each) to ``path``: where a growing controller keeps its memory."""
    import tracemalloc

    tracemalloc.start(4)
    began = time.monotonic()

    def dump() -> None:
        while True:
            time.sleep(every)
            snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
            stats = snapshot.statistics("traceback")
            total = sum(s.size for s in stats)
            lines = [f"== {time.monotonic() - began:.0f}s: {total / MiB:.1f} MiB traced in {len(stats)} places"]
            for stat in stats[:25]:
                lines.append(f"{stat.size / MiB:8.2f} MiB {stat.count:9d} blocks")
                lines.extend(f"      {frame.filename}:{frame.lineno}" for frame in stat.traceback)
            with path.open("a") as out:
                out.write("\n".join(lines) + "\n")

    threading.Thread(target=dump, name="memory-report", daemon=True).start()


def _report_heap(path: Path, every: float, controller: Any) -> None:
    """Every ``every`` seconds append one line to ``path``: resident memory, the C heap's bytes
    in use and free (glibc ``mallinfo2``, all arenas), Python's allocated blocks and the size of
    each informer cache: whether memory is held by live objects or by the allocator."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )]  # fmt: skip

    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
        mallinfo2.restype = MallInfo2
    except (OSError, AttributeError):
        mallinfo2 = None
    began = time.monotonic()

    def line() -> str:
        rss = proc_status_kib(os.getpid(), "VmRSS") or 0
        fields = [f"t={time.monotonic() - began:.0f}s", f"rss={rss / 1024:.0f}MiB", f"pyblocks={sys.getallocatedblocks()}"]
        if mallinfo2 is not None:
            info = mallinfo2()
            fields += [f"heap_used={info.uordblks / MiB:.0f}MiB", f"heap_free={info.fordblks / MiB:.0f}MiB",
                       f"mmapped={info.hblkhd / MiB:.0f}MiB"]  # fmt: skip
        fields += [f"{plural}={len(store.list())}" for plural, store in sorted(controller.stores.items())]
        return " ".join(fields)

    def loop() -> None:
        while True:
            with path.open("a") as out:
                out.write(line() + "\n")
            time.sleep(every)

    threading.Thread(target=loop, name="heap-report", daemon=True).start()


# ------------------------------------------------------------------ the driver


def _get(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode("utf-8"))


def certification(namespace: str, scenario: str, nodes_per_job: int, timeout_per_job: str = "20m") -> dict[str, Any]:
    options: dict[str, Any] = {"testScale": "intra-node"} if scenario == "intra-node" else {"nodesPerJob": nodes_per_job}
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "scale", "namespace": namespace},
        "spec": {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "timeoutPerJob": timeout_per_job,
            "categories": [{**CATEGORY, "options": options}],
        },
    }


def time_plan(workflow: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], repeat: int) -> list[float]:
    from nvcre.compiler.facts import facts_from_documents
    from nvcre.compiler.plan import plan_workflow

    facts = facts_from_documents([dict(n) for n in nodes])
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        plan_workflow(workflow, facts)
        times.append(time.perf_counter() - began)
    return times


def failure_summary(kube: Any, namespace: str, workflows: Sequence[Mapping[str, Any]], examples: int = 5) -> dict[str, Any]:
    """The Certification's conditions, and the failed-node entries of its Workflows counted by
    reason with a few of their messages: what a run that did not succeed says about itself."""
    from collections import Counter

    from nvcre.runtime.compile import stored_failed_nodes
    from nvcre.runtime.kube.errors import ApiError
    from nvcre.runtime.kube.resources import CERTIFICATIONS, CONFIGMAPS

    status = kube.get(CERTIFICATIONS, "scale", namespace).get("status") or {}
    conditions = [{key: c.get(key) for key in ("type", "status", "reason", "message")} for c in status.get("conditions") or []]
    reasons: Counter[str] = Counter()
    messages: dict[str, list[str]] = {}
    for wf in workflows:
        ref = ((wf.get("status") or {}).get("failedNodesRef") or {}).get("name")
        if not ref:
            continue
        try:
            entries = stored_failed_nodes(kube.get(CONFIGMAPS, str(ref), namespace))
        except ApiError:
            continue
        for entry in entries:
            reason = str(entry.get("reason") or "")
            reasons[reason] += 1
            shown = messages.setdefault(reason, [])
            if len(shown) < examples:
                shown.append(str(entry.get("message") or "")[:300])
    return {"conditions": conditions, "failed_nodes_by_reason": dict(reasons.most_common()), "examples": messages}


def run_scenario(sim: Any, kube: Any, admin: Any, args: argparse.Namespace, scenario: str, nodes: int) -> dict[str, Any]:
    import apiserver_side

    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import CERTIFICATIONS, JOBS, NODES, WORKFLOWS
    from nvcre.testing.processes import free_port

    namespace = f"scale-{scenario}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    metrics_port, health_port = free_port(), free_port()
    argv = [
        sys.executable, str(Path(__file__).resolve()), "--serve-controller",
        f"--kubeconfig={sim.kubeconfig}", f"--namespace={namespace}",
        f"--metrics-port={metrics_port}", f"--health-port={health_port}",
        f"--poll-interval={args.poll_interval}", f"--workers={args.workers}",
    ]  # fmt: skip
    for flag in ("memory_report", "heap_report"):
        if getattr(args, flag):
            argv += [f"--{flag.replace('_', '-')}={getattr(args, flag)}", f"--memory-every={args.memory_every}"]
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"

    def ready() -> bool:
        return _get(f"http://127.0.0.1:{health_port}/readyz") == "ok\n"

    process = sim.plane.start_process(f"nvcre-controller-{scenario}", argv, ready=ready, what="controller /readyz")
    try:
        # Leadership and the first sweep of the caches happen before the Certification exists.
        time.sleep(3.0)
        before = parse_metrics(_get(metrics_url))
        server_before = apiserver_side.parse(apiserver_side.fetch(admin))
        # every process of the simulated cluster (the controller is one of them, started above)
        # and this driver (the simulated workload's player runs in it)
        watched = {**sim.pids, "benchmark driver and player": os.getpid()}
        cpu_before = cpu_snapshot(watched)
        began = time.monotonic()
        kube.create(certification(namespace, scenario, args.nodes_per_job, args.timeout_per_job))
        verdict, last_note = "timeout", 0.0
        while time.monotonic() - began < args.timeout:
            if not process.running():
                raise RuntimeError(f"the controller exited; last log lines:\n{process.tail()}")
            status = kube.get(CERTIFICATIONS, "scale", namespace).get("status") or {}
            life = cond.lifecycle(status)
            if life in (cond.SUCCEEDED, cond.FAILED):
                verdict = str(life)
                break
            if time.monotonic() - last_note > 30:
                last_note = time.monotonic()
                rss = proc_status_kib(process.pid, "VmRSS")
                # A scrape every 30 s, as Prometheus would; it also gives the count of Jobs
                # created (listing thousands of Jobs here would load the API server).
                created = int(parse_metrics(_get(metrics_url)).requests.get(("create", "jobs"), 0.0))
                print(
                    f"  [{scenario}] {time.monotonic() - began:6.0f}s  jobs created={created}"
                    f"  controller RSS={rss and round(rss / 1024)} MiB  {life}",
                    file=sys.stderr, flush=True,
                )  # fmt: skip
            time.sleep(2.0)
        seconds = time.monotonic() - began
        cpu_after = cpu_snapshot(watched)
        time.sleep(1.0)
        after = parse_metrics(_get(metrics_url))
        server_after = apiserver_side.parse(apiserver_side.fetch(admin))
        peak = proc_status_kib(process.pid, "VmHWM")
        jobs = len(kube.list(JOBS, namespace).items)
        workflows = kube.list(WORKFLOWS, namespace).items
        # why a run did not succeed, kept before the cluster (and its objects) goes
        why = failure_summary(kube, namespace, workflows) if verdict != str(cond.SUCCEEDED) else None
        plan_times = time_plan(workflows[0], kube.list(NODES).items, args.plan_repeat) if workflows else []
    finally:
        process.stop()
    row = summarise(scenario, jobs, nodes, before, after, peak_rss_kib=peak, seconds=seconds, verdict=verdict, plan_seconds=plan_times)
    row["apiserver"] = apiserver_side.summarise(server_before, server_after, jobs=jobs)
    row["cpu"] = cpu_shares(cpu_before, cpu_after, seconds)
    if why is not None:
        row["failure"] = why
    for name in ("kube-apiserver", "etcd"):
        pid = sim.pids.get(name)
        hwm = proc_status_kib(pid, "VmHWM") if pid else None
        row["apiserver"][f"{name}_peak_rss_mib"] = round(hwm / 1024, 1) if hwm else None
    return row


def drive(args: argparse.Namespace) -> dict[str, Any]:
    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.testing.simcluster import LARGE, Capacity, SimCluster

    capacity = Capacity() if args.upstream_capacity else LARGE
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "python": sys.version.split()[0], "capacity": vars(capacity), "scenarios": [],
    }  # fmt: skip
    with SimCluster(capacity=capacity) as sim:
        began = time.monotonic()
        names = sim.add_nodes(profile=args.profile, count=args.nodes, prefix="scale", wait=True, timeout=args.ready_timeout, workers=8)
        results["nodes_ready_seconds"] = round(time.monotonic() - began, 1)
        kube = ApiServerClient.from_kubeconfig(str(sim.kubeconfig))
        admin = sim.api_client()
        try:
            print(f"{len(names)} nodes Ready in {results['nodes_ready_seconds']} s", file=sys.stderr, flush=True)
            for scenario in args.scenario or SCENARIOS:
                row = run_scenario(sim, kube, admin, args, scenario, len(names))
                results["scenarios"].append(row)
                print(f"  [{scenario}] done: {json.dumps(row)}", file=sys.stderr, flush=True)
        finally:
            kube.close()
            admin.close()
    return results


def table(results: Mapping[str, Any]) -> str:
    rows = [
        ("nodes / Jobs", lambda r: f"{r['nodes']} / {r['jobs']}"),
        ("verdict, seconds", lambda r: f"{r['verdict']}, {r['seconds_to_verdict']}"),
        ("controller peak RSS (VmHWM, MiB)", lambda r: r["controller_peak_rss_mib"]),
        ("API requests (total)", lambda r: r["api_requests"]),
        ("API requests per Job", lambda r: r["api_requests_per_job"]),
        ("  without lease renewals and watches", lambda r: r["api_requests_per_job_without_lease_and_watch"]),
        ("work queue: keys handed out / coalesced adds", lambda r: f"{r['queue_keys_handed_out']} / {r['queue_coalesced_adds']}"),
        ("work queue: mean wait (ms)", lambda r: r["queue_mean_wait_ms"]),
        ("work queue: longest wait (ms)", lambda r: max(r["queue_longest_wait_ms"].values(), default=0)),
        ("node events relevant / ignored", lambda r: f"{r['node_events_relevant']} / {r['node_events_ignored']}"),
        (
            "health evaluations (per relevant node event)",
            lambda r: f"{r['health_evaluations']} ({r['health_evaluations_per_relevant_node_event']})",
        ),
        ("plan_workflow on the live Nodes (ms, median / worst)", lambda r: f"{r['plan_ms_median']} / {r['plan_ms_worst']}"),
        (
            "API server: requests served, all clients (per Job)",
            lambda r: f"{r['apiserver']['requests']} ({r['apiserver']['requests_per_job']})",
        ),
        (
            "API server: LIST / WATCH calls",
            lambda r: f"{r['apiserver']['requests_by_verb'].get('LIST', 0)} / {r['apiserver']['requests_by_verb'].get('WATCH', 0)}",
        ),
        (
            "API server: objects held at the verdict (estimated MiB)",
            lambda r: f"{r['apiserver']['objects_held_total']} ({r['apiserver']['objects_held_mib']})",
        ),
        ("API server: objects returned by LISTs", lambda r: r["apiserver"]["list_objects_returned"]),
        (
            "API server: watches open / watch events sent",
            lambda r: f"{r['apiserver']['watches_open']} / {r['apiserver']['watch_events_sent']}",
        ),
        ("API server: largest answer (bytes, bucket bound)", lambda r: _largest(r["apiserver"])),
        (
            "CPU seconds: the controller / everything (cores busy on average)",
            lambda r: (
                f"{r['cpu']['cpu_seconds_by_process'].get('nvcre-controller')} / {r['cpu']['cpu_seconds_total']}"
                f" ({r['cpu']['cores_busy_on_average']} of {r['cpu']['cores']})"
            ),
        ),
        (
            "kube-apiserver / etcd peak RSS (MiB, since start)",
            lambda r: f"{r['apiserver']['kube-apiserver_peak_rss_mib']} / {r['apiserver']['etcd_peak_rss_mib']}",
        ),
    ]
    scenarios = results["scenarios"]
    lines = ["| measure | " + " | ".join(s["scenario"] for s in scenarios) + " |", "|---" * (len(scenarios) + 1) + "|"]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(str(cell(s)) for s in scenarios) + " |")
    lines.append("")
    for s in scenarios:
        lines.append(f"{s['scenario']}: requests per Job by verb and resource: {json.dumps(s['api_requests_by_kind_per_job'])}")
        lines.append(f"{s['scenario']}: reconciles: {json.dumps(s['reconciles'])}")
        lines.append(f"{s['scenario']}: seconds spent reconciling, by tier: {json.dumps(s['reconcile_seconds'])}")
        server = s["apiserver"]
        lines.append(f"{s['scenario']}: API server, busiest requests: {json.dumps(server['top_requests'])}")
        lines.append(f"{s['scenario']}: API server, LIST calls by resource: {json.dumps(server['lists_by_resource'])}")
        lines.append(f"{s['scenario']}: API server, answers with an error: {json.dumps(server['errors_by_code'])}")
        lines.append(f"{s['scenario']}: API server, objects held: {json.dumps(server['objects_held'])}")
        lines.append(f"{s['scenario']}: API server, largest answers: {json.dumps(server['largest_answers'])}")
        lines.append(f"{s['scenario']}: CPU seconds by process: {json.dumps(s['cpu']['cpu_seconds_by_process'])}")
        if "failure" in s:
            lines.append(f"{s['scenario']}: why it did not succeed: {json.dumps(s['failure'])}")
    return "\n".join(lines)


def _largest(server: Mapping[str, Any]) -> str:
    if not server["largest_answers"]:
        return "-"
    first = server["largest_answers"][0]
    bound = first["at_most_bytes"]
    return f"{first['request']}: {'over the last bucket' if bound is None else f'<= {bound}'}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--nodes", type=int, default=2000)
    p.add_argument("--nodes-per-job", type=int, default=8)
    p.add_argument("--quick", action="store_true", help="40 nodes, 4 per Job: a smoke run of the whole path")
    p.add_argument("--scenario", action="append", choices=SCENARIOS, help="repeatable; default: both")
    p.add_argument("--profile", default="h100")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for each verdict")
    p.add_argument("--ready-timeout", type=float, default=900.0, help="seconds for the nodes to become Ready")
    p.add_argument(
        "--timeout-per-job",
        default="20m",
        help="the Certification's timeoutPerJob; at 10,000 nodes two cores run Jobs so slowly that most wait past 20m",
    )
    p.add_argument("--poll-interval", type=float, default=15.0, help="the controller's poll interval (its default: 15)")
    p.add_argument("--workers", type=int, default=2, help="reconcile workers per tier (the controller's default: 2)")
    p.add_argument("--plan-repeat", type=int, default=5)
    p.add_argument(
        "--upstream-capacity", action="store_true",
        help="run the simulated control plane with upstream client limits and 10 s node Leases (default: the large capacity)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--memory-report", metavar="PATH",
        help="trace the controller's allocations and append where its live memory sits to PATH (slows it down)",
    )  # fmt: skip
    p.add_argument(
        "--heap-report", metavar="PATH",
        help="append the controller's RSS, C heap in use and free, and cache sizes to PATH (cheap)",
    )  # fmt: skip
    p.add_argument("--memory-every", type=float, default=120.0, help="seconds between report entries")
    # the child mode (internal)
    p.add_argument("--serve-controller", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    p.add_argument("--namespace", help=argparse.SUPPRESS)
    p.add_argument("--metrics-port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--health-port", type=int, default=0, help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.serve_controller:
        return serve_controller(args)
    if args.quick:
        args.nodes, args.nodes_per_job = 40, 4
    if args.nodes < 1 or args.nodes_per_job < 1:
        print("error: --nodes and --nodes-per-job must be at least 1", file=sys.stderr)
        return 2

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    # SIGTERM (and SIGINT, which a shell leaves ignored for background jobs) unwind through the
    # simulated cluster's context manager, which stops every process it started.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    try:
        results = drive(args)
    except KeyboardInterrupt:
        print("interrupted; the simulated cluster was stopped", file=sys.stderr)
        return 130
    print(json.dumps(results, indent=2) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
