"""How much memory a real-node environment uses: the resident set of every process of the stack
(the control plane and the controllers it runs, and everything in the environment's cgroups:
namespace holders, containerd, shims, kubelets, device plugins, CoreDNS and the pods' own
processes), summed, once or as the peak seen by a sampler thread while something runs."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import cgroups


def rss_bytes(pid: int) -> int:
    """The resident set of ``pid`` in bytes, 0 when it is gone or unreadable."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            fields = line.split()
            return int(fields[1]) * 1024 if len(fields) >= 2 and fields[1].isdigit() else 0
    return 0


def stack_pids(cluster: Any) -> set[int]:
    """Every process of ``cluster`` (a running :class:`~.cluster.RealCluster`) this moment."""
    found = {int(pid) for pid in cluster.pids.values()}
    found |= cgroups.pids(cluster.cgroup_top)
    return found


def total_rss(pids: Iterable[int]) -> int:
    return sum(rss_bytes(pid) for pid in set(pids))


class PeakSampler:
    """A thread summing the stack's resident memory every ``interval`` seconds; ``peak`` is the
    largest sum seen (bytes). Use as a context manager around what is measured."""

    def __init__(self, cluster: Any, interval: float = 0.5) -> None:
        self._cluster = cluster
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self.peak = 0
        self.samples = 0

    def _sample(self) -> None:
        self.peak = max(self.peak, total_rss(stack_pids(self._cluster)))
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            # a cgroup or process vanishing mid-read loses only this sample; the next one counts
            with contextlib.suppress(OSError, cgroups.CgroupError):
                self._sample()
            self._stop.wait(self._interval)

    def __enter__(self) -> "PeakSampler":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
