"""Hostile and unreadable bundles: bounded work, exit 2 for anything unreadable, and an honest word on signatures.

Each case runs ``nvcrectl evidence verify|compare`` as installed, in a subprocess, on a small
signed bundle edited the way an attacker (or a broken disk) would: thousands of signatures,
millions of JSON items, nesting deeper than the parser's stack, a subject name longer than the
file system allows, a Statement re-signed by another key.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.runtime.evidence import dsse
from tests.evidencekit import write_history

NVCRECTL = Path(sys.executable).with_name("nvcrectl")
HISTORY = {f"n{i}": [100.0] for i in range(4)}


def keypair(folder: Path, name: str) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    private, public = folder / f"{name}.key", folder / f"{name}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def nvcrectl(*args: str) -> tuple[int, str, str]:
    done = subprocess.run([str(NVCRECTL), *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A signed bundle, its private and its public key."""
    private, public = keypair(tmp_path, "ours")
    return write_history(tmp_path, "base", HISTORY, dsse.load_signer(private)), private, public


def envelopes(bundle: Path, statement: bytes, signatures: list[dict[str, str]]) -> None:
    """Write ``statement`` and both envelopes around it, with these signatures."""
    (bundle / "statement.json").write_bytes(statement)
    envelope = {"payloadType": dsse.PAYLOAD_TYPE, "payload": base64.b64encode(statement).decode(), "signatures": signatures}
    (bundle / "statement.dsse.json").write_text(json.dumps(envelope, separators=(",", ":")))
    sigstore = {"mediaType": dsse.SIGSTORE_MEDIA_TYPE, "dsseEnvelope": envelope}
    (bundle / "statement.sigstore.json").write_text(json.dumps(sigstore, separators=(",", ":")))


def resign(bundle: Path, private: Path, statement: dict[str, object]) -> None:
    data = json.dumps(statement, indent=2, sort_keys=True).encode() + b"\n"
    signed = dsse.sign(data, dsse.load_signer(private))
    envelopes(bundle, data, signed["signatures"])


def one_line(stderr: str) -> None:
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr


# ------------------------------------------------------------------ bounded work


def test_thousands_of_bogus_signatures_fail_fast_with_exit_2(signed: tuple[Path, Path, Path]) -> None:
    bundle, _, public = signed
    statement = (bundle / "statement.json").read_bytes()
    fake = base64.b64encode(b"\x30\x44\x02\x20" + b"\x01" * 32 + b"\x02\x20" + b"\x01" * 32).decode()
    envelopes(bundle, statement, [{"sig": fake}] * 20_000)
    for args in (["verify", str(bundle), "--key", str(public)], ["compare", str(bundle), str(bundle)]):
        code, stdout, stderr = nvcrectl("evidence", *args)
        assert (code, stdout) == (2, ""), stderr
        assert "signatures: 20,000 signatures; at most 8 are read" in stderr
        one_line(stderr)


def test_a_statement_of_millions_of_values_is_refused_before_it_is_built(signed: tuple[Path, Path, Path]) -> None:
    bundle, private, public = signed
    padded = (
        (bundle / "statement.json").read_bytes().replace(b'"predicate": {', b'"predicate": {"pad": [' + b"{}," * 2_500_000 + b"{}], ", 1)
    )
    envelopes(bundle, padded, dsse.sign(padded, dsse.load_signer(private))["signatures"])
    for args in (["verify", str(bundle), "--key", str(public)], ["compare", str(bundle), str(bundle)]):
        code, stdout, stderr = nvcrectl("evidence", *args)
        assert (code, stdout) == (2, ""), stderr
        assert "statement.json: holds more than 2,000,000 JSON items" in stderr
        one_line(stderr)


def test_compare_reads_one_bundle_at_a_time(tmp_path: Path) -> None:
    from nvcre.runtime.evidence import compare as comparing

    repeats = tmp_path / "repeats"
    repeats.mkdir()
    for index in range(3):
        write_history(repeats, f"r{index}", {n: [100.0 + index] for n in HISTORY})
    side = comparing.load_side(repeats)
    assert len(side.paths) == 3 and side.values[("busBandwidthGBps", "communication/nccl-loopback", ("n0",))] == (100.0, 101.0, 102.0)
    assert not hasattr(side, "predicates"), "a side keeps the numbers, not the predicates"


# ------------------------------------------------------------------ exit 2 for anything unreadable


def test_a_subject_name_too_long_for_the_file_system_is_invalid_input(signed: tuple[Path, Path, Path]) -> None:
    bundle, private, public = signed
    statement = json.loads((bundle / "statement.json").read_text())
    statement["subject"][0]["name"] = "x" * 300
    resign(bundle, private, statement)
    for args in (["verify", str(bundle), "--key", str(public)], ["compare", str(bundle), str(bundle)]):
        code, stdout, stderr = nvcrectl("evidence", *args)
        assert (code, stdout) == (2, ""), stderr
        assert "a file name longer than 255 bytes a part" in stderr and "OSError" not in stderr
        one_line(stderr)


@pytest.mark.parametrize("file", ["statement.json", "statement.dsse.json", "cluster-identity.json"])
def test_json_nested_deeper_than_the_parser_is_invalid_input(signed: tuple[Path, Path, Path], file: str) -> None:
    from nvcre.runtime.evidence.canonical import sha256_hex

    bundle, private, _ = signed
    deep = b"[" * 200_000 + b"]" * 200_000
    if file == "statement.json":
        envelopes(bundle, deep, [{"sig": base64.b64encode(b"\x01" * 64).decode()}])  # the envelopes carry the same payload
    elif file == "cluster-identity.json":  # named by the Statement with its digest: the bundle matches itself
        (bundle / file).write_bytes(deep)
        statement = json.loads((bundle / "statement.json").read_text())
        for entry in statement["subject"]:
            if entry["name"] == file:
                entry["digest"]["sha256"] = sha256_hex(deep)
        resign(bundle, private, statement)
    else:
        (bundle / file).write_bytes(deep)
    commands = [["compare", str(bundle), str(bundle)]] + ([] if file == "cluster-identity.json" else [["verify", str(bundle)]])
    for args in commands:
        code, stdout, stderr = nvcrectl("evidence", *args)
        assert (code, stdout) == (2, ""), stderr
        assert "nested too deeply to read" in stderr and "RecursionError" not in stderr
        one_line(stderr)


def test_a_side_named_beyond_the_file_system_limit_is_invalid_input(tmp_path: Path) -> None:
    code, stdout, stderr = nvcrectl("evidence", "compare", str(tmp_path / ("y" * 300)), str(tmp_path))
    assert (code, stdout) == (2, "") and "OSError" not in stderr
    one_line(stderr)


# ------------------------------------------------------------------ what was verified


def test_verify_without_a_key_never_says_verified_for_a_bundle_re_signed_by_another_key(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    bundle, _, public = signed
    other, _ = keypair(tmp_path, "theirs")
    statement = json.loads((bundle / "statement.json").read_text())
    statement["predicate"]["run"]["result"] = "PASSED (edited)"
    resign(bundle, other, statement)
    code, stdout, _ = nvcrectl("evidence", "verify", str(bundle))
    assert code == 0 and not stdout.startswith("verified")
    assert stdout.startswith(f"files match, signature NOT verified: {bundle}: ") and "nobody's signature was checked" in stdout
    code, stdout, stderr = nvcrectl("evidence", "verify", str(bundle), "--key", str(public))
    assert code == 1 and stdout == "" and "no signature in the envelope verifies" in stderr


@pytest.mark.slow
def test_compare_says_whether_signatures_were_checked_and_checks_them_with_a_key(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, _, public = signed
    code, stdout, _ = nvcrectl("evidence", "compare", str(bundle), str(bundle))
    assert code == 0 and "Signatures: NOT checked (2 of 2 bundle(s) signed)" in stdout
    code, stdout, _ = nvcrectl("evidence", "compare", str(bundle), str(bundle), "--key", str(public), "-o", "json")
    assert code == 0 and json.loads(stdout)["signatures"]["checked"] == 2
    code, stdout, _ = nvcrectl("evidence", "compare", str(bundle), str(bundle), "--key", str(public), "-o", "markdown")
    assert "Signatures: verified with key" in stdout
    forged = tmp_path / "forged"
    shutil.copytree(bundle, forged)
    other, _ = keypair(tmp_path, "theirs")
    resign(forged, other, json.loads((forged / "statement.json").read_text()))
    code, stdout, stderr = nvcrectl("evidence", "compare", str(bundle), str(forged), "--key", str(public))
    assert (code, stdout) == (2, "") and "no signature in the envelope verifies with this public key" in stderr
    unsigned = write_history(tmp_path, "unsigned", HISTORY)
    code, stdout, stderr = nvcrectl("evidence", "compare", str(bundle), str(unsigned), "--key", str(public))
    assert (code, stdout) == (2, "") and "the bundle is not signed" in stderr
    code, stdout, _ = nvcrectl("evidence", "compare", str(bundle), str(unsigned))
    assert code == 0 and "Signatures: NOT checked (1 of 2 bundle(s) signed, 1 unsigned)" in stdout
