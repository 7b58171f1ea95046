"""Benchmark the real-node environment on the run a platform team would try first: N real h100
nodes (default 4) with JobSet, the Trainer and the nvcre controller, then one Certification of
the NCCL all-reduce, the DCGM diagnostic and the training category, run with the installed
``nvcrectl`` as a user runs it.

Prints (or ``--json``): the bring-up's wall time and its phases, the stack's resident memory idle
and at its peak during the run, the run's verdict, wall time and each category's status, the
stop's time, and whether the host was left as it was found. Exit status 1 when the run did not
pass or the host was not put back.

Needs root, the Debian tools and the real-node build (``make controlplane``); the workload image
is built on first use and cached. A benchmark, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: real-nodes-three-categories
spec:
  target:
    nodeSelector:
      nvidia.com/gpu.present: "true"
    taintSelectors:
    - key: nvidia.com/gpu
      effect: NoSchedule
  categories:
  - domain: communication
    variant: nccl-all-reduce
    options:
      nodesPerJob: 2
      gpusPerNode: 2
      maxBytes: 1M
      numIterations: 5
      numCycles: 1
  - domain: diagnostics
    variant: dcgm-level4
    options:
      gpusPerNode: 4
  - domain: training
    variant: nemotron5-8b
    options:
      nodesPerJob: 2
      gpusPerNode: 2
      maxSteps: 50
      resources:
        limits: {cpu: "2", memory: 2Gi}
        requests: {cpu: 100m, memory: 256Mi}
"""


def _mib(value: int) -> int:
    return round(value / (1 << 20))


def run_certification(kubeconfig: Path, workdir: Path) -> dict[str, Any]:
    """``nvcrectl certification run --wait`` of the three categories; its verdict and wall time."""
    cert, results = workdir / "certification.yaml", workdir / "results.json"
    cert.write_text(CERTIFICATION)
    binary = str(Path(sys.executable).with_name("nvcrectl"))
    argv = [binary, "certification", "run", "--cert-file", str(cert), "--grant-run-access", "--wait", "--timeout", "20m"]
    began = time.monotonic()
    done = subprocess.run(
        [*argv, "--results-file", str(results)],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    seconds = time.monotonic() - began
    report = json.loads(results.read_text()) if results.is_file() else {}
    categories = {f"{c.get('domain')}/{c.get('variant')}": c.get("status") for c in report.get("categories") or []}
    return {
        "exit": done.returncode,
        "result": report.get("result"),
        "seconds": round(seconds, 1),
        "categories": categories,
        "failedNodes": report.get("failedNodes"),
        "stderrTail": done.stderr[-1500:] if done.returncode else "",
    }


def measure(nodes: int) -> dict[str, Any]:
    from nvcre.testing.realnodes import footprint, hoststate
    from nvcre.testing.realnodes.cluster import RealCluster

    before = hoststate.snapshot()
    cluster = RealCluster(profile_name="h100", nodes=nodes, workload_images=True, controllers=True)
    out: dict[str, Any] = {"nodes": nodes}
    began = time.monotonic()
    try:
        cluster.start()
        out["bringUpSeconds"] = round(time.monotonic() - began, 1)
        out["bringUpPhases"] = {name: round(value, 1) for name, value in cluster.timings.items()}
        out["idleMiB"] = _mib(footprint.total_rss(footprint.stack_pids(cluster)))
        with tempfile.TemporaryDirectory(prefix="nvcre-rn-bench-") as scratch, footprint.PeakSampler(cluster) as sampler:
            out["run"] = run_certification(cluster.kubeconfig, Path(scratch))
        out["peakMiB"] = _mib(sampler.peak)
    finally:
        stopping = time.monotonic()
        cluster.stop()
        out["stopSeconds"] = round(time.monotonic() - stopping, 1)
    out["hostDifferences"] = hoststate.differences(before, hoststate.snapshot())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="real nodes to start (default 4)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.nodes < 2:
        parser.error("--nodes: at least 2 (the NCCL and training categories run on pairs)")
    out = measure(args.nodes)
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        run = out.get("run") or {}
        print(f"nodes                 {out['nodes']}")
        print(f"bring-up              {out.get('bringUpSeconds')} s  {out.get('bringUpPhases')}")
        print(f"stack RSS idle / peak {out.get('idleMiB')} / {out.get('peakMiB')} MiB")
        print(f"certification         {run.get('result')} in {run.get('seconds')} s  {run.get('categories')}")
        print(f"stop                  {out.get('stopSeconds')} s; host differences: {out['hostDifferences'] or 'none'}")
        if run.get("stderrTail"):
            print(run["stderrTail"], file=sys.stderr)
    passed = (out.get("run") or {}).get("result") == "PASSED"
    return 0 if passed and not out["hostDifferences"] else 1


if __name__ == "__main__":
    sys.exit(main())
