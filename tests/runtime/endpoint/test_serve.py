"""The HTTP endpoints: ``/metrics`` answers from the registry and gives its memory back after."""

from __future__ import annotations

import ctypes.util
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from nvcre.runtime import memory
from nvcre.runtime.endpoint import serve


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


def _big_registry() -> CollectorRegistry:
    from prometheus_client import Gauge

    registry = CollectorRegistry()
    gauge = Gauge("nvcre_test_wide", "many series", ["name"], registry=registry)
    for i in range(60_000):
        gauge.labels(f"series-{i:06d}-" + "x" * 40).set(i)
    return registry


def test_a_client_that_leaves_early_is_no_traceback(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture):
    import socket
    import struct
    import time

    endpoint = serve.Endpoint(("127.0.0.1", 0), registry=_big_registry()).start()
    try:
        for path in ("/metrics", "/healthz"):
            sock = socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            sock.recv(64)
            # close with a reset, as a probe that gave up does
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        time.sleep(1.0)
        body = urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/healthz", timeout=10).read()
        assert body == b"ok\n"
    finally:
        endpoint.stop()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert not [r for r in caplog.records if r.levelno >= 40]


def test_connections_have_a_timeout() -> None:
    endpoint = serve.Endpoint(("127.0.0.1", 0), registry=CollectorRegistry())
    try:
        assert endpoint.server.RequestHandlerClass.timeout == serve.CLIENT_TIMEOUT > 0
    finally:
        endpoint.server.server_close()
