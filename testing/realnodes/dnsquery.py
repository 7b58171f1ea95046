"""A minimal DNS client (one A-record question over UDP) for checking the environment's CoreDNS
from this process, with the query socket opened inside the environment's network namespace."""

from __future__ import annotations

import secrets
import socket
import struct
from pathlib import Path

from .namespaces import socket_in

_TYPE_A = 1
_CLASS_IN = 1


def build_query(name: str, ident: int) -> bytes:
    """A recursive query for the A records of ``name``."""
    labels = [part for part in name.rstrip(".").split(".") if part]
    if not labels or any(len(part) > 63 for part in labels):
        raise ValueError(f"bad DNS name {name!r}")
    question = b"".join(bytes([len(part)]) + part.encode("ascii") for part in labels) + b"\0"
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question + struct.pack("!HH", _TYPE_A, _CLASS_IN)


def _skip_name(packet: bytes, offset: int) -> int:
    while True:
        if offset >= len(packet):
            raise ValueError("truncated name")
        length = packet[offset]
        if length & 0xC0 == 0xC0:
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length


def parse_answer(packet: bytes, ident: int) -> tuple[int, list[str]]:
    """``(rcode, A addresses)`` of a response to the query ``ident``."""
    if len(packet) < 12:
        raise ValueError("short DNS response")
    got, flags, qdcount, ancount, _, _ = struct.unpack("!HHHHHH", packet[:12])
    if got != ident or not flags & 0x8000:
        raise ValueError("not the answer to this query")
    offset = 12
    for _ in range(qdcount):
        offset = _skip_name(packet, offset) + 4
    addresses = []
    for _ in range(ancount):
        offset = _skip_name(packet, offset)
        rtype, rclass, _ttl, length = struct.unpack("!HHIH", packet[offset : offset + 10])
        offset += 10
        if rtype == _TYPE_A and rclass == _CLASS_IN and length == 4:
            addresses.append(socket.inet_ntoa(packet[offset : offset + 4]))
        offset += length
    return flags & 0x000F, addresses


def resolve(netns: str | Path, server: str, name: str, timeout: float = 2.0) -> tuple[int, list[str]]:
    """Ask ``server`` (inside the namespace at ``netns``) for ``name``; ``(rcode, addresses)``."""
    ident = secrets.randbelow(1 << 16)
    sock = socket_in(netns, socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.settimeout(timeout)
        sock.sendto(build_query(name, ident), (server, 53))
        packet, _ = sock.recvfrom(4096)
    finally:
        sock.close()
    return parse_answer(packet, ident)
