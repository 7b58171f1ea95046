"""The two bridges between the host's loopback and the environment's network namespace, both
threads of the supervising process, so no address or route is ever added to the host:

- :class:`ApiForwarder` listens on ``127.0.0.1:<port>`` *inside* the namespace and relays each
  connection to the API server on the host's ``127.0.0.1:<port>``. Kubelets, CoreDNS and
  kube-proxy use the same server URL as the admin kubeconfig.
- :class:`ConnectProxy` is the API server's egress proxy (``--egress-selector-config-file``,
  HTTP CONNECT over a Unix socket) for the ``cluster`` traffic: ``kubectl logs/exec`` reaching a
  kubelet at its node IP, which only exists inside the namespace. CONNECT targets on the host's
  loopback (webhooks) are dialled on the host; targets in the environment's networks inside the
  namespace; anything else is refused.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from .namespaces import socket_in

_CHUNK = 65536
_MAX_REQUEST = 8192


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` into ``sink`` until either side ends (a reset is an end like any other),
    then tell ``sink`` nothing more comes."""
    with contextlib.suppress(OSError):
        while data := source.recv(_CHUNK):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def splice(a: socket.socket, b: socket.socket) -> None:
    """Relay bytes both ways until both directions end, then close both sockets."""
    other = threading.Thread(target=_pump, args=(b, a), daemon=True)
    other.start()
    _pump(a, b)
    other.join()
    a.close()
    b.close()


class _Server:
    """An accept loop on a listening socket, one thread per connection."""

    def __init__(self, listener: socket.socket, handle: Callable[[socket.socket], None], name: str) -> None:
        self.listener = listener
        self._handle = handle
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._guarded, args=(conn,), daemon=True).start()

    def _guarded(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        except OSError:
            conn.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._thread.join(timeout=5)


class ApiForwarder(_Server):
    """``127.0.0.1:port`` in the namespace at ``netns`` → ``127.0.0.1:port`` on the host."""

    def __init__(self, netns: str | Path, port: int) -> None:
        listener = socket_in(netns)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        self.port = port
        super().__init__(listener, self._relay, "nvcre-api-forwarder")
        self.start()

    def _relay(self, conn: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        upstream.settimeout(None)
        splice(conn, upstream)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(1024)
        if not chunk:
            raise OSError("connection closed before the CONNECT request ended")
        data += chunk
        if len(data) > _MAX_REQUEST:
            raise OSError("CONNECT request too long")
    return data


def parse_connect(request: bytes) -> tuple[str, int]:
    """``(host, port)`` of an HTTP ``CONNECT host:port HTTP/1.1`` request; ValueError otherwise."""
    line = request.split(b"\r\n", 1)[0].decode("ascii", "replace")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        raise ValueError(f"not a CONNECT request: {line[:80]!r}")
    host, sep, port = parts[1].rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad CONNECT target {parts[1][:80]!r}")
    return host.strip("[]"), int(port)


class ConnectProxy(_Server):
    """HTTP CONNECT on the Unix socket ``path``, dialling into ``netns`` for the ``networks`` given."""

    def __init__(self, path: Path, netns: str | Path, networks: Sequence[str]) -> None:
        self.netns = netns
        self.networks = [ipaddress.ip_network(n) for n in networks]
        path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        path.chmod(0o600)
        listener.listen(128)
        self.path = path
        super().__init__(listener, self._tunnel, "nvcre-egress-proxy")
        self.start()

    def route(self, host: str) -> str:
        """``host`` (loopback), ``netns`` (an environment network) or ``refuse``."""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return "refuse"
        if address.is_loopback:
            return "host"
        return "netns" if any(address in net for net in self.networks) else "refuse"

    def _tunnel(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            request = _read_request(conn)
            host, port = parse_connect(request)
        except (ValueError, OSError):
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        where = self.route(host)
        if where == "refuse":
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        upstream = socket_in(self.netns) if where == "netns" else socket.socket()
        upstream.settimeout(10)
        try:
            upstream.connect((host, port))
        except OSError:
            upstream.close()
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        upstream.settimeout(None)
        conn.settimeout(None)
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        early = request.split(b"\r\n\r\n", 1)[1]
        if early:
            upstream.sendall(early)
        splice(conn, upstream)
