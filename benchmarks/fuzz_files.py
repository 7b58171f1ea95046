"""Malformed input files through the CLI: every one ends with exit 0 or 2, never 1, never partial output.

    python benchmarks/fuzz_files.py                   # 3,000 byte-level mutations + the special files
    python benchmarks/fuzz_files.py --examples 500 --seed 3

``benchmarks/fuzz_bench.py`` mutates parsed documents; this one mutates the *bytes* of every golden
and example input file (truncation, flipped and invalid UTF-8 bytes, control characters, tabs in
indentation, deleted or doubled lines, stray YAML tokens and tags, a byte-order mark, UTF-16,
alias bombs, deep flow nesting, block sequences and mappings nested up to 30,000 and 1,500 levels) and adds the files a reader must refuse without reading them
whole or blocking (a directory, a FIFO, ``/dev/zero``, an empty file, a 65 MiB file, a missing
path). Each one is run through ``nvcrectl certification validate FILE`` or ``render FILE`` (the
Typer application, in this process). Wrong is: exit 1 (an internal error), any other exit but 0
or 2, a traceback on stderr, or output on stdout with exit 2 (partial output). Reported: inputs,
outcomes, every wrong one (first five), inputs over 5 s, the slowest, and the process's peak
resident memory. Goal: 0 wrong, 0 over 5 s, peak under 500 MB; exit status 1 when missed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAX_SECONDS = 5.0
MAX_RSS_MB = 500
TOKENS = (
    "&a ",
    "*a",
    "!!binary ",
    "!!python/object:os.system ",
    "!!set ",
    "{",
    "}",
    "[",
    "]",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "<<: *a\n",
    "? ",
    "|\n",
    ">-\n",
    "'",
    '"',
    "\\u0000",
    "#",
    ": ",
    "- ",
    "\t",
    "\x00",
    "\x85",
)


def corpus() -> list[tuple[str, bytes]]:
    """(name, bytes) of every input document under golden/ and examples/."""
    found = sorted(
        {
            *(REPO / "golden").glob("*/*/certification.yaml"),
            *(REPO / "golden").glob("*/*/workloadrun.yaml"),
            *(REPO / "examples").glob("*.yaml"),
        }
    )
    return [(str(path.relative_to(REPO)), path.read_bytes()) for path in found]


def _at(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def _lines(data: bytes, change: Callable[[list[bytes]], None]) -> bytes:
    lines = data.split(b"\n")
    change(lines)
    return b"\n".join(lines)


def mutate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """One to three byte-level mutations; returns their names and the new bytes."""
    names = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(
            (
                "truncate",
                "flip",
                "control",
                "tab",
                "drop-line",
                "double-line",
                "token",
                "bom",
                "utf16",
                "alias-bomb",
                "deep-flow",
                "deep-block",
                "long-line",
            )
        )
        names.append(kind)
        i = _at(rng, data)
        if kind == "truncate":
            data = data[:i]
        elif kind == "flip" and data:
            j = rng.randrange(len(data))
            data = data[:j] + bytes([rng.randrange(256)]) + data[j + 1 :]
        elif kind == "control":
            data = data[:i] + bytes([rng.choice((0, 7, 8, 11, 12, 27, 127, 0x80, 0xC3, 0xFF))]) + data[i:]
        elif kind == "tab":
            data = _lines(data, lambda ls: ls.__setitem__(k := rng.randrange(len(ls)), b"\t" + ls[k]))
        elif kind == "drop-line":
            data = _lines(data, lambda ls: ls.pop(rng.randrange(len(ls))) if len(ls) > 1 else None)
        elif kind == "double-line":
            data = _lines(data, lambda ls: ls.insert(k := rng.randrange(len(ls)), ls[k]))
        elif kind == "token":
            data = data[:i] + rng.choice(TOKENS).encode() + data[i:]
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
        elif kind == "utf16":
            data = data.decode("utf-8", "replace").encode("utf-16")
        elif kind == "alias-bomb":
            bomb = "a: &a ['x','x','x','x','x','x','x','x','x']\n" + "".join(
                f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)},*{chr(97 + n)},*{chr(97 + n)},*{chr(97 + n)}]\n" for n in range(9)
            )
            data = bomb.encode() + data
        elif kind == "deep-flow":
            depth = rng.choice((100, 5_000, 200_000))
            data = data[:i] + b"[" * depth + b"]" * depth + data[i:]
        elif kind == "deep-block":
            # a top-level key holding a block sequence (``- - - x``, one line) or block mappings
            # nested by indentation: the shapes that used to overflow the parser's C stack
            if rng.random() < 0.5:
                depth = rng.choice((100, 5_000, 30_000))
                block = b"deep:\n" + b"- " * depth + b"x\n"
            else:
                depth = rng.choice((100, 1_500))
                block = b"".join(b"  " * n + b"k:\n" for n in range(depth)) + b"  " * depth + b"x\n"
            data = block + data
        elif kind == "long-line":
            data = data[:i] + b"x" * rng.choice((10_000, 2_000_000)) + data[i:]
    return "+".join(names), data


def special_files(folder: Path) -> list[tuple[str, str]]:
    """(name, path) of files a reader must refuse without reading them whole or waiting on them."""
    (folder / "a-directory").mkdir(parents=True)
    os.mkfifo(folder / "a-fifo")
    (folder / "empty.yaml").write_bytes(b"")
    with (folder / "huge.yaml").open("wb") as out:
        out.truncate(65 * 1024 * 1024)  # sparse: 65 MiB of NUL bytes without writing them
    (folder / "spaces.yaml").write_bytes(b" " * (5 * 1024 * 1024))
    (folder / "loop.yaml").symlink_to(folder / "loop.yaml")
    return [
        ("directory", str(folder / "a-directory")),
        ("fifo", str(folder / "a-fifo")),
        ("/dev/zero", "/dev/zero"),
        ("empty", str(folder / "empty.yaml")),
        ("65 MiB", str(folder / "huge.yaml")),
        ("5 MiB of spaces", str(folder / "spaces.yaml")),
        ("symlink loop", str(folder / "loop.yaml")),
        ("missing", str(folder / "missing.yaml")),
    ]


class Runner:
    """The CLI application, run in this process on one file, classified."""

    def __init__(self) -> None:
        from typer.testing import CliRunner

        from nvcre.cli.main import app

        self.app, self.runner = app, CliRunner()

    def run(self, command: str, path: str) -> tuple[str, float]:
        args = ["certification", command, path]
        if command == "render":
            args += ["--platform", "onprem", "--gpu-arch", "h100"]
        start = time.perf_counter()
        result = self.runner.invoke(self.app, args)
        seconds = time.perf_counter() - start
        stdout, stderr = result.stdout, getattr(result, "stderr", "")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            return f"wrong: uncaught {type(result.exception).__name__}: {result.exception}", seconds
        if "Traceback" in stdout + stderr:
            return "wrong: traceback printed", seconds
        if result.exit_code == 0:
            return "ok", seconds
        if result.exit_code == 2:
            return ("wrong: output on stdout with exit 2" if stdout.strip() else "refused"), seconds
        return f"wrong: exit {result.exit_code}: {(stderr or stdout).strip().splitlines()[-1:]}", seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=3_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    runner = Runner()
    inputs = corpus()
    outcomes: Counter[str] = Counter()
    wrong: list[str] = []
    slow: list[tuple[float, str]] = []
    slowest = (0.0, "")

    def record(label: str, outcome: str, seconds: float) -> None:
        nonlocal slowest
        outcomes["wrong" if outcome.startswith("wrong") else outcome] += 1
        if outcome.startswith("wrong"):
            wrong.append(f"{label}: {outcome}")
        if seconds > MAX_SECONDS:
            slow.append((seconds, label))
        slowest = max(slowest, (seconds, label))

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nvcre-fuzz-") as tmp:
        folder = Path(tmp)
        for name, path in special_files(folder / "special"):
            for command in ("validate", "render"):
                # a reader that waited on the FIFO would hang here: a watchdog opens its other end
                writer = threading.Timer(10.0, lambda p=path, n=name: Path(p).write_bytes(b"") if n == "fifo" else None)
                writer.start()
                outcome, seconds = runner.run(command, path)
                writer.cancel()
                record(f"{name} ({command})", outcome, seconds)
        target = folder / "input.yaml"
        for n in range(args.examples):
            source, data = inputs[rng.randrange(len(inputs))]
            kinds, mutated = mutate(rng, data)
            target.write_bytes(mutated)
            command = "validate" if n % 2 else "render"
            outcome, seconds = runner.run(command, str(target))
            record(f"#{n} {source} [{kinds}] ({command})", outcome, seconds)
    elapsed = time.monotonic() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = sum(outcomes.values())
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print(f"corpus: {len(inputs)} input files; seed {args.seed}")
    print(f"inputs: {total} in {elapsed:.0f} s ({1000 * elapsed / max(total, 1):.1f} ms each)")
    print(f"outcomes: ok {outcomes['ok']}, refused (exit 2) {outcomes['refused']}, wrong {outcomes['wrong']}")
    for line in wrong[:5]:
        print(f"  {line[:400]}")
    print(f"over {MAX_SECONDS:.0f} s: {len(slow)}; slowest {slowest[0]:.2f} s ({slowest[1][:200]})")
    print(f"peak RSS: {peak_mb:.0f} MB (limit {MAX_RSS_MB} MB)")
    return 0 if not wrong and not slow and peak_mb < MAX_RSS_MB else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
