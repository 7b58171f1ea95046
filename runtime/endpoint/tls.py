"""The metrics endpoint's serving certificate: files given by flag (reloaded when they change), or
a self-signed one made at start.

``--metrics-cert-path`` names a directory holding ``--metrics-cert-name`` and
``--metrics-cert-key`` (``tls.crt``/``tls.key``, a mounted Secret's layout). A mounted Secret is
rewritten in place when its certificate is renewed, so the files are looked at again (at most every
:data:`RECHECK_SECONDS`) and a new context is used for the connections after a change; a change
that does not load keeps the previous context and logs why. Without a directory, a key pair is
made in memory at start (ECDSA P-256, valid a year, for ``localhost``, the host name and the
loopback addresses) and written only to a private temporary directory long enough to load it.
Either way TLS 1.2 is the oldest version accepted.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["CertificateError", "RECHECK_SECONDS", "ServingCertificate", "self_signed_pem"]

log = logging.getLogger(__name__)

#: How often the certificate files are looked at for a change.
RECHECK_SECONDS = 10.0


class CertificateError(ValueError):
    """The certificate or key cannot be read or does not load (the message names the file)."""


def _context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    try:
        context.load_cert_chain(str(cert), str(key))
    except FileNotFoundError as exc:
        raise CertificateError(f"{exc.filename}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        raise CertificateError(f"{cert} / {key}: cannot load the certificate and key ({exc})") from None
    return context


def self_signed_pem(hosts: list[str], days: int = 365) -> tuple[bytes, bytes]:
    """A self-signed certificate and its unencrypted PKCS#8 key, PEM, for ``hosts`` (names or IPs)."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise CertificateError(
            "the Python package cryptography is needed to make a serving certificate: install it, "
            "or give --metrics-cert-path, or serve plain HTTP with --metrics-secure=false"
        ) from None
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nvcre-metrics")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _generated_context() -> ssl.SSLContext:
    cert_pem, key_pem = self_signed_pem(["localhost", socket.gethostname(), "127.0.0.1", "::1"])
    with tempfile.TemporaryDirectory(prefix="nvcre-metrics-tls-") as directory:  # created 0700
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert.write_bytes(cert_pem)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key_pem)
        return _context(cert, key)


class ServingCertificate:
    """The TLS context for the next connection (see the module docstring)."""

    def __init__(
        self,
        directory: str | None = None,
        cert_name: str = "tls.crt",
        key_name: str = "tls.key",
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        if directory:
            self._files: tuple[Path, Path] | None = (Path(directory) / cert_name, Path(directory) / key_name)
            self._seen = self._stamp()
            self._current = _context(*self._files)
        else:
            self._files = None
            self._seen = None
            self._current = _generated_context()
        self._checked = clock()

    @property
    def generated(self) -> bool:
        """True when the certificate was made at start rather than read from files."""
        return self._files is None

    def _stamp(self) -> tuple[tuple[int, int, int], ...] | None:
        assert self._files is not None
        try:
            return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in (p.stat() for p in self._files))
        except OSError:
            return None

    def context(self) -> ssl.SSLContext:
        """The context to wrap a new connection with; reloads changed files first."""
        if self._files is None:
            return self._current
        now = self._clock()
        with self._lock:
            if now - self._checked < RECHECK_SECONDS:
                return self._current
            self._checked = now
            stamp = self._stamp()
            if stamp is None or stamp == self._seen:
                return self._current
            try:
                self._current = _context(*self._files)
            except CertificateError as exc:
                log.warning("metrics serving certificate changed but does not load; keeping the previous one", extra={"error": str(exc)})
            else:
                log.info("metrics serving certificate reloaded", extra={"path": str(self._files[0])})
            self._seen = stamp
            return self._current
