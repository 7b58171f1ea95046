"""Evidence bundles: what they hold, that they are reproducible, and that checking them catches every change.

Inputs are runs recorded on the simulated cluster (tests/fixtures/evidence/). Signing keys are made
per test; the checks use the ``cryptography`` package directly where the code under test would be
circular to trust.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nvcre.runtime.evidence import EvidenceError, Mismatch, dsse
from nvcre.runtime.evidence.assemble import assemble
from nvcre.runtime.evidence.bundle import check_bundle, load_bundle, write_bundle
from nvcre.runtime.evidence.canonical import sha256_hex
from nvcre.runtime.evidence.statement import STATEMENT_TYPE
from tests.evidencekit import cases

REPO = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((REPO / "docs" / "evidence.schema.json").read_text(encoding="utf-8"))


def keypair(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    key = ec.generate_private_key(ec.SECP256R1()) if kind == "ecdsa" else ed25519.Ed25519PrivateKey.generate()
    private, public = tmp_path / f"{kind}.key", tmp_path / f"{kind}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.fixture(scope="module")
def passed() -> tuple[Any, Any]:
    return cases.case("passed")


@pytest.fixture(scope="module")
def failed() -> tuple[Any, Any]:
    return cases.case("failed")


def signed_bundle(tmp_path: Path, run: tuple[Any, Any], kind: str = "ecdsa") -> tuple[Path, Path]:
    private, public = keypair(tmp_path, kind)
    target = tmp_path / f"bundle-{kind}"
    write_bundle(assemble(*run, signer=dsse.load_signer(private)), target)
    return target, public


# ------------------------------------------------------------------ contents


@pytest.mark.parametrize("name", cases.CASES)
def test_the_statement_names_every_file_by_digest_and_carries_the_verdict(name: str) -> None:
    objects, verdict = cases.case(name)
    contents = assemble(objects, verdict)
    statement = json.loads(contents.files["statement.json"])
    assert statement["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://nvcre.dev/evidence/v1"
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    others = set(contents.files) - {"statement.json"}
    assert set(subjects) == others
    assert {"report.json", "report.txt", "junit.xml", "report.html", "cluster-identity.json"} <= others
    assert sum(1 for n in subjects if n.startswith("workflows/")) == len(objects.workflows) > 0
    for file, digest in subjects.items():
        assert digest == sha256_hex(contents.files[file])
    predicate = statement["predicate"]
    assert predicate["run"]["result"] == verdict.result == name.upper()
    assert [c["status"] for c in predicate["categories"]] == [c.status for c in verdict.categories]
    assert {(n["name"], n["reason"]) for n in predicate["failedNodes"]} == {(n.name, n.reason) for n in verdict.failed_nodes}
    # the JSON report is the project's own
    assert json.loads(contents.files["report.json"])["result"] == verdict.result


def test_measurements_keep_every_row_and_training_numbers(passed: tuple[Any, Any]) -> None:
    predicate = json.loads(assemble(*passed).files["statement.json"])["predicate"]
    bandwidth_jobs = [j for c in predicate["categories"] for j in c.get("jobs", []) if "bandwidth" in j]
    assert bandwidth_jobs, "the passing run measured bandwidth"
    for job in bandwidth_jobs:
        rows = job["bandwidth"]["rows"]
        assert [r["sizeBytes"] for r in rows] == sorted(r["sizeBytes"] for r in rows) and len(rows) > 5
        assert job["bandwidth"]["peakBusBandwidthGBps"] == rows[-1]["busBandwidthGBps"] > 0
        assert job["nodes"] and job["times"]
    training = [j["training"] for c in predicate["categories"] for j in c.get("jobs", []) if "training" in j]
    assert training and all(0 < t["goodput"] <= 1 and t["stepTimeSeconds"] > 0 for t in training)
    assert all(c["images"] for c in predicate["categories"])
    assert predicate["timings"]["created"] and predicate["timings"]["finished"]


def test_the_cluster_identity_reads_the_node_labels(passed: tuple[Any, Any]) -> None:
    objects, verdict = passed
    identity = json.loads(assemble(objects, verdict).files["cluster-identity.json"])
    names = sorted({n for c in verdict.categories for g in c.groups for n in g.nodes})
    assert [n["name"] for n in identity["nodes"]] == names
    by_name = {n["metadata"]["name"]: n for n in objects.nodes}
    for entry in identity["nodes"]:
        labels = by_name[entry["name"]]["metadata"]["labels"]
        assert entry["found"] is True
        assert entry["gpu"] == {"product": labels["nvidia.com/gpu.product"], "count": int(labels["nvidia.com/gpu.count"])}
        assert entry["driverVersion"] == labels["nvidia.com/cuda.driver-version.major"]


def test_identity_versions_from_either_label_spelling() -> None:
    from nvcre.runtime.evidence.identity import cluster_identity

    nodes = [
        {
            "metadata": {
                "name": "new",
                "labels": {"nvidia.com/cuda.driver-version.full": "580.65.06", "nvidia.com/cuda.runtime-version.full": "13.0"},
            },
            "spec": {"providerID": "aws:///x/i-1"},
            "status": {"nodeInfo": {"systemUUID": "ec2-uuid"}},
        },
        {
            "metadata": {
                "name": "old",
                "labels": {
                    "nvidia.com/cuda.driver.major": "550",
                    "nvidia.com/cuda.driver.minor": "54",
                    "nvidia.com/cuda.driver.rev": "15",
                    "nvidia.com/cuda.runtime.major": "12",
                    "nvidia.com/cuda.runtime.minor": "4",
                    "nvidia.com/gpu.count": "eight",
                },
            }
        },
    ]
    got = {n["name"]: n for n in cluster_identity(["new", "old", "gone"], nodes, "")["nodes"]}
    assert (got["new"]["driverVersion"], got["new"]["cudaVersion"], got["new"]["systemUUID"]) == ("580.65.06", "13.0", "ec2-uuid")
    assert (got["old"]["driverVersion"], got["old"]["cudaVersion"], got["old"]["gpu"]["count"]) == ("550.54.15", "12.4", None)
    assert got["gone"]["found"] is False and got["gone"]["providerID"] == ""


@pytest.mark.parametrize("name", cases.CASES)
def test_predicates_validate_against_the_published_schema(name: str) -> None:
    predicate = json.loads(assemble(*cases.case(name)).files["statement.json"])["predicate"]
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(predicate)
    broken = copy.deepcopy(predicate)
    broken["categories"][0]["groups"][0]["failed"] = "no"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(broken)


def test_a_workloadrun_gives_a_bundle_too() -> None:
    """The project's recorded WorkloadRun report case, judged as ``workloadrun report`` judges it."""
    import yaml

    from nvcre.runtime.evidence.assemble import Objects
    from nvcre.runtime.judge.verdict import workloadrun_verdict

    docs = list(yaml.safe_load_all((REPO / "golden" / "report" / "workloadrun-unpinned" / "objects.yaml").read_text(encoding="utf-8")))
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        kinds.setdefault(doc["kind"], []).append(doc)
    measurements = kinds.get("BandwidthMeasurement", []) + kinds.get("GoodputMeasurement", [])
    run, workflows, jobs = kinds["WorkloadRun"][0], kinds.get("Workflow", []), kinds.get("Job", [])
    verdict = workloadrun_verdict(run, workflows[0] if workflows else None, jobs, measurements, kinds.get("ConfigMap"))
    contents = assemble(Objects(run=run, workflows=workflows, jobs=jobs, measurements=measurements), verdict)
    statement = json.loads(contents.files["statement.json"])
    assert statement["predicate"]["run"]["kind"] == "WorkloadRun"
    assert json.loads(contents.files["report.json"])["title"] == "WorkloadRun Report"
    jsonschema.Draft202012Validator(SCHEMA).validate(statement["predicate"])
    assert contents.files == assemble(Objects(run=run, workflows=workflows, jobs=jobs, measurements=measurements), verdict).files


# ------------------------------------------------------------------ reproducible


@pytest.mark.parametrize("kind", ["unsigned", "ecdsa", "ed25519"])
def test_the_same_objects_give_the_same_bytes(tmp_path: Path, passed: tuple[Any, Any], kind: str) -> None:
    signer = None if kind == "unsigned" else dsse.load_signer(keypair(tmp_path, kind)[0])
    first = assemble(*cases.case("passed"), signer=signer).files
    second = assemble(*cases.build(list(reversed(cases.documents("passed")))), signer=signer).files
    assert first == second


def test_workflow_subjects_are_the_bytes_certification_render_prints() -> None:
    """The run rendered again on the recorded facts gives the render command's bytes, and is
    checked against the live Workflows (which hold server defaults besides)."""
    import yaml

    from nvcre.compiler.emit import dump_yaml_stream
    from nvcre.compiler.facts import load_facts
    from nvcre.compiler.render import render_certification
    from nvcre.compiler.yamlio import load_file
    from nvcre.runtime import compile as runtime_compile
    from nvcre.runtime.evidence.workflows import render_run

    facts_file = REPO / "tests" / "fixtures" / "facts" / "aws-h100-2nodes.yaml"
    nodes = yaml.safe_load(facts_file.read_text(encoding="utf-8"))["items"]
    document = load_file(REPO / "examples" / "certification.yaml")[0]
    printed = dump_yaml_stream(render_certification(document, facts=load_facts(facts_file)).workflows)
    run = copy.deepcopy(document)
    run["metadata"].update(namespace="team-a", uid="0e0e0e0e-1111-4222-8333-444444444444", resourceVersion="7")
    run["status"] = {"phase": "Succeeded"}
    live = runtime_compile.expand_certification(run, load_facts(facts_file))
    for index, workflow in enumerate(live):
        workflow["metadata"].update(uid=f"uid-{index}", resourceVersion="42", creationTimestamp="2026-03-01T10:00:00Z", generation=1)
        workflow["spec"]["orchestration"].setdefault("execution", {})["retryFailedGroups"] = 0  # a schema default
        workflow["status"] = {"phase": "Succeeded"}

    got = render_run(run, live, nodes)
    assert got.source == "render" and got.problem == ""
    assert b"---\n".join(data for _, data in got.files).decode() == printed
    assert [name for name, _ in got.files] == [f"workflows/{w['metadata']['name']}.yaml" for w in live]
    assert got.agrees == {w["metadata"]["name"]: True for w in live}

    live[1]["spec"]["orchestration"]["execution"]["timeoutPerJob"] = "9h"
    assert render_run(run, live, nodes).agrees[live[1]["metadata"]["name"]] is False

    # no facts to render on: the live objects stand in, reduced to what a render writes
    fallback = render_run(run, live[:1], [])
    assert fallback.source == "cluster" and "no GPU nodes match the target" in fallback.problem
    (only,) = fallback.files
    assert b"ownerReferences" not in only[1] and b"uid-0" not in only[1] and b"requested-test-scale" not in only[1]


# ------------------------------------------------------------------ signing


def test_pae_is_the_dsse_encoding() -> None:
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert dsse.pae("t", b"") == b"DSSEv1 1 t 0 "


@pytest.mark.parametrize("kind", ["ecdsa", "ed25519"])
def test_the_envelope_signs_the_pae_of_the_statement(tmp_path: Path, passed: tuple[Any, Any], kind: str) -> None:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    bundle, public = signed_bundle(tmp_path, passed, kind)
    envelope = json.loads((bundle / "statement.dsse.json").read_text())
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    payload = base64.b64decode(envelope["payload"])
    assert payload == (bundle / "statement.json").read_bytes()
    key = serialization.load_pem_public_key(public.read_bytes())
    message = b"DSSEv1 28 application/vnd.in-toto+json %d %s" % (len(payload), payload)
    signature = base64.b64decode(envelope["signatures"][0]["sig"])
    if kind == "ecdsa":
        key.verify(signature, message, ec.ECDSA(hashes.SHA256()))  # type: ignore[call-arg,union-attr]
    else:
        key.verify(signature, message)  # type: ignore[call-arg,union-attr]
    sigstore = json.loads((bundle / "statement.sigstore.json").read_text())
    assert sigstore["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert sigstore["dsseEnvelope"]["payload"] == envelope["payload"]
    assert sigstore["dsseEnvelope"]["signatures"] == [{"sig": envelope["signatures"][0]["sig"]}]
    checked = check_bundle(bundle, dsse.load_public_key(public))
    assert checked.signed and checked.signature_checked and checked.files == len(json.loads(payload)["subject"])


# ------------------------------------------------------------------ checking


def test_any_changed_byte_in_any_file_is_caught(tmp_path: Path, passed: tuple[Any, Any]) -> None:
    bundle, public = signed_bundle(tmp_path, passed)
    key = dsse.load_public_key(public)
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    assert len(files) >= 10
    for path in files:
        original = path.read_bytes()
        for offset in (0, len(original) // 2, len(original) - 2):
            changed = bytearray(original)
            changed[offset] ^= 0x20
            path.write_bytes(bytes(changed))
            with pytest.raises((Mismatch, EvidenceError)):
                check_bundle(bundle, key)
        path.write_bytes(original)
    check_bundle(bundle, key)


def test_missing_extra_and_unsigned_files_do_not_match(tmp_path: Path, passed: tuple[Any, Any]) -> None:
    bundle, public = signed_bundle(tmp_path, passed)
    key = dsse.load_public_key(public)
    html = (bundle / "report.html").read_bytes()
    (bundle / "report.html").unlink()
    with pytest.raises(Mismatch, match=r"^report.html is missing from the bundle$"):
        check_bundle(bundle, key)
    (bundle / "report.html").write_bytes(html)
    (bundle / "notes.txt").write_text("added later")
    with pytest.raises(Mismatch, match="notes.txt is in the bundle but not covered"):
        check_bundle(bundle, key)
    (bundle / "notes.txt").unlink()
    outside = bundle.parent / "report-elsewhere.txt"
    outside.write_bytes((bundle / "report.txt").read_bytes())
    (bundle / "report.txt").unlink()
    (bundle / "report.txt").symlink_to(outside)
    with pytest.raises(Mismatch, match="report.txt is not a regular file"):
        check_bundle(bundle, key)
    (bundle / "report.txt").unlink()
    (bundle / "report.txt").write_bytes(outside.read_bytes())
    (bundle / "statement.sigstore.json").unlink()
    with pytest.raises(Mismatch, match="statement.dsse.json is there without statement.sigstore.json"):
        check_bundle(bundle)
    (bundle / "statement.dsse.json").unlink()
    assert check_bundle(bundle).signed is False
    with pytest.raises(Mismatch, match="not signed"):
        check_bundle(bundle, key)


def test_another_key_does_not_match(tmp_path: Path, passed: tuple[Any, Any]) -> None:
    bundle, _ = signed_bundle(tmp_path, passed, "ecdsa")
    _, other = keypair(tmp_path / ".." / tmp_path.name, "ed25519")
    with pytest.raises(Mismatch, match="no signature in the envelope verifies with this public key"):
        check_bundle(bundle, dsse.load_public_key(other))


def _resign(bundle: Path, private: Path, statement: dict[str, Any]) -> None:
    """A bundle whose Statement was replaced and signed again by the same key."""
    from nvcre.runtime.evidence.canonical import json_bytes

    data = json_bytes(statement)
    envelope = dsse.sign(data, dsse.load_signer(private))
    (bundle / "statement.json").write_bytes(data)
    (bundle / "statement.dsse.json").write_bytes(json_bytes(envelope))
    (bundle / "statement.sigstore.json").write_bytes(json_bytes(dsse.sigstore_bundle(envelope)))


@pytest.mark.parametrize(
    ("predicate_type", "message"),
    [
        ("https://nvcre.dev/evidence/v2", r"predicateType: https://nvcre.dev/evidence/v2 was written by a newer nvcre"),
        (
            "https://slsa.dev/provenance/v1",
            r"predicateType: expected 'https://nvcre.dev/evidence/v1', got 'https://slsa.dev/provenance/v1'",
        ),
    ],
)
def test_a_statement_of_another_type_or_a_newer_version_is_refused(
    tmp_path: Path, passed: tuple[Any, Any], predicate_type: str, message: str
) -> None:
    private, public = keypair(tmp_path, "ecdsa")
    bundle = tmp_path / "b"
    write_bundle(assemble(*passed, signer=dsse.load_signer(private)), bundle)
    statement = json.loads((bundle / "statement.json").read_text())
    statement["predicateType"] = predicate_type
    _resign(bundle, private, statement)
    with pytest.raises(EvidenceError, match=message):
        check_bundle(bundle, dsse.load_public_key(public))


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.99])
def test_a_truncated_envelope_is_invalid_input(tmp_path: Path, passed: tuple[Any, Any], cut: float) -> None:
    bundle, public = signed_bundle(tmp_path, passed)
    data = (bundle / "statement.dsse.json").read_bytes()
    (bundle / "statement.dsse.json").write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(EvidenceError, match=r"statement.dsse.json: not a JSON document, truncated or damaged"):
        check_bundle(bundle, dsse.load_public_key(public))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("_type"), r"_type: expected 'https://in-toto.io/Statement/v1', got None"),
        (lambda s: s.update(subject=[]), r"subject: expected a non-empty list"),
        (lambda s: s["subject"][0]["digest"].update(sha256="ABC"), r"subject\[0\].digest.sha256: expected 64 lowercase"),
        (lambda s: s["subject"][0].update(name="../outside"), r"'../outside' is not a plain relative file name"),
        (lambda s: s["subject"][0].update(name="/etc/passwd"), r"'/etc/passwd' is not a plain relative file name"),
        (lambda s: s.update(predicate=[]), r"predicate: expected an object"),
    ],
)
def test_malformed_statements_name_the_field(tmp_path: Path, passed: tuple[Any, Any], mutate: Any, message: str) -> None:
    private, public = keypair(tmp_path, "ed25519")
    bundle = tmp_path / "b"
    write_bundle(assemble(*passed, signer=dsse.load_signer(private)), bundle)
    statement = json.loads((bundle / "statement.json").read_text())
    mutate(statement)
    _resign(bundle, private, statement)
    with pytest.raises(EvidenceError, match=message):
        check_bundle(bundle, dsse.load_public_key(public))


def test_oversized_files_are_not_read(tmp_path: Path, passed: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.runtime.evidence import bundle as bundle_module

    target, _ = signed_bundle(tmp_path, passed)
    monkeypatch.setattr(bundle_module, "MAX_FILE_BYTES", 1000)
    with pytest.raises(EvidenceError, match="larger than the 1,000-byte limit"):
        check_bundle(target)


def test_keys_that_cannot_be_used_are_refused_without_showing_them(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "rsa.key"
    pem = rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.write_bytes(pem)
    with pytest.raises(EvidenceError, match="unsupported private key type") as info:
        dsse.load_signer(path)
    assert "BEGIN" not in str(info.value)
    p384 = tmp_path / "p384.key"
    p384.write_bytes(
        ec.generate_private_key(ec.SECP384R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    with pytest.raises(EvidenceError, match="ECDSA P-256 or Ed25519"):
        dsse.load_signer(p384)
    garbage = tmp_path / "garbage.key"
    garbage.write_bytes(b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n")
    with pytest.raises(EvidenceError) as info:
        dsse.load_signer(garbage)
    assert "c2VjcmV0" not in str(info.value)
    with pytest.raises(EvidenceError, match="this is a private key; verify with the public key"):
        dsse.load_public_key(path)
    signer = dsse.load_signer(keypair(tmp_path, "ed25519")[0])
    assert "PRIVATE" not in repr(signer) and signer.key_id in repr(signer)


def test_an_encrypted_key_reads_its_password_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    path = tmp_path / "enc.key"
    path.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"s3cret")
        )
    )
    monkeypatch.delenv(dsse.PASSWORD_VARIABLE, raising=False)
    with pytest.raises(EvidenceError, match="the key is encrypted; put its password in NVCRE_SIGN_KEY_PASSWORD"):
        dsse.load_signer(path)
    monkeypatch.setenv(dsse.PASSWORD_VARIABLE, "wrong")
    with pytest.raises(EvidenceError, match="wrong password"):
        dsse.load_signer(path)
    monkeypatch.setenv(dsse.PASSWORD_VARIABLE, "s3cret")
    assert dsse.load_signer(path).key_id


def test_writing_refuses_a_used_directory_and_leaves_nothing_behind(tmp_path: Path, passed: tuple[Any, Any]) -> None:
    contents = assemble(*passed)
    used = tmp_path / "used"
    used.mkdir()
    (used / "keep.txt").write_text("mine")
    with pytest.raises(EvidenceError, match="exists and is not an empty directory"):
        write_bundle(contents, used)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["used"]
    empty = tmp_path / "empty"
    empty.mkdir()
    write_bundle(contents, empty)
    assert check_bundle(empty).files == len(contents.statement["subject"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "used"]


def test_load_bundle_turns_a_mismatch_into_invalid_input(tmp_path: Path, passed: tuple[Any, Any]) -> None:
    target = tmp_path / "b"
    write_bundle(assemble(*passed), target)
    predicate, identity = load_bundle(target)
    assert predicate["run"]["result"] == "PASSED" and identity["nodes"]
    (target / "report.txt").write_text("edited")
    with pytest.raises(EvidenceError, match="report.txt: sha256 .* does not match"):
        load_bundle(target)
