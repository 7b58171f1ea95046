"""Peak memory and time of the controller's reads of a very large training log.

A goodput measurement samples its training pod's log while the Job runs, each sample reading on
from where the last stopped and adding what it read to running sums
(:mod:`nvcre.runtime.measure.goodput_state`), then reads on to the end once the Job has ended; a
measurement without that state (a controller that lost it) reads the whole log once. Both are
measured here. The log is generated line by line (no file, nothing held): mostly NCCL and framework
chatter with a Megatron step line every ``--step-every`` lines, ``--lines-per-second`` lines to a
kubelet timestamp second. A reader that answers like the API server's ``pods/log`` (from the
start or from the first line of the ``sinceTime`` second, cut to ``limitBytes``) serves it to
:class:`nvcre.runtime.measure.windows.LogWindows`, and the real parser
(:func:`nvcre.runtime.measure.training.parse_training`) and goodput calculation run over the
windows. ``samples`` reads the log as it grows, ``--sample-mib`` at a time, as the sampler does.
Each case runs in a child process; the figure is that process's peak RSS (VmHWM).

    python benchmarks/log_memory.py                    # a 1 GiB log in 8 MiB windows, whole and sampled
    python benchmarks/log_memory.py --size-mib 256 --whole   # also the old single read, for comparison

The HTTP transfer itself is not part of this figure: the client holds one window's bytes, which
the window size already bounds.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[1]

CHATTER = "node-0:1234:1234 [3] NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/IPC/read comm 0x5581d9a0 nRanks 16"
STEP = (
    " [2026-12-03 17:00:00] iteration {i:>8}/ 1000000 | consumed samples: {s} | elapsed time per iteration (ms): 2850.5 |"
    " throughput per GPU (TFLOP/s/GPU): 539.8 | learning rate: 1.0E-04 | global batch size: 32 | lm loss: 9.1E+00 |"
)


class Log:
    """A generated log of ``total`` bytes at most, served like ``pods/log``."""

    def __init__(self, size: int, lines_per_second: int, step_every: int) -> None:
        self.size, self.per_second, self.step_every = size, lines_per_second, step_every

    def line(self, index: int) -> str:
        second, nano = divmod(index, self.per_second)
        stamp = datetime.fromtimestamp(1_796_000_000 + second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        body = STEP.format(i=index // self.step_every + 1, s=index) if index % self.step_every == 0 else CHATTER
        return f"{stamp}.{nano:09d}Z {body}\n"

    def read(self, since: str | None, cap: int, upto: int | None = None) -> str:
        """From the start or the ``since`` second, at most ``cap`` bytes of the first ``upto`` bytes."""
        end = self.size if upto is None else min(upto, self.size)
        start = 0
        if since is not None:
            second = int(datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()) - 1_796_000_000
            start = second * self.per_second
        parts, used, index = [], 0, start
        while used < cap and index * len(CHATTER) < end:
            text = self.line(index)
            parts.append(text)
            used += len(text)
            index += 1
        return "".join(parts).encode()[:cap].decode()


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _samples(log: Log, cap: int, step: int, profile: dict) -> tuple[int, int, bool, float, int]:
    """The log read as it grows, ``step`` bytes at a time, each read on from the last cursor and
    added to running sums; (steps, reads, complete, goodput ratio, samples)."""
    from nvcre.runtime.measure.goodput_state import RunningGoodput, fold
    from nvcre.runtime.measure.windows import LogWindows

    state, cursor, reads, samples, complete = RunningGoodput(), None, 0, 0, True
    for upto in [*range(step, log.size, step), log.size]:
        final = upto >= log.size
        since = cursor.since_time() if cursor is not None else None
        windows = LogWindows(
            log.read(since, cap, upto),
            lambda s, u=upto: log.read(s, cap, u),
            cap,
            max_windows=1_000_000,
            final=final,
            **({"start": cursor} if cursor else {}),
        )
        state = fold(state, windows, profile)
        cursor, reads, samples = windows.cursor, reads + windows.reads, samples + 1
        complete = complete and windows.complete
    return state.steps, reads, complete, state.goodput(datetime.now(UTC)).ratio, samples


def _case(size: int, cap: int, mode: str, args: argparse.Namespace, out: multiprocessing.Queue) -> None:
    from nvcre.runtime.measure import training
    from nvcre.runtime.measure.goodput_state import RunningGoodput, fold
    from nvcre.runtime.measure.windows import LogWindows

    profile = YAML(typ="safe").load((REPO / "catalog" / "logprofiles" / "megatron-training.yaml").read_text())
    log = Log(size, args.lines_per_second, args.step_every)
    started = time.perf_counter()
    base = _peak_mib()
    if mode == "samples":
        steps, reads, complete, ratio, samples = _samples(log, cap, args.sample_mib * 1024 * 1024, profile)
        out.put({"steps": steps, "reads": reads, "complete": complete, "seconds": time.perf_counter() - started,
                 "peak_mib": _peak_mib(), "start_mib": base, "ratio": ratio, "samples": samples})  # fmt: skip
        return
    if mode == "running sums":
        windows = LogWindows(log.read(None, cap), lambda since: log.read(since, cap), cap, max_windows=1_000_000)
        state = fold(RunningGoodput(), windows, profile)
        out.put({"steps": state.steps, "reads": windows.reads, "complete": windows.complete, "seconds": time.perf_counter() - started,
                 "peak_mib": _peak_mib(), "start_mib": base, "ratio": state.goodput(datetime.now(UTC)).ratio})  # fmt: skip
        return
    if mode == "one whole read":
        text = log.read(None, size * 2)
        parsed = training.parse_training(text, profile)
        reads, complete = 1, True
    else:
        windows = LogWindows(log.read(None, cap), lambda since: log.read(since, cap), cap, max_windows=1_000_000)
        parsed = training.parse_training(windows, profile)
        reads, complete = windows.reads, windows.complete
    goodput = training.calculate_goodput(parsed, datetime.now(UTC))
    out.put(
        {
            "steps": len(parsed.steps),
            "reads": reads,
            "complete": complete,
            "seconds": time.perf_counter() - started,
            "peak_mib": _peak_mib(),
            "start_mib": base,
            "ratio": goodput.ratio,
        }
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--window-mib", type=int, default=8)
    parser.add_argument("--lines-per-second", type=int, default=2000)
    parser.add_argument("--step-every", type=int, default=1000)
    parser.add_argument("--whole", action="store_true", help="also run one unbounded read of the whole log")
    parser.add_argument("--sample-mib", type=int, default=20, help="what the log grows by between two samples")
    args = parser.parse_args()
    size, cap = args.size_mib * 1024 * 1024, args.window_mib * 1024 * 1024
    cases = ["windows", "running sums", "samples"] + (["one whole read"] if args.whole else [])
    print(f"log {args.size_mib} MiB, windows of {args.window_mib} MiB, {args.lines_per_second} lines a second")
    ctx = multiprocessing.get_context("spawn")
    for label in cases:
        queue: multiprocessing.Queue = ctx.Queue()
        child = ctx.Process(target=_case, args=(size, cap, label, args, queue))
        child.start()
        result = queue.get()
        child.join()
        print(
            f"{label:>15}: peak RSS {result['peak_mib']:.1f} MiB (interpreter and imports {result['start_mib']:.1f}), "
            f"{result['reads']} reads{', %d samples' % result['samples'] if 'samples' in result else ''}, "
            f"complete={result['complete']}, {result['steps']} steps, {result['seconds']:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
