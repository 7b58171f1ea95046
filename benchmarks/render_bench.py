"""Render benchmarks: in-process renders, the whole platform x GPU x entry matrix, and cold processes.

Run: ``.venv/bin/python benchmarks/render_bench.py [--repeat N] [--cold N] [--skip-cold]``.

Four sections, each one line per measurement; nothing here asserts a time, so a slow machine
never fails a test, and the numbers with their machine are recorded in ``docs/benchmarks.md``:

* **in-process cases**: median and worst wall time over the repeats of representative
  Certifications (catalog and overlays loaded once, as in a long-running controller), the peak
  traced Python memory of one render and the size of its YAML;
* **matrix**: every catalog entry on every platform x GPU pair, rendered and emitted in one
  process (the first pass pays for template compilation, later passes show a warm controller),
  with the SHA-256 of all the YAML of a pass, so a change that must not alter any output can
  be checked by comparing it before and after;
* **cold phases**: where a fresh interpreter spends its time on one render (imports, API
  validation, catalog and overlay loading, the passes, emission);
* **cold render vs kubectl kustomize**: ``nvcrectl certification render`` of every catalog entry
  on AWS H100 as a fresh process, alternating run for run with ``kubectl kustomize`` building the
  same rendered objects with one ``commonLabels`` transform (skipped when kubectl is absent), and
  with the same command run through the Typer application (``nvcre.cli.typer_app``), which is
  what every render went through before the fast path of ``nvcre.cli.render_shortcut``.
  The nvcrectl runs set ``NVCRE_NO_CACHE=1``, so no on-disk cache helps them. Their Python
  bytecode is kept under the run's temporary folder (``PYTHONPYCACHEPREFIX``, written by the
  first, untimed run, even when ``PYTHONDONTWRITEBYTECODE`` is set), as an installed package
  ships its compiled modules: otherwise every source file edited since its last compilation
  would be compiled again in every run and counted as render time.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import itertools
import os
import platform as host
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import platform_names
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.facts import load_facts
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_file

REPO = Path(__file__).resolve().parent.parent
KUBECTL = shutil.which("kubectl")


def _cert(categories: list[dict], name: str = "bench") -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name},
        "spec": {"target": {}, "categories": categories},
    }


def _every_entry(**options: int) -> list[dict]:
    return [{"domain": e.domain, "variant": e.variant, "options": {"nodesPerJob": 8, **options}} for e in load_catalog().entries]


def cases() -> list[tuple[str, dict, dict]]:
    keys = load_catalog().keys()
    sixty_four = [
        {"domain": k.split("/")[0], "variant": k.split("/")[1], "options": {"nodesPerJob": 8, "maxSteps": i + 1}}
        for i, k in enumerate(keys * 8)
    ]
    facts = REPO / "tests/fixtures/facts/onprem-gb200-rdma.yaml"
    return [
        ("example, 4 categories, flags", load_file(REPO / "examples/certification.yaml")[0], {"platform": "onprem", "gpu_arch": "gb300"}),
        ("every catalog entry, aws h100", _cert(_every_entry()), {"platform": "aws", "gpu_arch": "h100"}),
        ("every catalog entry, from facts", _cert(_every_entry()), {"facts": load_facts(facts)}),
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


def matrix(passes: int) -> list[tuple[float, float, int, int, str]]:
    """(wall s, CPU s, renders, output bytes, SHA-256 of the output) per pass over every
    platform x GPU pair, all entries each."""
    document = _cert(_every_entry(), name="matrix")
    pairs = list(itertools.product(platform_names(), sorted(load_catalog().gpu_defaults.architectures)))
    results = []
    for _ in range(passes):
        wall, cpu, size, digest = time.perf_counter(), time.process_time(), 0, hashlib.sha256()
        for platform, arch in pairs:
            text = dump_yaml_stream(render_certification(document, platform=platform, gpu_arch=arch).workflows)
            size += len(text)
            digest.update(f"# {platform} {arch}\n{text}".encode())
        results.append(
            (
                time.perf_counter() - wall,
                time.process_time() - cpu,
                len(pairs) * len(document["spec"]["categories"]),
                size,
                digest.hexdigest(),
            )
        )
    return results


# A fresh interpreter timing each phase of one render; it prints "phase seconds" lines.
_PHASES = """
import sys, time
start = time.perf_counter()
from nvcre.compiler.render import render_certification, validate_kind
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.yamlio import load_file
t_import = time.perf_counter()
document = load_file(sys.argv[1])[0]
validate_kind(document, "Certification")
t_validate = time.perf_counter()
from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.overlays import load_overlays
load_catalog(), load_overlays()
t_load = time.perf_counter()
rendered = render_certification(document, platform="aws", gpu_arch="h100")
t_render = time.perf_counter()
dump_yaml_stream(rendered.workflows)
t_emit = time.perf_counter()
print("imports", t_import - start)
print("API validation (first)", t_validate - t_import)
print("catalog + overlays", t_load - t_validate)
print("render (passes; the validation above is remembered)", t_render - t_load)
print("emit", t_emit - t_render)
"""


# The same command line through the Typer application, bypassing the render fast path.
_THROUGH_TYPER = """
import sys
from nvcre.cli.closed_stdout import watch_stdout
from nvcre.cli.typer_app import start
watch_stdout()
start(sys.argv[1:], False)
"""


def _child_env(workdir: Path) -> dict[str, str]:
    """The environment of a cold nvcrectl run: no on-disk cache, bytecode kept in ``workdir``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "NVCRE_NO_CACHE": "1", "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}


def cold_phases(cert: Path, runs: int) -> list[tuple[str, float]]:
    samples: dict[str, list[float]] = {}
    env = _child_env(cert.parent)
    subprocess.run([sys.executable, "-c", _PHASES, str(cert)], capture_output=True, check=True, env=env)  # writes bytecode
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _PHASES, str(cert)], capture_output=True, text=True, check=True, env=env).stdout
        for line in out.splitlines():
            name, value = line.rsplit(" ", 1)
            samples.setdefault(name, []).append(float(value))
    return [(name, statistics.median(values)) for name, values in samples.items()]


def _nvcrectl() -> list[str]:
    script = Path(sys.executable).with_name("nvcrectl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nvcre.cli.main"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall s, CPU s of the child, stdout) of one run; CPU time stays honest on a busy machine."""
    cpu, start = _children_cpu(), time.perf_counter()
    result = subprocess.run(argv, capture_output=True, check=True, env=env)
    return time.perf_counter() - start, _children_cpu() - cpu, result.stdout


def cold_versus_kustomize(workdir: Path, runs: int) -> dict[str, float]:
    cert = workdir / "certification.yaml"
    render = [*_nvcrectl(), "certification", "render", str(cert), "--platform", "aws", "--gpu-arch", "h100"]
    env = _child_env(workdir)
    _, _, output = _timed(render, env)  # writes the bytecode; also the objects kustomize will build
    kdir = workdir / "kustomize"
    kdir.mkdir(exist_ok=True)
    (kdir / "workflows.yaml").write_bytes(output)
    (kdir / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- workflows.yaml\n"
        "commonLabels:\n  nvcre.nvidia.com/bench: render\n",
        encoding="utf-8",
    )
    build = [KUBECTL or "kubectl", "kustomize", str(kdir)]
    _timed(build, dict(os.environ))  # warm the page cache for both binaries alike
    through_typer = [sys.executable, "-c", _THROUGH_TYPER, *render[len(_nvcrectl()) :]]
    if _timed(through_typer, env)[2] != output:
        raise SystemExit("the Typer path and the fast path printed different renders")
    ours, theirs, typer_path = [], [], []
    for _ in range(runs):
        ours.append(_timed(render, env)[:2])
        theirs.append(_timed(build, dict(os.environ))[:2])
        typer_path.append(_timed(through_typer, env)[1])
    return {
        "nvcrectl wall median s": statistics.median(w for w, _ in ours),
        "nvcrectl wall best s": min(w for w, _ in ours),
        "nvcrectl CPU median s": statistics.median(c for _, c in ours),
        "kubectl kustomize wall median s": statistics.median(w for w, _ in theirs),
        "kubectl kustomize wall best s": min(w for w, _ in theirs),
        "kubectl kustomize CPU median s": statistics.median(c for _, c in theirs),
        "median paired wall ratio": statistics.median(a[0] / b[0] for a, b in zip(ours, theirs)),
        "median paired CPU ratio": statistics.median(a[1] / b[1] for a, b in zip(ours, theirs)),
        "through Typer, CPU median s": statistics.median(typer_path),
        "output KiB": len(output) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repeats of each in-process case")
    parser.add_argument("--matrix-passes", type=int, default=3, help="passes over the whole matrix")
    parser.add_argument("--cold", type=int, default=11, help="paired cold runs (nvcrectl, kubectl kustomize)")
    parser.add_argument("--skip-cold", action="store_true", help="only the in-process sections")
    args = parser.parse_args()

    print(f"# {datetime.date.today()}  Python {host.python_version()}  {os.cpu_count()} CPUs  {host.machine()}")
    load_catalog(), load_overlays()  # a long-running controller pays this once
    print(f"\n{'case':<36} {'median s':>9} {'worst s':>8} {'peak MiB':>9} {'output KiB':>10}")
    for name, document, kwargs in cases():
        median, worst, peak, size = measure(document, kwargs, args.repeat)
        print(f"{name:<36} {median:>9.3f} {worst:>8.3f} {peak:>9.1f} {size / 1024:>10.1f}")

    print(f"\n{'matrix pass':<36} {'wall s':>9} {'CPU s':>8} {'renders':>9} {'output MiB':>10}  SHA-256 of the output")
    for index, (wall, cpu, renders, size, digest) in enumerate(matrix(args.matrix_passes)):
        print(
            f"{'every entry x every pair, pass ' + str(index + 1):<36} {wall:>9.3f} {cpu:>8.3f} {renders:>9} {size / 2**20:>10.1f}  {digest}"
        )

    if args.skip_cold:
        return
    with tempfile.TemporaryDirectory(prefix="nvcre-bench-") as tmp:
        workdir = Path(tmp)
        cert = workdir / "certification.yaml"
        cert.write_text(dump_yaml_stream([_cert(_every_entry())]), encoding="utf-8")
        print(f"\n{'cold phase (fresh interpreter)':<36} {'median s':>9}")
        for name, seconds in cold_phases(cert, max(3, args.cold // 2)):
            print(f"{name:<36} {seconds:>9.3f}")
        if KUBECTL is None:
            print("\nkubectl not found: the paired cold comparison is skipped")
            return
        print(f"\ncold render vs kubectl kustomize, {args.cold} paired runs (NVCRE_NO_CACHE=1)")
        for name, value in cold_versus_kustomize(workdir, args.cold).items():
            print(f"{name:<36} {value:>9.3f}")


if __name__ == "__main__":
    main()
