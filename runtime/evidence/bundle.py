"""Writing a bundle directory, and checking one: every file against the Statement, the Statement against its signature.

Layout (every name relative to the bundle directory):

* ``statement.json``: the in-toto Statement; its subjects are every other file: the rendered
  Workflows (``workflows/<name>.yaml``), ``cluster-identity.json`` and the reports
  (``report.json``, ``report.txt``, ``junit.xml``, ``report.html``), so any verifier that checks
  a subject's digest (cosign included) checks each of them;
* ``statement.dsse.json`` (signed bundles only): the DSSE envelope whose payload is exactly the
  bytes of ``statement.json``;
* ``statement.sigstore.json`` (signed bundles only): the same signature as a Sigstore bundle,
  for ``cosign verify-blob-attestation --bundle``.

A bundle is written into a fresh sibling directory and renamed into place once complete, so a
failure leaves nothing behind; the target must not exist or be an empty directory. Checking
reads every file with a size limit (subjects are hashed in pieces, never held whole), bounds
every JSON file in items and nesting, and reports the first difference: a file missing, changed
or not named by the Statement, or a signature that the key does not verify. Anything the file
system refuses (a name too long for it, a file that cannot be opened) is invalid input, never a
crash.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from . import dsse
from .canonical import digest_limited, json_bytes, parse_json, read_limited, sha256_hex
from .errors import EvidenceError, Mismatch
from .identity import IDENTITY_FILE
from .statement import build_statement, parse_statement, subject

__all__ = [
    "BundleContents",
    "Checked",
    "Loaded",
    "STATEMENT_FILE",
    "check_bundle",
    "compose_bundle",
    "load_bundle",
    "read_bundle",
    "write_bundle",
]

STATEMENT_FILE = "statement.json"
REPORT_FILES = ("report.json", "report.txt", "junit.xml", "report.html")
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_STATEMENT_BYTES = 32 * 1024 * 1024
#: the cluster identity: one short entry per node
MAX_IDENTITY_BYTES = 8 * 1024 * 1024
#: a subject's path in the bundle: each part and the whole (file systems refuse longer names)
MAX_NAME_PART = 255
MAX_NAME = 1024
#: how many files a bundle may hold (a Workflow per category, the reports, the identity)
MAX_FILES = 1000


@dataclass(frozen=True)
class BundleContents:
    """Every file of a bundle as bytes, by relative name (the Statement and envelope included)."""

    files: Mapping[str, bytes]
    statement: Mapping[str, Any]


def compose_bundle(
    *,
    workflows: Sequence[tuple[str, bytes]],
    identity: Mapping[str, Any],
    reports: Mapping[str, bytes],
    predicate: Mapping[str, Any],
    signer: dsse.Signer | None = None,
) -> BundleContents:
    """The files of a bundle, in memory: subjects, reports, the Statement and (signed) its envelope."""
    missing = [name for name in REPORT_FILES if name not in reports]
    if missing:
        raise ValueError(f"reports missing: {', '.join(missing)}")
    files: dict[str, bytes] = {name: data for name, data in workflows}
    files[IDENTITY_FILE] = json_bytes(identity)
    files.update(reports)
    subjects = [subject(name, sha256_hex(data)) for name, data in sorted(files.items())]
    statement = build_statement(subjects, predicate)
    statement_bytes = json_bytes(statement)
    files[STATEMENT_FILE] = statement_bytes
    if signer is not None:
        envelope = dsse.sign(statement_bytes, signer)
        files[dsse.ENVELOPE_FILE] = json_bytes(envelope)
        files[dsse.SIGSTORE_FILE] = json_bytes(dsse.sigstore_bundle(envelope))
    return BundleContents(files, statement)


def write_bundle(contents: BundleContents, target: Path) -> None:
    """Lay the files out in ``target`` (absent or empty), all or nothing."""
    target = Path(target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise EvidenceError(f"{target}: exists and is not an empty directory; give a new directory")
    parent = target.parent if str(target.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    except OSError as exc:
        raise EvidenceError(f"{target}: cannot create: {exc.strerror or exc}") from None
    try:
        for name, data in sorted(contents.files.items()):
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(staging, 0o755)
        if target.exists():
            target.rmdir()
        os.rename(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EvidenceError(f"{target}: cannot write: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class Checked:
    """What :func:`check_bundle` found: the Statement, and whether a signature was checked."""

    statement: Mapping[str, Any]
    signed: bool
    signature_checked: bool
    files: int
    key_id: str = ""


def _safe_name(name: str, where: str) -> str:
    pure = PurePosixPath(name)
    if pure.is_absolute() or not pure.parts or any(p in ("", ".", "..") for p in pure.parts) or "\\" in name or "\0" in name:
        raise EvidenceError(f"{where}: {name[:80]!r} is not a plain relative file name")
    if len(name.encode("utf-8")) > MAX_NAME or any(len(p.encode("utf-8")) > MAX_NAME_PART for p in pure.parts):
        raise EvidenceError(f"{where}: {name[:80]!r}...: a file name longer than {MAX_NAME_PART} bytes a part or {MAX_NAME} in all")
    return pure.as_posix()


def _manifest(statement: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    """(name, sha256) of every file the Statement covers: its subjects."""
    entries = [(s["name"], s["digest"]["sha256"]) for s in statement["subject"]]
    if len(entries) > MAX_FILES:
        raise EvidenceError(f"{where}: names more than {MAX_FILES} files")
    names = [_safe_name(n, where) for n, _ in entries]
    if len(set(names)) != len(names):
        raise EvidenceError(f"{where}: subject: a file is named twice")
    reserved = {STATEMENT_FILE, dsse.ENVELOPE_FILE, dsse.SIGSTORE_FILE} & set(names)
    if reserved:
        raise EvidenceError(f"{where}: subject: {sorted(reserved)[0]} cannot be a subject of the Statement")
    return [(n, d) for n, (_, d) in zip(names, entries)]


def _present(root: Path) -> set[str]:
    found: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            found.add(Path(os.path.relpath(os.path.join(folder, name), root)).as_posix())
            if len(found) > MAX_FILES + 2:
                raise Mismatch(f"{root}: holds more than {MAX_FILES} files; not a bundle this nvcrectl wrote")
    return found


def check_bundle(root: Path, public_key: Any = None) -> Checked:
    """Check a bundle; the key (when given) must verify the envelope. Raises EvidenceError for
    input that cannot be read as a bundle and Mismatch for one that does not match itself."""
    root = Path(root)
    try:
        return _check(root, public_key)
    except OSError as exc:  # a name the file system refuses, a file that vanished or cannot be opened
        raise EvidenceError(f"{str(root)[:200]}: cannot read the bundle: {exc.strerror or type(exc).__name__}") from None


def _check(root: Path, public_key: Any) -> Checked:
    """The checks in the order that makes each failure the cheapest possible: a hostile bundle fails
    before the expensive steps (signature, then every file's digest)."""
    if not root.is_dir():
        raise EvidenceError(f"{root}: not a directory" if root.exists() else f"{root}: no such bundle directory")
    statement_path = root / STATEMENT_FILE
    if not statement_path.exists():
        raise EvidenceError(f"{root}: no {STATEMENT_FILE}; not an evidence bundle")
    for name in (STATEMENT_FILE, dsse.ENVELOPE_FILE, dsse.SIGSTORE_FILE):
        if (root / name).is_symlink():
            raise Mismatch(f"{name} is a symbolic link, not a file of the bundle")
    statement_bytes = read_limited(statement_path, MAX_STATEMENT_BYTES, "statement")
    envelopes = _envelopes(root, statement_bytes)
    statement = parse_statement(statement_bytes, str(statement_path))
    manifest = _manifest(statement, str(statement_path))
    key_id = _verified_key(root, envelopes, public_key) if public_key is not None else ""
    _check_files(root, manifest, {name for name, _ in manifest} | {STATEMENT_FILE} | set(envelopes))
    return Checked(statement, bool(envelopes), public_key is not None, len(manifest), key_id)


def _envelopes(root: Path, statement_bytes: bytes) -> dict[str, dsse.Envelope]:
    """The bundle's signature envelopes (both or neither), each signing exactly the Statement."""
    envelopes: dict[str, dsse.Envelope] = {}
    for name, parse in ((dsse.ENVELOPE_FILE, dsse.parse_envelope), (dsse.SIGSTORE_FILE, dsse.parse_sigstore_bundle)):
        path = root / name
        if path.exists() or path.is_symlink():
            envelopes[name] = parse(read_limited(path, 2 * MAX_STATEMENT_BYTES, "envelope"), str(path))
    if len(envelopes) == 1:
        raise Mismatch(
            f"{root}: {next(iter(envelopes))} is there without {({dsse.ENVELOPE_FILE, dsse.SIGSTORE_FILE} - set(envelopes)).pop()}"
        )
    for name, envelope in envelopes.items():
        if envelope.payload != statement_bytes:
            raise Mismatch(f"{STATEMENT_FILE} differs from the payload signed in {name}")
    return envelopes


def _verified_key(root: Path, envelopes: Mapping[str, dsse.Envelope], public_key: Any) -> str:
    """The id of ``public_key`` once it verifies every envelope; Mismatch when it does not or there is none."""
    if not envelopes:
        raise Mismatch(f"{root}: the bundle is not signed (no {dsse.ENVELOPE_FILE})")
    for name, envelope in envelopes.items():
        try:
            dsse.verify(envelope, public_key)
        except Mismatch as exc:
            raise Mismatch(f"{name}: {exc}") from None
    return dsse.key_id(public_key)


def _check_files(root: Path, manifest: list[tuple[str, str]], expected: set[str]) -> None:
    """Every file the Statement lists is there, regular and of its digest; nothing else is."""
    for name, digest in manifest:
        path = root / name
        if not path.exists() and not path.is_symlink():
            raise Mismatch(f"{name} is missing from the bundle")
        if path.is_symlink() or not path.is_file():
            raise Mismatch(f"{name} is not a regular file")
        actual = digest_limited(path, MAX_FILE_BYTES, "bundle file")
        if actual != digest:
            raise Mismatch(f"{name}: sha256 {actual[:16]}... does not match the Statement's {digest[:16]}...")
    extra = sorted(_present(root) - expected)
    if extra:
        raise Mismatch(f"{extra[0]} is in the bundle but not covered by the Statement")


@dataclass(frozen=True)
class Loaded:
    """A bundle that matches its Statement: its predicate, its cluster identity and what was checked."""

    predicate: Mapping[str, Any]
    identity: Mapping[str, Any]
    checked: Checked


def read_bundle(root: Path, public_key: Any = None) -> Loaded:
    """The predicate and the cluster identity of a bundle whose files match its Statement (and,
    with a key, whose signature the key verifies).

    Any problem, including a file that does not match, is an EvidenceError here: a bundle that
    does not match itself is unusable input for a comparison."""
    try:
        checked = check_bundle(root, public_key)
    except Mismatch as exc:
        raise EvidenceError(f"{root}: {exc}") from None
    path = Path(root) / IDENTITY_FILE
    try:
        data = read_limited(path, MAX_IDENTITY_BYTES, "identity")
    except OSError as exc:
        raise EvidenceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    identity = parse_json(data, str(path))
    if not isinstance(identity, dict) or not isinstance(identity.get("nodes"), list):
        raise EvidenceError(f"{path}: nodes: expected a list")
    return Loaded(checked.statement["predicate"], identity, checked)


def load_bundle(root: Path, public_key: Any = None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """``(predicate, identity)`` of :func:`read_bundle`."""
    loaded = read_bundle(root, public_key)
    return loaded.predicate, loaded.identity
