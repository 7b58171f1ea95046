"""The progress a waiting run command shows on stderr: a rich live table on a terminal, else lines.

``[watch]`` lines (one per status change, a heartbeat every 15 s) are what a CI log keeps.
"""

from __future__ import annotations

import sys
from typing import Any

from nvcre.runtime.report.format import elapsed_text


class _PlainProgress:
    """``[watch]`` lines on a non-terminal stderr: a line per change and a heartbeat every 15 s."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}
        self._beat = 0.0

    def __call__(self, progress: Any) -> None:
        changed = False
        for cat in progress.categories:
            if self._last.get(cat.label) != cat.status:
                self._last[cat.label] = cat.status
                sys.stderr.write(f"[watch] {cat.label}: {cat.status} ({elapsed_text(progress.elapsed)})\n")
                changed = True
        if not changed and progress.elapsed - self._beat >= 15:
            self._beat = progress.elapsed
            running = [c for c in progress.categories if c.status == "InProgress"]
            if not progress.categories:
                sys.stderr.write(f"[watch] Waiting for status... ({elapsed_text(progress.elapsed)})\n")
            for cat in running:
                sys.stderr.write(
                    f"[watch] {cat.label}: {cat.status} ({elapsed_text(progress.elapsed)}; jobs running "
                    f"{progress.jobs_running}, blocked {progress.jobs_blocked}, done {progress.jobs_done})\n"
                )
        sys.stderr.flush()

    def close(self) -> None:
        """Plain lines hold nothing open: there is nothing to stop."""


class _LiveProgress:
    """A rich live table on a terminal: categories, jobs, elapsed against the budget."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = console if console is not None else Console(stderr=True)
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._live.start()

    def __call__(self, progress: Any) -> None:
        from rich.table import Table

        table = Table(title=f"{progress.phase} - {elapsed_text(progress.elapsed)} of {elapsed_text(progress.budget)}")
        table.add_column("category")
        table.add_column("status")
        for cat in progress.categories:
            table.add_row(cat.label, cat.status)
        table.caption = (
            f"jobs: {progress.jobs_running} running, {progress.jobs_blocked} blocked, "
            f"{progress.jobs_done} done ({progress.jobs_failed} failed)"
        )
        self._live.update(table)

    def close(self) -> None:
        self._live.stop()


def progress_view() -> Any:
    """The rich live table when stderr is a terminal, else plain ``[watch]`` lines."""
    return _LiveProgress() if sys.stderr.isatty() else _PlainProgress()
