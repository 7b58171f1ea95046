"""Value formats shared by the reports and the run commands: sizes, bandwidths, goodput, durations."""

from __future__ import annotations

__all__ = [
    "bandwidth",
    "elapsed_text",
    "goodput",
    "group_bandwidth",
    "human_duration",
    "restart_seconds",
    "seconds",
    "size",
    "step_time",
    "tflops",
]

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def size(size_bytes: int) -> str:
    """A message size in binary units: ``8 B``, ``32 MB``, ``16 GB``, ``1.5 GB``."""
    value = float(size_bytes)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    text = f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
    return f"{text} {_UNITS[unit]}"


def bandwidth(value: float) -> str:
    """A table bandwidth: ``487.87 GB/s``."""
    return f"{value:.2f} GB/s"


def group_bandwidth(value: float) -> str:
    """A per-group bandwidth: ``100.0 GB/s``."""
    return f"{value:.1f} GB/s"


def goodput(ratio: float) -> str:
    """``0.90 (90%)``."""
    return f"{ratio:.2f} ({ratio * 100:.0f}%)"


def tflops(value: float) -> str:
    """``539.8``."""
    return f"{value:.1f}"


def step_time(seconds: float) -> str:
    """``2.85s``."""
    return f"{seconds:.2f}s"


def human_duration(seconds: float) -> str:
    """``45s``, ``12m 5s``, ``2h 3m`` (whole seconds, truncated; negatives count as zero)."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def elapsed_text(seconds: float) -> str:
    """How long a run has waited, as its progress lines say it: ``1h2m3s``, ``2m3s``, ``3s`` (whole seconds)."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def restart_seconds(value: float) -> str:
    """A time a restart cost: ``0.0s``, ``21.0s`` under a minute, then as ``human_duration``."""
    if value < 60:
        return f"{max(0.0, value):.1f}s"
    return human_duration(value)


def seconds(value: float) -> float:
    """A JSON duration in seconds, rounded to hundredths (as the measurements publish them)."""
    return round(max(0.0, value), 2)
