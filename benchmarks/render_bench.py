"""Render benchmarks: wall time and peak memory of the compiler on representative Certifications.

Run: ``.venv/bin/python benchmarks/render_bench.py [--repeat N]``. Prints one line per case with
the median and worst wall time over the repeats and the peak traced Python memory of one render.
The numbers and the machine they came from are recorded in ``docs/benchmarks.md``; nothing here
asserts a time, so a slow machine never fails a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.facts import load_facts
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_file

REPO = Path(__file__).resolve().parent.parent


def _cert(categories: list[dict]) -> dict:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "bench"},
            "spec": {"target": {}, "categories": categories}}


def cases() -> list[tuple[str, dict, dict]]:
    keys = load_catalog().keys()
    every = [{"domain": k.split("/")[0], "variant": k.split("/")[1], "options": {"nodesPerJob": 8}} for k in keys]
    sixty_four = [{"domain": k.split("/")[0], "variant": k.split("/")[1], "options": {"nodesPerJob": 8, "maxSteps": i + 1}}
                  for i, k in enumerate(keys * 8)]
    facts = REPO / "tests/fixtures/facts/onprem-gb200-rdma.yaml"
    return [
        ("example, 4 categories, flags", load_file(REPO / "examples/certification.yaml")[0], {"platform": "onprem", "gpu_arch": "gb300"}),
        ("every catalog entry, aws h100", _cert(every), {"platform": "aws", "gpu_arch": "h100"}),
        ("every catalog entry, from facts", _cert(every), {"facts": load_facts(facts)}),
        ("64 categories (the API maximum)", _cert(sixty_four), {"platform": "oci", "gpu_arch": "gb200"}),
    ]


def measure(document: dict, kwargs: dict, repeat: int) -> tuple[float, float, float, int]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        rendered = render_certification(document, **kwargs)
        dump_yaml_stream(rendered.workflows)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    rendered = render_certification(document, **kwargs)
    size = len(dump_yaml_stream(rendered.workflows))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), max(times), peak / 2**20, size


def cli_start(repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nvcre.cli.main", "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    load_catalog(), load_overlays()  # warm caches: a long-running controller pays this once
    print(f"{'case':<36} {'median s':>9} {'worst s':>8} {'peak MiB':>9} {'output KiB':>10}")
    for name, document, kwargs in cases():
        median, worst, peak, size = measure(document, kwargs, args.repeat)
        print(f"{name:<36} {median:>9.3f} {worst:>8.3f} {peak:>9.1f} {size / 1024:>10.1f}")
    print(f"{'nvcrectl --help (process start)':<36} {cli_start(args.repeat):>9.3f}")


if __name__ == "__main__":
    main()
