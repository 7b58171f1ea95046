#!/usr/bin/env python3
"""Diagnose planners side by side on the offline model (benchmarks/diagnose_sim.py).

For N in {8, 16, 64, 512, 2000}, k in {0, 1, 2, 4} faults of each kind (slow, crash, link, flaky),
with measurement noise: median rounds, jobs, node-units and wall minutes, false positives (healthy
nodes blamed), false negatives, links named exactly, and the information-theoretic bound
``log2 C(N, k)`` bits. Then a noise sweep of 10,000 seeded trials counting healthy nodes blamed.
Prints a Markdown table; ``--png PATH`` also draws rounds and node-units (needs matplotlib).
``--prior-only`` prints only the table of a diagnose that follows a failed run (N = 64): a flaky
node (p = 0.3), two and three bad links, and a healthy cluster, each planner with and without
the failed run's groups as its prior; the link rows also give the share of trials that named
every link within ``LINK_MINUTES`` (100) and the 90th-percentile minutes.

Three planners are compared: ``baseline`` (NVCRE's algorithm), ``adaptive`` (the default) and
``pathfirst`` (opt-in: one path screen of every node first, single-node runs only where it failed).
``--planners`` picks some of them and ``--only`` some of the three parts (``main``, ``noise``,
``prior``), so a change to one planner can be measured without rerunning the rest.

    python benchmarks/diagnose_bench.py [--trials 200] [--noise-trials 10000] [--png docs/diagnose.png] [--prior-only]
        [--planners baseline,adaptive,pathfirst] [--only main,noise,prior]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diagnose_sim import Scenario, make_scenario, run_group, simulate  # noqa: E402

from nvcre.compiler.diagnose import Options, Planner, Prior, PriorGroup, pathfirst, planner  # noqa: E402

SIZES = (8, 16, 64, 512, 2000)
KS = (0, 1, 2, 4)
KINDS = ("slow", "crash", "link", "flaky")
#: every planner the bench knows, in table order (pathfirst is opt-in and not in the registry)
PLANNERS = ("baseline", "adaptive", "pathfirst")
PARTS = ("main", "noise", "prior")


def _planner(name: str) -> Planner:
    return pathfirst.PLANNER if name == pathfirst.NAME else planner(name)


def _cell(name: str, n: int, kind: str, k: int, trials: int, noise: float, options: Options) -> dict:
    outs = []
    for seed in range(trials):
        rng = random.Random(f"{n}/{kind}/{k}/{seed}")  # a str seed is stable across processes
        outs.append(simulate(_planner(name), make_scenario(n, kind, k, rng, noise=noise), options, seed))
    bad = k if kind != "link" else 0
    return {
        "rounds": statistics.median(o.rounds for o in outs),
        "jobs": statistics.median(o.jobs for o in outs),
        "units": statistics.median(o.node_units for o in outs),
        "minutes": statistics.median(o.minutes for o in outs),
        "fp": sum(o.false_positives for o in outs),
        "fn": sum(o.false_negatives for o in outs),
        "found": (sum(1 for o in outs if o.false_negatives == 0) / trials) if bad else None,
        "links": (sum(o.links_exact for o in outs) / max(sum(o.links_total for o in outs), 1)) if kind == "link" else None,
    }


#: the failed run's workload groups: this many nodes each, in node order
PRIOR_GROUP = 8
#: the time budget the link rows are measured against: every link named within this many minutes
LINK_MINUTES = 100.0


def _prior(scenario: Scenario, rng: random.Random) -> Prior:
    """The run that led to the diagnose: groups of ``PRIOR_GROUP`` run once each, drawn again
    until one fails (a diagnose follows a failed run). On a fault-free cluster one group is
    marked failed at random: the failure that started the diagnose was transient."""
    chunks = [scenario.nodes[i : i + PRIOR_GROUP] for i in range(0, len(scenario.nodes), PRIOR_GROUP)]
    for _ in range(200):
        verdicts = [run_group(scenario, chunk, rng)[0] for chunk in chunks]
        if not all(verdicts):
            return Prior(tuple(PriorGroup(c, v) for c, v in zip(chunks, verdicts, strict=True)))
    failed = rng.randrange(len(chunks))
    return Prior(tuple(PriorGroup(c, i != failed) for i, c in enumerate(chunks)))


def _prior_cell(name: str, kind: str, k: int, trials: int, noise: float, with_prior: bool) -> dict:
    outs = []
    for seed in range(trials):
        rng = random.Random(f"prior/{kind}/{k}/{seed}")  # a str seed is stable across processes
        scenario = make_scenario(64, kind, k, rng, noise=noise)
        options = Options(prior=_prior(scenario, rng)) if with_prior else Options()
        outs.append(simulate(_planner(name), scenario, options, seed))
    bad = k if kind in ("flaky", "slow", "crash") else 0
    return {
        "rounds": statistics.median(o.rounds for o in outs),
        "units": statistics.median(o.node_units for o in outs),
        "minutes": statistics.median(o.minutes for o in outs),
        "found": (sum(1 for o in outs if o.false_negatives == 0) / trials) if bad else None,
        "links": (sum(o.links_exact for o in outs) / max(sum(o.links_total for o in outs), 1)) if kind == "link" else None,
        "all_links": (sum(1 for o in outs if o.links_exact == o.links_total) / trials) if kind == "link" else None,
        "in_time": (sum(1 for o in outs if o.links_exact == o.links_total and o.minutes <= LINK_MINUTES) / trials)
        if kind == "link"
        else None,
        "p90_minutes": sorted(o.minutes for o in outs)[max(math.ceil(0.9 * trials) - 1, 0)],
        "fp": sum(o.false_positives for o in outs),
    }


def prior_table(trials: int, noise: float, planners: tuple[str, ...] = PLANNERS) -> None:
    """N = 64: each planner with and without the failed run's groups as its prior."""
    print(
        "| fault | k | planner | prior | rounds | node-units | minutes | p90 minutes | found | links named | "
        f"all links named | all named in {LINK_MINUTES:g} min | FP |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, k in (("flaky", 1), ("link", 2), ("link", 3), ("none", 0)):
        for name in planners:
            for with_prior in (False, True):
                c = _prior_cell(name, kind, k, trials, noise, with_prior)
                found = "-" if c["found"] is None else f"{c['found']:.0%}"
                links = "-" if c["links"] is None else f"{c['links']:.0%}"
                every = "-" if c["all_links"] is None else f"{c['all_links']:.0%}"
                in_time = "-" if c["in_time"] is None else f"{c['in_time']:.0%}"
                label = "flaky p=0.3" if kind == "flaky" else kind
                print(
                    f"| {label} | {k} | {name} | {'yes' if with_prior else 'no'} | {c['rounds']:g} | {c['units']:g} | "
                    f"{c['minutes']:g} | {c['p90_minutes']:g} | {found} | {links} | {every} | {in_time} | {c['fp']} |"
                )


def _csv(value: str, known: tuple[str, ...]) -> tuple[str, ...]:
    chosen = tuple(v for v in value.split(",") if v)
    unknown = [v for v in chosen if v not in known]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"choose from {','.join(known)} (got {value!r})")
    return chosen


def main_table(trials_64: int, noise: float, planners: tuple[str, ...]) -> list:
    """Every size, fault kind and count for the chosen planners (plus adaptive with six cycles on flaky)."""
    configs = [(name, Options()) for name in planners]
    if "adaptive" in planners:
        configs.append(("adaptive x6", Options(screen_cycles=6, retests=10)))
    rows = []
    print("| N | fault | k | bound (bits) | planner | rounds | jobs | node-units | minutes | found | links exact | FP | FN |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        trials = trials_64 if n <= 64 else max(trials_64 // 10, 10)
        for kind in KINDS:
            for k in KS:
                if (kind == "link" and k == 0) or (kind != "slow" and k == 0):
                    if not (kind == "slow" and k == 0):
                        continue
                label = "none" if k == 0 else kind
                bound = math.log2(math.comb(n * (n - 1) // 2, k)) if kind == "link" else math.log2(math.comb(n, k))
                for name, options in configs:
                    if name == "adaptive x6" and kind != "flaky":
                        continue
                    cell = _cell(name.split()[0], n, "none" if k == 0 else kind, k, trials, noise, options)
                    rows.append((n, label, k, name, cell))
                    found = "-" if cell["found"] is None else f"{cell['found']:.0%}"
                    links = "-" if cell["links"] is None else f"{cell['links']:.0%}"
                    print(
                        f"| {n} | {label} | {k} | {bound:.1f} | {name} | {cell['rounds']:g} | {cell['jobs']:g} | "
                        f"{cell['units']:g} | {cell['minutes']:g} | {found} | {links} | {cell['fp']} | {cell['fn']} |"
                    )
    return rows


def noise_sweep(trials: int, noise: float, planners: tuple[str, ...]) -> None:
    """Doubled noise, one fault of a kind in turn (or none): healthy nodes blamed, and the longest run."""
    print(f"Noise sweep ({trials} seeded trials, N=64, noise {2 * noise:.2f}, mixed faults):")
    for name in planners:
        blamed = longest = 0
        for seed in range(trials):
            rng = random.Random(seed)
            kind = ("none", "crash", "slow", "link", "flaky")[seed % 5]
            scenario = make_scenario(64, kind, 0 if kind == "none" else 1, rng, noise=2 * noise)
            out = simulate(_planner(name), scenario, Options(), seed)  # raises if a run does not conclude
            blamed += out.false_positives
            longest = max(longest, out.rounds)
        print(f"- {name}: {blamed} healthy nodes blamed (every run concluded, the longest in {longest} rounds)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per cell for N <= 64 (a tenth above)")
    parser.add_argument("--noise-trials", type=int, default=10_000)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--png", type=Path)
    parser.add_argument("--prior-only", action="store_true", help="only the table of diagnoses that follow a failed run")
    parser.add_argument("--planners", type=lambda v: _csv(v, PLANNERS), default=PLANNERS, help=f"comma-separated, of {','.join(PLANNERS)}")
    parser.add_argument("--only", type=lambda v: _csv(v, PARTS), default=PARTS, help=f"comma-separated parts, of {','.join(PARTS)}")
    args = parser.parse_args(argv)
    parts = ("prior",) if args.prior_only else args.only
    started = time.monotonic()
    rows = main_table(args.trials, args.noise, args.planners) if "main" in parts else []
    if "noise" in parts:
        print()
        noise_sweep(args.noise_trials, args.noise, args.planners)
    if "prior" in parts:
        if len(parts) > 1:
            print("\nA diagnose that follows a failed run (N = 64), with and without its groups as the prior:\n")
        prior_table(args.trials, args.noise, args.planners)
    print(f"\n({time.monotonic() - started:.0f} s)")
    if args.png and rows:
        _plot(rows, args.png)
    return 0


def _plot(rows: list, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; no plot written", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, style in (("baseline", "o--"), ("adaptive", "s-"), ("pathfirst", "^-.")):
        for kind in ("crash", "link"):
            points = [(n, c) for n, label, k, p, c in rows if p == name and label == kind and k == 1]
            if not points:
                continue
            xs = [n for n, _ in points]
            axes[0].plot(xs, [c["rounds"] for _, c in points], style, label=f"{name} / {kind}")
            axes[1].plot(xs, [c["units"] / n for n, c in points], style, label=f"{name} / {kind}")
    for ax, title in ((axes[0], "rounds (median, k=1)"), (axes[1], "node-units / N (median, k=1)")):
        ax.set_xscale("log")
        ax.set_xlabel("nodes")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


if __name__ == "__main__":
    sys.exit(main())
