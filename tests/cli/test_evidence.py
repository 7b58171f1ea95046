"""``nvcrectl evidence verify|compare`` and ``certification evidence``: exit codes 0/1/2, one clear line, no traceback.

The cluster is a read-only stand-in serving the recorded objects of tests/fixtures/evidence/, so
the commands run in-process as a user would run them, without a cluster.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.resources import Resource
from tests.evidencekit import cases

REPO = Path(__file__).resolve().parents[2]


class Listed:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items


class RecordedCluster:
    """Serves ``get`` and ``list`` from a list of objects (by kind, namespace and name)."""

    def __init__(self, documents: list[dict[str, Any]]) -> None:
        self.documents = copy.deepcopy(documents)

    def _matching(self, resource: Resource, namespace: str | None) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(d)
            for d in self.documents
            if d.get("kind") == resource.kind and (namespace is None or (d.get("metadata") or {}).get("namespace") in (namespace, None))
        ]

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        for doc in self._matching(resource, namespace):
            if doc["metadata"]["name"] == name:
                return doc
        raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')

    def list(self, resource: Resource, namespace: str | None = None, **_: Any) -> Listed:
        return Listed(self._matching(resource, namespace))


def invoke(monkeypatch: pytest.MonkeyPatch, args: list[str], cluster: RecordedCluster | None = None) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from nvcre.cli import common, main

    if cluster is not None:
        monkeypatch.setattr(common, "kube_client", lambda kubeconfig, context: cluster)
    main.mount_commands()
    result = CliRunner().invoke(main.app, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def keypair(tmp_path: Path, kind: str = "ecdsa") -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    key = ec.generate_private_key(ec.SECP256R1()) if kind == "ecdsa" else ed25519.Ed25519PrivateKey.generate()
    private, public = tmp_path / f"{kind}.key", tmp_path / f"{kind}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def run_of(case: str) -> tuple[str, str]:
    run = next(d for d in cases.documents(case) if d["kind"] == "Certification")
    return run["metadata"]["name"], run["metadata"]["namespace"]


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A bundle of the failed run written by ``certification evidence --sign-key``, and its keys."""
    private, public = keypair(tmp_path)
    name, namespace = run_of("failed")
    out = tmp_path / "bundle"
    code, stdout, stderr = invoke(
        monkeypatch,
        ["certification", "evidence", name, "-n", namespace, "--out", str(out), "--sign-key", str(private)],
        RecordedCluster(cases.documents("failed")),
    )
    assert code == 0, stderr
    assert stdout == ""
    assert stderr.startswith(f"Evidence written to {out} (FAILED, signed (key id ")
    return out, private, public


def test_certification_evidence_writes_what_verify_accepts(signed: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    out, _, public = signed
    name, namespace = run_of("failed")
    code, stdout, stderr = invoke(monkeypatch, ["evidence", "verify", str(out), "--key", str(public)])
    assert (code, stderr) == (0, "")
    assert stdout.startswith(f"verified: {out}: ") and f"Certification {namespace}/{name} FAILED" in stdout
    assert "signature verified with key" in stdout
    code, stdout, _ = invoke(monkeypatch, ["evidence", "verify", str(out)])
    assert code == 0 and stdout.startswith(f"files match, signature NOT verified: {out}: ") and "without --key" in stdout


def test_the_bundle_of_the_cli_is_the_bundle_of_the_library(signed: tuple[Path, Path, Path]) -> None:
    from nvcre.runtime.evidence import dsse
    from nvcre.runtime.evidence.assemble import assemble

    out, private, _ = signed
    objects, verdict = cases.case("failed")
    expected = assemble(objects, verdict, signer=dsse.load_signer(private)).files
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written == dict(expected)


@pytest.mark.parametrize(
    ("damage", "code", "message"),
    [
        (lambda b: (b / "report.txt").write_text("edited\n"), 1, "does not match: report.txt: sha256 "),
        (lambda b: (b / "junit.xml").unlink(), 1, "does not match: junit.xml is missing from the bundle"),
        (
            lambda b: (b / "statement.dsse.json").write_bytes((b / "statement.dsse.json").read_bytes()[:100]),
            2,
            "statement.dsse.json: not a JSON document, truncated or damaged",
        ),
        (lambda b: (b / "statement.json").unlink(), 2, "no statement.json; not an evidence bundle"),
    ],
)
def test_verify_failures_are_one_line_with_the_right_exit_code(
    signed: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, damage: Any, code: int, message: str
) -> None:
    out, _, public = signed
    damage(out)
    got, stdout, stderr = invoke(monkeypatch, ["evidence", "verify", str(out), "--key", str(public)])
    assert got == code and stdout == ""
    assert len(stderr.splitlines()) == 1 and message in stderr and "Traceback" not in stderr


def test_verify_with_another_key_or_a_private_key(signed: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, private, _ = signed
    _, other = keypair(tmp_path / "..", "ed25519")
    code, _, stderr = invoke(monkeypatch, ["evidence", "verify", str(out), "--key", str(other)])
    assert code == 1 and stderr.startswith("does not match: ") and "no signature in the envelope verifies" in stderr
    code, _, stderr = invoke(monkeypatch, ["evidence", "verify", str(out), "--key", str(private)])
    assert code == 2 and "this is a private key; verify with the public key" in stderr
    assert "BEGIN" not in stderr and private.read_text().splitlines()[1] not in stderr


def test_a_bad_sign_key_stops_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "broken.key"
    key.write_text("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
    name, namespace = run_of("passed")
    out = tmp_path / "out"
    code, _, stderr = invoke(
        monkeypatch,
        ["certification", "evidence", name, "-n", namespace, "--out", str(out), "--sign-key", str(key)],
        RecordedCluster(cases.documents("passed")),
    )
    assert code == 2 and stderr.startswith("error: --sign-key: ") and "bm90IGEga2V5" not in stderr
    assert not out.exists()


def test_a_run_that_is_not_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, stderr = invoke(
        monkeypatch,
        ["certification", "evidence", "nope", "-n", "nowhere", "--out", str(tmp_path / "out")],
        RecordedCluster(cases.documents("passed")),
    )
    assert code == 1 and stderr == 'error: certification "nope" not found in namespace "nowhere"\n'
    assert not (tmp_path / "out").exists()


def test_compare_exit_codes_and_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, namespace = run_of("passed")
    docs = cases.documents("passed")
    slow = copy.deepcopy(docs)
    measurement = sorted((d for d in slow if d["kind"] == "BandwidthMeasurement"), key=lambda d: d["metadata"]["name"])[0]
    for row in measurement["status"]["results"]:
        row["busBW"] = f"{float(row['busBW']) * 0.5:.2f}"
    for label, documents in (("old", docs), ("new", slow)):
        code, _, stderr = invoke(
            monkeypatch, ["certification", "evidence", name, "-n", namespace, "--out", str(tmp_path / label)], RecordedCluster(documents)
        )
        assert code == 0, stderr
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    code, stdout, stderr = invoke(monkeypatch, ["evidence", "compare", old, old])
    assert (code, stderr) == (0, "") and "No node regressed." in stdout
    code, stdout, stderr = invoke(monkeypatch, ["evidence", "compare", old, new, "-o", "json"])
    assert code == 1 and stderr.startswith("error: 2 node(s) regressed: ")
    assert len(json.loads(stdout)["regressedNodes"]) == 2
    code, stdout, _ = invoke(monkeypatch, ["evidence", "compare", old, new, "-o", "markdown", "--tolerance", "60"])
    assert code == 0 and stdout.startswith("## Evidence comparison") and "Tolerance: 60% + 2 x the OLD side's own noise" in stdout
    code, stdout, stderr = invoke(monkeypatch, ["evidence", "compare", old, str(tmp_path / "absent")])
    assert code == 2 and stdout == "" and stderr.endswith("no such bundle or directory\n")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sign-key", "k.pem"], "--sign-key requires --evidence"),
        (["--evidence", "out"], "--evidence requires --wait"),
    ],
)
def test_run_evidence_flags_are_checked_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], message: str
) -> None:
    cluster = RecordedCluster([])
    code, _, stderr = invoke(monkeypatch, ["certification", "run", "--category", "communication/nccl-all-reduce", *extra], cluster)
    assert code == 2 and message in stderr


def test_run_evidence_into_a_used_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("x")
    code, _, stderr = invoke(
        monkeypatch,
        ["workloadrun", "run", str(REPO / "examples" / "workloadrun-nccl-all-reduce.yaml"), "--wait", "--evidence", str(used)],
        RecordedCluster([]),
    )
    assert code == 2 and "--evidence: " in stderr and "exists and is not an empty directory" in stderr
