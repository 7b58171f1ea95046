"""The streamed exposition: the same bytes as one ``generate_latest``, written in pieces."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from nvcre.runtime.metrics import exposition


class _Gauges(Collector):
    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def collect(self) -> Iterable[Metric]:
        for name, count in self.sizes.items():
            family = GaugeMetricFamily(name, f"{name} help", labels=["measurement", "size"])
            for i in range(count):
                family.add_metric([f"m-{i // 25}", str(8 << (i % 25))], i / 7)
            yield family


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("nvcre_test_requests", "requests", ["verb"], registry=registry).labels("get").inc(2)
    Histogram("nvcre_test_wait_seconds", "wait", registry=registry).observe(0.3)
    registry.register(_Gauges({"nvcre_test_big": 2 * exposition.BATCH + 17, "nvcre_test_empty": 0, "nvcre_test_small": 3}))
    return registry


def test_the_pieces_add_up_to_the_whole_answer():
    registry = _registry()
    pieces: list[bytes] = []
    exposition.write_exposition(registry, pieces.append)
    assert b"".join(pieces) == generate_latest(registry)
    assert len(pieces) >= 3 + 3, "the big family went out in batches"
    assert max(len(p) for p in pieces) < len(generate_latest(registry)) / 2
    assert b"".join(pieces).count(b"# TYPE nvcre_test_big gauge") == 1
