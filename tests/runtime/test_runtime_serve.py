"""The HTTP endpoints: ``/metrics`` answers from the registry and gives its memory back after."""

from __future__ import annotations

import ctypes.util
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from nvcre.runtime import memory, serve


def test_a_scrape_answers_and_then_trims_the_heap(monkeypatch: pytest.MonkeyPatch):
    trims: list[int] = []
    monkeypatch.setattr(serve, "trim", lambda: trims.append(1) or True)
    registry = CollectorRegistry()
    Counter("nvcre_test_things", "things", registry=registry).inc(3)
    endpoint = serve.Endpoint(("127.0.0.1", 0), registry=registry).start()
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=10).read().decode()
        assert "nvcre_test_things_total 3.0" in body
        assert trims == [1]
        assert urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/healthz", timeout=10).read() == b"ok\n"
        assert trims == [1], "only a scrape trims"
    finally:
        endpoint.stop()


@pytest.mark.skipif(not ctypes.util.find_library("c"), reason="no C library to load")
def test_trim_reaches_glibc_where_there_is_one():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    assert memory.trim() is hasattr(libc, "malloc_trim")
