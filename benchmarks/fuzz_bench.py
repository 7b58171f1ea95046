"""Run the golden-input mutation fuzzer for many examples and report crashes, time and memory.

    python benchmarks/fuzz_bench.py                # 10,000 examples
    python benchmarks/fuzz_bench.py --examples 500 --seed 7

The mutations and the classification are the suite's (``tests/compiler/test_render_fuzz_inputs.py``). A
crash is any exception other than ``CompileError``: on the CLI it is an exit 1 (``guarded``
prints one line and never a traceback, so the exit-1 count is also the count of tracebacks
the library would have shown). Reported: examples run, outcomes, crashes by type with one
example each, examples over 5 s, the slowest example, and the process's peak resident
memory (an upper bound on any one example's). Goal: 0 crashes, 0 over 5 s, peak under 500 MB.
Exit status 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MAX_SECONDS = 5.0
MAX_RSS_MB = 500


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from nvcre.compiler.cel import environment
    from tests.compiler import test_render_fuzz_inputs as fuzz

    environment()  # cel-python raises the recursion limit once, before hypothesis watches it

    outcomes: Counter[str] = Counter()
    crashes: dict[str, str] = {}
    slow: list[tuple[float, str]] = []
    slowest = (0.0, "")

    @seed(args.seed)
    @settings(
        max_examples=args.examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.generate],
    )
    @given(fuzz.mutated(fuzz.CASES))
    def run(example: tuple[fuzz.Case, object]) -> None:
        nonlocal slowest
        case, subject = example
        result = fuzz.run_example(case, subject)
        outcomes[result.outcome] += 1
        if result.outcome == "crash":
            kind = result.detail.split(":", 1)[0]
            crashes.setdefault(kind, f"{case.name}: {result.detail}")
        if result.seconds > MAX_SECONDS:
            slow.append((result.seconds, case.name))
        if result.seconds > slowest[0]:
            slowest = (result.seconds, case.name)

    start = time.monotonic()
    run()
    elapsed = time.monotonic() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = sum(outcomes.values())
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print(f"corpus: {len(fuzz.CASES)} golden inputs; seed {args.seed}")
    print(f"examples: {total} in {elapsed:.0f} s ({1000 * elapsed / max(total, 1):.1f} ms each)")
    print(f"outcomes: ok {outcomes['ok']}, refused with diagnostics {outcomes['invalid']}, crashes (exit 1) {outcomes['crash']}")
    for kind, sample in sorted(crashes.items()):
        print(f"  crash {kind}: {sample}")
    print(f"over {MAX_SECONDS:.0f} s: {len(slow)}; slowest {slowest[0]:.2f} s ({slowest[1]})")
    print(f"peak RSS: {peak_mb:.0f} MB (limit {MAX_RSS_MB} MB)")
    return 0 if not outcomes["crash"] and not slow and peak_mb < MAX_RSS_MB else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
