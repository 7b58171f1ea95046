"""Signing and checking a Statement in a DSSE envelope, with ECDSA P-256 or Ed25519 PEM keys.

The envelope is ``{"payloadType", "payload", "signatures": [{"keyid", "sig"}]}``: the payload is
the Statement's bytes in base64, and each signature is over the pre-authentication encoding
(:func:`pae`) of the payload type and the payload, never over the payload alone, so a signature
cannot be replayed under another type. ECDSA signatures use SHA-256 and are DER-encoded, as
most verifiers expect, with deterministic nonces (RFC 6979). The key id is the SHA-256 of the public key's DER encoding.

The same signature is also written as a Sigstore bundle (media type v0.3, the envelope under
``dsseEnvelope``, the key id as the public-key hint), the form ``cosign verify-blob-attestation
--bundle`` reads. The signature covers only the PAE, so both files carry the same bytes; the
bundle's envelope leaves the signature's key id out, because Sigstore's verifiers skip a
signature whose key id differs from the one they derive for the key.

Reading an envelope back is bounded: at most :data:`MAX_SIGNATURES` signatures of signature
size, and a signature whose key id names another key is skipped without a verification, so a
hostile envelope costs a handful of checks at most.

Private keys are read from unencrypted PKCS#8 or SEC1 PEM files, or encrypted ones whose password is in
``NVCRE_SIGN_KEY_PASSWORD``. No message ever includes key material: errors name the file only.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .canonical import parse_json, read_limited, sha256_hex
from .errors import EvidenceError, Mismatch

__all__ = [
    "ENVELOPE_FILE",
    "MAX_SIGNATURES",
    "PAYLOAD_TYPE",
    "SIGSTORE_FILE",
    "SIGSTORE_MEDIA_TYPE",
    "sigstore_bundle",
    "parse_sigstore_bundle",
    "Signer",
    "load_public_key",
    "load_signer",
    "pae",
    "parse_envelope",
    "key_id",
    "sign",
    "verify",
]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
ENVELOPE_FILE = "statement.dsse.json"
SIGSTORE_FILE = "statement.sigstore.json"
SIGSTORE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
PASSWORD_VARIABLE = "NVCRE_SIGN_KEY_PASSWORD"
_MAX_KEY_BYTES = 64 * 1024
#: how many signatures an envelope may carry: a bundle is signed once; a verifier tries each
#: signature over the whole payload, so an envelope of thousands would be work without end
MAX_SIGNATURES = 8
#: the longest signature accepted, in base64 characters (DER ECDSA P-256 is at most 72 bytes, Ed25519 64)
_MAX_SIGNATURE_TEXT = 512


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: ``DSSEv1 <len> <type> <len> <payload>`` (byte lengths)."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _supported(key: Any, path: Path, private: bool) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)) and isinstance(key.curve, ec.SECP256R1):
        return
    what = "private" if private else "public"
    raise EvidenceError(f"{path}: unsupported {what} key type {type(key).__name__}; use an ECDSA P-256 or Ed25519 key")


def key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return sha256_hex(der)


@dataclass(frozen=True)
class Signer:
    """A loaded private key; ``repr`` shows the key id only."""

    key: Any
    key_id: str

    def __repr__(self) -> str:
        return f"Signer(key_id={self.key_id!r})"

    def sign(self, message: bytes) -> bytes:
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        if isinstance(self.key, ec.EllipticCurvePrivateKey):
            # RFC 6979 nonces: the same Statement and key give the same signature, so a signed
            # bundle is as reproducible as an unsigned one (Ed25519 is deterministic already)
            try:
                return bytes(self.key.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
            except UnsupportedAlgorithm:  # an OpenSSL older than 3.2: random nonces, still valid
                return bytes(self.key.sign(message, ec.ECDSA(hashes.SHA256())))
        return bytes(self.key.sign(message))


def load_signer(path: Path) -> Signer:
    """The private key in the PEM file ``path``; EvidenceError (naming the file only) otherwise."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = read_limited(path, _MAX_KEY_BYTES, "key file")
    password = os.environ.get(PASSWORD_VARIABLE)
    try:
        key = serialization.load_pem_private_key(data, password=password.encode("utf-8") if password else None)
    except TypeError:
        if password:
            raise EvidenceError(f"{path}: the key is not encrypted; unset {PASSWORD_VARIABLE}") from None
        raise EvidenceError(f"{path}: the key is encrypted; put its password in {PASSWORD_VARIABLE}") from None
    except (ValueError, UnsupportedAlgorithm):
        raise EvidenceError(f"{path}: not a PEM private key this nvcrectl can read (or a wrong password)") from None
    _supported(key, path, private=True)
    return Signer(key, key_id(key.public_key()))


def load_public_key(path: Path) -> Any:
    """The public key in the PEM file ``path``; EvidenceError otherwise."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = read_limited(path, _MAX_KEY_BYTES, "key file")
    if b"PRIVATE KEY" in data:
        raise EvidenceError(f"{path}: this is a private key; verify with the public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise EvidenceError(f"{path}: not a PEM public key this nvcrectl can read") from None
    _supported(key, path, private=False)
    return key


def _b64(text: Any, where: str) -> bytes:
    if not isinstance(text, str) or not text:
        raise EvidenceError(f"{where}: expected a non-empty base64 string")
    try:
        if "-" in text or "_" in text:
            return base64.urlsafe_b64decode(text.encode("ascii"))
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise EvidenceError(f"{where}: not valid base64") from None


def sign(statement_bytes: bytes, signer: Signer) -> dict[str, Any]:
    """The envelope of ``statement_bytes`` signed by ``signer``."""
    signature = signer.sign(pae(PAYLOAD_TYPE, statement_bytes))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(statement_bytes).decode("ascii"),
        "signatures": [{"keyid": signer.key_id, "sig": base64.b64encode(signature).decode("ascii")}],
    }


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]


def _count_signatures(data: bytes, where: str) -> None:
    """Refuse an envelope of more than MAX_SIGNATURES signatures on its bytes, before parsing it
    (the payload is base64 and key ids are hex: only a signature holds ``"sig"``)."""
    count = data.count(b'"sig"')
    if count > MAX_SIGNATURES:
        raise EvidenceError(f"{where}: signatures: {count:,} signatures; at most {MAX_SIGNATURES} are read")


def parse_envelope(data: bytes, where: str) -> Envelope:
    """The envelope in ``data``, every field checked; EvidenceError naming the field otherwise."""
    _count_signatures(data, where)
    return _envelope_from(parse_json(data, where), where)


def _envelope_from(value: Any, where: str) -> Envelope:
    if not isinstance(value, Mapping):
        raise EvidenceError(f"{where}: expected a JSON object (a DSSE envelope)")
    kind = value.get("payloadType")
    if kind != PAYLOAD_TYPE:
        raise EvidenceError(f"{where}: payloadType: expected {PAYLOAD_TYPE!r}, got {str(kind)[:80]!r}")
    signatures = value.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise EvidenceError(f"{where}: signatures: expected a non-empty list")
    if len(signatures) > MAX_SIGNATURES:
        raise EvidenceError(f"{where}: signatures: {len(signatures):,} signatures; at most {MAX_SIGNATURES} are read")
    found = []
    for index, item in enumerate(signatures):
        if not isinstance(item, Mapping):
            raise EvidenceError(f"{where}: signatures[{index}]: expected an object")
        key_id = item.get("keyid", "")
        if not isinstance(key_id, str) or len(key_id) > _MAX_SIGNATURE_TEXT:
            raise EvidenceError(f"{where}: signatures[{index}].keyid: expected a key id string")
        sig = item.get("sig")
        if isinstance(sig, str) and len(sig) > _MAX_SIGNATURE_TEXT:
            raise EvidenceError(f"{where}: signatures[{index}].sig: longer than any ECDSA P-256 or Ed25519 signature")
        found.append((key_id, _b64(sig, f"{where}: signatures[{index}].sig")))
    payload = _b64(value.get("payload"), f"{where}: payload")
    return Envelope(kind, payload, tuple(found))


def verify(envelope: Envelope, public_key: Any) -> None:
    """Return when one signature of the envelope is the key's over the PAE; Mismatch otherwise."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    message = pae(envelope.payload_type, envelope.payload)
    wanted = key_id(public_key)
    for stated, signature in envelope.signatures:
        if stated and stated != wanted:
            continue  # made by another key: no need to spend a verification on it
        try:
            if isinstance(public_key, ec.EllipticCurvePublicKey):
                public_key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
            else:
                public_key.verify(signature, message)
            return
        except (InvalidSignature, ValueError):
            continue
    raise Mismatch(f"no signature in the envelope verifies with this public key (key id {wanted[:16]}...)")


def sigstore_bundle(envelope: Mapping[str, Any]) -> dict[str, Any]:
    """The Sigstore bundle (v0.3, public key, no transparency log entry) of a signed envelope."""
    signatures = envelope["signatures"]
    return {
        "mediaType": SIGSTORE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": signatures[0].get("keyid", "")}},
        "dsseEnvelope": {
            "payload": envelope["payload"],
            "payloadType": envelope["payloadType"],
            "signatures": [{"sig": s["sig"]} for s in signatures],
        },
    }


def parse_sigstore_bundle(data: bytes, where: str) -> Envelope:
    """The envelope inside a Sigstore bundle this project wrote; EvidenceError naming the field otherwise."""
    _count_signatures(data, where)
    value = parse_json(data, where)
    if not isinstance(value, Mapping):
        raise EvidenceError(f"{where}: expected a JSON object (a Sigstore bundle)")
    if value.get("mediaType") != SIGSTORE_MEDIA_TYPE:
        raise EvidenceError(f"{where}: mediaType: expected {SIGSTORE_MEDIA_TYPE!r}, got {str(value.get('mediaType'))[:80]!r}")
    inner = value.get("dsseEnvelope")
    if not isinstance(inner, Mapping):
        raise EvidenceError(f"{where}: dsseEnvelope: expected an object")
    return _envelope_from(inner, f"{where}: dsseEnvelope")
