"""``certification diff`` at the input cap: two renders of about 4 MB each, compared as a reviewer would.

Run: ``.venv/bin/python benchmarks/diff_bench.py [--repeat N] [--size BYTES] [--phases]``.

The inputs are made from the golden renders (``golden/render/*/expected.yaml``), joined as one
YAML stream until it holds ``--size`` bytes (default 4,100,000, just under the 4 MiB input
cap), so they hold every kind of Workflow the catalog renders, many objects under the same name.
The NEW render edits every ``NCCL_*`` environment value and every image reference, the kind of
change a platform overlay or a catalog bump makes, so nearly every object differs.

Each repeat runs ``nvcrectl certification diff OLD NEW -o json`` as a fresh process (the command a
reviewer runs) and reports wall time, CPU time (user and system: what a busy shared machine
distorts least), peak RSS and the size of the JSON written. ``--against COMMAND`` times another
nvcrectl (an older install) on the same inputs, run for run in turn. With
``--phases`` the same diff is also timed in-process, phase by phase (reading, diffing,
formatting), to show where the time goes. Nothing asserts a time: a slow machine never fails
anything; the numbers and the machine go into ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import platform as host
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NVCRECTL = Path(sys.executable).with_name("nvcrectl")
_NCCL_VALUE = re.compile(r"(- name: (NCCL_[A-Z0-9_]+)\n(\s+)value: )(\S+)")
_IMAGE = re.compile(r"(\bimage: )(['\"]?)(\S+?)(['\"]?)$", re.MULTILINE)


def old_render(size: int) -> str:
    """Golden renders joined as one stream until ``size`` bytes (whole documents only)."""
    renders = sorted((REPO / "golden" / "render").glob("*/expected.yaml"))
    parts: list[str] = []
    total = 0
    while True:
        for path in renders:
            text = path.read_text(encoding="utf-8").strip() + "\n"
            if total + len(text) + 4 > size:
                return "---\n".join(parts)
            parts.append(text)
            total += len(text) + 4


def new_render(old: str) -> str:
    """The same stream with every NCCL_* value and every image reference edited."""
    edited = _NCCL_VALUE.sub(lambda m: f"{m.group(1)}'{m.group(4).strip(chr(39) + chr(34))}-tuned'", old)
    return _IMAGE.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}-next{m.group(4)}", edited)


def run_cli(command: str, old: Path, new: Path) -> tuple[float, float, int, int, float]:
    """(wall seconds, peak RSS MiB, exit code, bytes of JSON, CPU seconds) of one fresh ``certification diff``."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    done = subprocess.run([command, "certification", "diff", str(old), str(new), "-o", "json"], capture_output=True, check=False)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = max(usage.ru_maxrss, before) / 1024
    cpu = usage.ru_utime + usage.ru_stime - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"diff failed ({done.returncode}): {done.stderr.decode(errors='replace')[:400]}")
    return wall, peak, done.returncode, len(done.stdout), cpu


def phases(old: Path, new: Path) -> list[tuple[str, float]]:
    """Wall time of each phase of the same diff, in this process."""
    from nvcre.cli.diff import format_json, read_side
    from nvcre.cli.gitops import read_render
    from nvcre.compiler.diff import diff_renders

    out = []
    start = time.perf_counter()
    read_render(old), read_render(new)
    out.append(("read both renders with the project's reader", time.perf_counter() - start))
    start = time.perf_counter()
    before, after = read_side(old), read_side(new)
    out.append(("read both renders as diff does (libyaml for plain renders)", time.perf_counter() - start))
    start = time.perf_counter()
    result = diff_renders(before, after)
    out.append(("diff", time.perf_counter() - start))
    start = time.perf_counter()
    format_json(result)
    out.append(("format json", time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=4_100_000)
    parser.add_argument("--phases", action="store_true")
    parser.add_argument(
        "--against",
        metavar="COMMAND",
        help="another nvcrectl (an older install, say) to time on the same inputs, run for run in turn with this one",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nvcre-diff-bench-") as folder:
        old, new = Path(folder) / "old.yaml", Path(folder) / "new.yaml"
        text = old_render(args.size)
        old.write_text(text, encoding="utf-8")
        new.write_text(new_render(text), encoding="utf-8")
        print(f"machine: {host.machine()}, {os.cpu_count()} CPUs, Python {host.python_version()}, load {os.getloadavg()[0]:.1f}")
        print(f"inputs: {old.stat().st_size:,} and {new.stat().st_size:,} bytes, {text.count(chr(10) + 'kind: ') + 1} documents")
        commands = {"this nvcrectl": str(NVCRECTL), **({f"against {args.against}": args.against} if args.against else {})}
        for command in commands.values():
            run_cli(command, old, new)  # untimed: bytecode compiled, files cached
        runs: dict[str, list[tuple[float, float, int, int, float]]] = {label: [] for label in commands}
        for _ in range(args.repeat):
            for label, command in commands.items():
                runs[label].append(run_cli(command, old, new))
        for label, done in runs.items():
            walls = [r[0] for r in done]
            print(
                f"{label}: certification diff -o json: median {statistics.median(walls):.2f} s, worst {max(walls):.2f} s over "
                f"{len(done)} runs (CPU median {statistics.median(r[4] for r in done):.2f} s); peak RSS {max(r[1] for r in done):.0f} MiB; exit {done[0][2]}; {done[0][3]:,} bytes of JSON"
            )
        if args.phases:
            for name, seconds in phases(old, new):
                print(f"  {name}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
