"""The controller's two HTTP endpoints: ``/metrics`` (Prometheus text) and ``/healthz``/``/readyz``.

Both listen on loopback by default; the address is a flag. ``/readyz`` answers 200 once every
informer has listed at least once. ``/healthz`` answers 200 unless ``healthy`` names a problem (a
reconcile worker stuck on one object), then 500 with the problem as the body. The metrics endpoint can be served over TLS (``tls`` gives the
context for each new connection; the handshake runs in the connection's own thread, under its
timeout, so a client that stalls in it holds nobody else up) and can require every ``/metrics``
request to pass ``authorize`` (see :mod:`nvcre.runtime.kube.review`): no token 401, a token
that may not read 403, too many tokens to review 429 (with ``Retry-After``). Scrapes of ``/metrics`` run one at a time, are written as
they are made (:mod:`nvcre.runtime.exposition`), and each gives the memory it used back to the
OS (:func:`nvcre.runtime.memory.trim`). Every connection has a socket timeout
(``CLIENT_TIMEOUT``), so a reader that stops reading cannot hold the scrape lock for longer, and a
client that goes away early (a probe that timed out, a scrape cancelled) ends its request quietly,
with a debug line, instead of a traceback in the log stream.
"""

from __future__ import annotations

import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from ..memory import trim
from ..metrics.exposition import write_exposition

__all__ = ["CLIENT_TIMEOUT", "Authorize", "Endpoint", "parse_address"]

log = logging.getLogger(__name__)

#: Seconds a connection may stall (reading the request, or taking the answer) before it is dropped.
CLIENT_TIMEOUT = 30.0
_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class _Verdict(Protocol):
    @property
    def status(self) -> int: ...

    @property
    def reason(self) -> str: ...


#: Given the request's ``Authorization`` header (or None): its status (200 lets it through) and reason.
Authorize = Callable[[str | None], _Verdict]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    tls: Callable[[], ssl.SSLContext] | None = None

    def get_request(self) -> tuple[socket.socket, object]:
        connection, address = self.socket.accept()
        if self.tls is None:
            return connection, address
        # the handshake happens on the first read, in the handler's thread and under its timeout
        return self.tls().wrap_socket(connection, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, _GONE):
            log.debug("http client went away", extra={"client": str(client_address), "error": type(error).__name__})
            return
        if isinstance(error, ssl.SSLError):
            # a plain-HTTP client, a scanner, or a client that refused our certificate
            log.debug("tls handshake failed", extra={"client": str(client_address), "error": str(error)})
            return
        log.error("http request failed", exc_info=True)


def parse_address(text: str) -> tuple[str, int] | None:
    """``host:port`` (``:port`` means loopback); ``0`` or empty disables the endpoint."""
    value = text.strip()
    if value in ("", "0"):
        return None
    host, sep, port = value.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {text!r} must be host:port")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"bind address {text!r} has a non-numeric port") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"bind address {text!r} has a port outside 0-65535")
    return (host or "127.0.0.1"), number


def _health_answer(problem: str | None) -> tuple[int, bytes]:
    """``/healthz``'s status and body: 200 ``ok``, or 500 naming the problem."""
    return (200, b"ok\n") if problem is None else (500, f"unhealthy: {problem}\n".encode())


class Endpoint:
    """One small HTTP server in a daemon thread."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        registry: CollectorRegistry | None = None,
        ready: Callable[[], bool] = lambda: True,
        healthy: Callable[[], str | None] = lambda: None,
        tls: Callable[[], ssl.SSLContext] | None = None,
        authorize: Authorize | None = None,
    ) -> None:
        registry_ref = registry
        ready_ref = ready
        healthy_ref = healthy
        authorize_ref = authorize
        scraping = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            timeout = CLIENT_TIMEOUT

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics" and registry_ref is not None:
                    if authorize_ref is not None:
                        verdict = authorize_ref(self.headers.get("Authorization"))
                        if verdict.status != 200:
                            extra = {"WWW-Authenticate": 'Bearer realm="nvcre-metrics"'} if verdict.status == 401 else {}
                            if verdict.status == 429:
                                extra = {"Retry-After": "1"}
                            self._send(verdict.status, f"{verdict.reason}\n".encode(), "text/plain", extra)
                            return
                    with scraping:
                        # Streamed without a length: the answer ends when the connection closes.
                        self.send_response(200)
                        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                        self.end_headers()
                        write_exposition(registry_ref, self.wfile.write)
                        trim()
                elif path == "/healthz":
                    self._send(*_health_answer(healthy_ref()), "text/plain")
                elif path == "/readyz":
                    ok = ready_ref()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"informers not synced\n", "text/plain")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _send(self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = _Server(address, Handler)
        self.server.tls = tls
        self._thread = threading.Thread(target=self.server.serve_forever, name=f"http-{address[1]}", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> Endpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
