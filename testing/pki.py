"""A throw-away certificate authority for the test control plane, made with the
``openssl`` command (run with argument lists, never through a shell).

It issues the apiserver serving certificate, client certificates (the admin
credential is ``O=system:masters``), serving certificates for simulated kubelets
and the service-account token signing key pair. All keys are ECDSA P-256, which
is fast to generate and accepted by every component.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

VALIDITY_DAYS = 7
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._@ -]{0,62}$")
_DNS_OK = re.compile(r"^[A-Za-z0-9*]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class PkiError(RuntimeError):
    """openssl failed or a requested name cannot be put into a certificate."""


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key on disk (PEM)."""

    cert: Path
    key: Path


def _check_name(value: str, what: str) -> str:
    if not _NAME_OK.match(value):
        raise PkiError(f"{what} {value!r} is not a simple certificate name")
    return value


def _subject(common_name: str, organizations: Iterable[str]) -> str:
    parts = [f"/O={_check_name(o, 'organization')}" for o in organizations]
    parts.append(f"/CN={_check_name(common_name, 'common name')}")
    return "".join(parts)


def _subject_alt_names(dns: Sequence[str], ips: Sequence[str]) -> str:
    entries = []
    for name in dns:
        if not _DNS_OK.match(name):
            raise PkiError(f"DNS name {name!r} is not valid in a certificate")
        entries.append(f"DNS:{name}")
    for ip in ips:
        entries.append(f"IP:{ipaddress.ip_address(ip)}")
    return ",".join(entries)


class CertificateAuthority:
    """A self-signed CA in ``directory`` that signs leaf certificates with openssl."""

    def __init__(self, directory: Path, openssl: str, *, name: str = "nvcre-test-ca") -> None:
        self.directory = directory
        self.openssl = openssl
        directory.mkdir(parents=True, exist_ok=True)
        self.pair = KeyPair(directory / "ca.crt", directory / "ca.key")
        self._run(
            "req", "-x509", "-new", "-nodes",
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-keyout", str(self.pair.key), "-out", str(self.pair.cert),
            "-days", str(VALIDITY_DAYS), "-subj", _subject(name, ()),
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-addext", "subjectKeyIdentifier=hash",
        )  # fmt: skip

    @property
    def cert(self) -> Path:
        return self.pair.cert

    @property
    def key(self) -> Path:
        return self.pair.key

    def _run(self, *args: str) -> None:
        proc = subprocess.run([self.openssl, *args], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise PkiError(f"openssl {args[0]} failed (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")

    def issue(
        self,
        filename: str,
        *,
        common_name: str,
        organizations: Sequence[str] = (),
        dns: Sequence[str] = (),
        ips: Sequence[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> KeyPair:
        """Sign a new leaf certificate; ``filename`` names ``<filename>.crt/.key``."""
        if not re.fullmatch(r"[A-Za-z0-9._-]+", filename):
            raise PkiError(f"unsafe certificate file name {filename!r}")
        if not (server or client):
            raise PkiError("a leaf certificate needs server and/or client usage")
        pair = KeyPair(self.directory / f"{filename}.crt", self.directory / f"{filename}.key")
        csr = self.directory / f"{filename}.csr"
        ext = self.directory / f"{filename}.ext"
        usages = [u for u, on in (("serverAuth", server), ("clientAuth", client)) if on]
        lines = [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            f"extendedKeyUsage={','.join(usages)}",
            "authorityKeyIdentifier=keyid",
        ]
        sans = _subject_alt_names(dns, ips)
        if sans:
            lines.append(f"subjectAltName={sans}")
        ext.write_text("\n".join(lines) + "\n")
        try:
            self._run(
                "req", "-new", "-nodes",
                "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-keyout", str(pair.key), "-out", str(csr),
                "-subj", _subject(common_name, organizations),
            )  # fmt: skip
            self._run(
                "x509", "-req", "-in", str(csr),
                "-CA", str(self.cert), "-CAkey", str(self.key),
                "-set_serial", f"0x{secrets.token_hex(16)}",
                "-days", str(VALIDITY_DAYS), "-sha256",
                "-extfile", str(ext), "-out", str(pair.cert),
            )  # fmt: skip
        finally:
            csr.unlink(missing_ok=True)
            ext.unlink(missing_ok=True)
        pair.key.chmod(0o600)
        return pair

    def signing_key_pair(self, filename: str) -> KeyPair:
        """A bare key pair (``.key`` private, ``.pub`` public) for service-account tokens."""
        private = self.directory / f"{filename}.key"
        public = self.directory / f"{filename}.pub"
        self._run(
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", str(private),
        )  # fmt: skip
        self._run("pkey", "-in", str(private), "-pubout", "-out", str(public))
        private.chmod(0o600)
        return KeyPair(cert=public, key=private)
