"""Evidence bundles from real runs on the simulated GPU cluster, checked by nvcrectl and by cosign.

A passing Certification (``run --wait --evidence --sign-key``) and a failing one (``certification
evidence``) each give a bundle that ``nvcrectl evidence verify`` and ``cosign
verify-blob-attestation`` accept with the public key, offline; one changed byte makes both
refuse. Two runs of the same nodes, the second with one node's links at 70 %, make ``evidence
compare`` name that node and no other.

Setting ``NVCRE_UPDATE_EVIDENCE_FIXTURES=1`` also stores the objects of the passing and failing runs
under ``tests/fixtures/evidence/`` (the unit tests' inputs).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gotools import go_tool
from tests.integration.integration_helpers import eventually, fast_settings

pytestmark = [pytest.mark.integration, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "evidence"
PREDICATE_TYPE = "https://nvcre.dev/evidence/v1"


@pytest.fixture
def controller(simcluster, sim_namespace) -> Iterator[object]:
    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.kube.client import ApiServerClient

    kube = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    settings = fast_settings(max_sample_interval=1.0)
    config = ControllerConfig(
        namespace=sim_namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False, settings=settings
    )
    ctl = Controller(kube, config).start()
    try:
        yield ctl
    finally:
        ctl.stop()
        kube.close()


@pytest.fixture(scope="module")
def cosign(request: pytest.FixtureRequest) -> Path:
    """cosign built from its Go module by testing/gobuild/build.py."""
    return go_tool(request, "cosign")


def nvcrectl(simcluster, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def offline() -> list[str]:
    """A prefix running a command without any network, when this machine allows it."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False) if shutil.which("unshare") else None
    return ["unshare", "-n"] if probe is not None and probe.returncode == 0 else []


def cosign_verify(cosign: Path, bundle: Path, key: Path) -> list[str]:
    """cosign's own check of the bundle with the public key and no transparency log: the signature
    (as the Sigstore bundle, and as the plain DSSE envelope) and every subject's digest. Returns
    cosign's complaints, one per refused check ([] when it verified everything)."""
    statement = json.loads(base64.b64decode(json.loads((bundle / "statement.dsse.json").read_text())["payload"]))
    problems = []
    for signature in (["--bundle", str(bundle / "statement.sigstore.json")], ["--signature", str(bundle / "statement.dsse.json")]):
        for subject in statement["subject"]:
            done = subprocess.run(
                [
                    *offline(),
                    str(cosign),
                    "verify-blob-attestation",
                    "--key",
                    str(key),
                    *signature,
                    "--type",
                    PREDICATE_TYPE,
                    "--insecure-ignore-tlog",
                    str(bundle / subject["name"]),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                env={**os.environ, "HOME": str(bundle.parent)},
            )
            if done.returncode != 0 or "Verified OK" not in done.stdout + done.stderr:
                problems.append(f"{signature[0]} {subject['name']}: {done.stderr.strip().splitlines()[-1:]}")
    return problems


def keypair(directory: Path, kind: str) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    key = ec.generate_private_key(ec.SECP256R1()) if kind == "ecdsa" else ed25519.Ed25519PrivateKey.generate()
    private, public = directory / f"{kind}.key", directory / f"{kind}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def certification(namespace: str, name: str, nodes: list[str], categories: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
            "timeoutPerJob": "3m",
            "categories": categories,
        },
    }


def wait_finished(kube, name: str, namespace: str, timeout: float = 240) -> str:
    from nvcre.runtime.kube.resources import CERTIFICATIONS
    from nvcre.runtime.ops.collect import phase_of

    def done() -> str | None:
        phase = phase_of(kube.get(CERTIFICATIONS, name, namespace))
        return phase if phase in ("Succeeded", "Failed") else None

    return eventually(done, timeout=timeout, what=f"Certification {name} to finish")


def store_fixture(kube, name: str, namespace: str, case: str) -> None:
    """With NVCRE_UPDATE_EVIDENCE_FIXTURES=1: the run's objects, as the unit tests read them."""
    if os.environ.get("NVCRE_UPDATE_EVIDENCE_FIXTURES") != "1":
        return
    from nvcre.runtime.kube.resources import CONFIGMAPS
    from nvcre.runtime.ops.evidence_objects import gather

    objects, _ = gather(kube, "Certification", name, namespace)
    refs = [
        ((w.get("status") or {}).get(key) or {}).get("name") for w in objects.workflows for key in ("failedNodesRef", "succeededNodesRef")
    ]
    configmaps = [{"apiVersion": "v1", "kind": "ConfigMap", **kube.get(CONFIGMAPS, ref, namespace)} for ref in refs if ref]
    documents = [
        objects.run,
        *objects.workflows,
        *objects.jobs,
        *objects.measurements,
        *configmaps,
        *objects.nodes,
        *objects.resource_slices,
    ]
    for document in documents:
        (document.get("metadata") or {}).pop("managedFields", None)
    target = FIXTURES / case
    target.mkdir(parents=True, exist_ok=True)
    (target / "objects.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x01
    path.write_bytes(bytes(data))


def test_passing_and_failing_runs_give_bundles_both_verifiers_accept_until_a_byte_changes(
    simcluster, sim_namespace, kube, controller, cosign, tmp_path
):
    nodes = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-ev")
    ecdsa_key, ecdsa_pub = keypair(tmp_path, "ecdsa")
    ed_key, ed_pub = keypair(tmp_path, "ed25519")

    # The failing run: a bandwidth no link reaches, judged beside a loopback that passes.
    kube.create(
        certification(
            sim_namespace,
            "too-demanding",
            nodes[:2],
            [
                {
                    "domain": "communication",
                    "variant": "nccl-all-reduce",
                    "options": {"thresholds": {"busBandwidthGBps": "value >= 100000"}},
                },
                {"domain": "communication", "variant": "nccl-loopback"},
            ],
        )
    )
    # The passing run, through `certification run --wait --evidence --sign-key`.
    cert_file = tmp_path / "healthy.yaml"
    cert_file.write_text(
        yaml.safe_dump(
            certification(
                sim_namespace,
                "healthy",
                nodes,
                [
                    {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}},
                    {"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "maxSteps": 30}},
                ],
            )
        )
    )
    passed_dir = tmp_path / "passed"
    run = nvcrectl(
        simcluster,
        "certification",
        "run",
        "--cert-file",
        str(cert_file),
        "-n",
        sim_namespace,
        "--grant-run-access",
        "--wait",
        "--timeout",
        "5m",
        "--evidence",
        str(passed_dir),
        "--sign-key",
        str(ecdsa_key),
    )
    assert run.returncode == 0, run.stderr
    assert f"Evidence written to {passed_dir} (PASSED, signed" in run.stderr
    store_fixture(kube, "healthy", sim_namespace, "passed")

    assert wait_finished(kube, "too-demanding", sim_namespace) == "Failed"
    store_fixture(kube, "too-demanding", sim_namespace, "failed")
    failed_dir = tmp_path / "failed"
    written = nvcrectl(
        simcluster, "certification", "evidence", "too-demanding", "-n", sim_namespace, "--out", str(failed_dir), "--sign-key", str(ed_key)
    )
    assert written.returncode == 0, written.stderr

    for bundle, public in ((passed_dir, ecdsa_pub), (failed_dir, ed_pub)):
        ours = nvcrectl(simcluster, "evidence", "verify", str(bundle), "--key", str(public))
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.startswith(f"verified: {bundle}: ")
        assert cosign_verify(cosign, bundle, public) == []

    # What the bundles say about the runs.
    passed = json.loads((passed_dir / "statement.json").read_text())["predicate"]
    failed = json.loads((failed_dir / "statement.json").read_text())["predicate"]
    assert passed["run"]["result"] == "PASSED" and failed["run"]["result"] == "FAILED"
    assert {f["name"] for f in failed["failedNodes"]} == set(nodes[:2])
    assert all(f["reason"] == "ThresholdViolation" for f in failed["failedNodes"])
    training = next(c for c in passed["categories"] if c["domain"] == "training")
    assert all(0 < j["training"]["goodput"] <= 1 and j["training"]["stepTimeSeconds"] > 0 for j in training["jobs"])
    nccl = next(c for c in passed["categories"] if c["variant"] == "nccl-all-reduce")
    assert len(nccl["jobs"]) == 2 and all(len(j["bandwidth"]["rows"]) > 5 for j in nccl["jobs"])
    identity = json.loads((passed_dir / "cluster-identity.json").read_text())
    assert [n["name"] for n in identity["nodes"]] == sorted(nodes)
    assert all(n["gpu"]["product"] and n["gpu"]["count"] == 8 for n in identity["nodes"])

    # The Workflow subjects are the bytes `certification render` prints for the same Certification and nodes.
    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": all_nodes(kube)}))
    rendered = nvcrectl(simcluster, "certification", "render", str(cert_file), "--facts", str(facts))
    assert rendered.returncode == 0, rendered.stderr
    stored = b"---\n".join(p.read_bytes() for p in sorted((passed_dir / "workflows").iterdir(), key=lambda p: workflow_order(passed, p)))
    assert stored.decode() == rendered.stdout

    # One changed byte in any file: both verifiers refuse. cosign never reads statement.json (a
    # readable copy of the signed payload, which nvcrectl compares byte for byte).
    names = sorted(p.relative_to(passed_dir).as_posix() for p in passed_dir.rglob("*") if p.is_file())
    assert len(names) >= 10, names
    for relative in names:
        changed = tmp_path / "changed" / relative.replace("/", "_")
        shutil.copytree(passed_dir, changed)
        flip_byte(changed / relative, 200)
        ours = nvcrectl(simcluster, "evidence", "verify", str(changed), "--key", str(ecdsa_pub))
        assert ours.returncode in (1, 2), (relative, ours.stdout)
        assert "Traceback" not in ours.stderr and len(ours.stderr.strip().splitlines()) == 1, ours.stderr
        if relative != "statement.json":
            assert cosign_verify(cosign, changed, ecdsa_pub), f"cosign accepted a changed {relative}"
    # and the other key verifies nothing
    wrong = nvcrectl(simcluster, "evidence", "verify", str(passed_dir), "--key", str(ed_pub))
    assert wrong.returncode == 1 and wrong.stderr.startswith("does not match: ")
    assert len(cosign_verify(cosign, passed_dir, ed_pub)) == 2 * (len(names) - 3)


def all_nodes(kube) -> list[dict[str, Any]]:
    """Every Node, as the controller's informer saw them when it rendered."""
    from nvcre.runtime.kube.resources import NODES

    return [{"apiVersion": "v1", "kind": "Node", **node} for node in kube.list(NODES).items]


def workflow_order(predicate: dict[str, Any], path: Path) -> int:
    names = [c.get("workflow") for c in predicate["categories"]]
    return names.index(path.stem)


def test_compare_names_only_the_node_whose_links_slowed(simcluster, sim_namespace, kube, controller, tmp_path):
    nodes = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-cmp")
    loopback = [{"domain": "communication", "variant": "nccl-loopback"}]
    bundles = {}
    for run, fault in (("before", None), ("after", "slow-link:0.7")):
        if fault:
            simcluster.set_fault(nodes[2], fault)
        kube.create(certification(sim_namespace, run, nodes, loopback))
        assert wait_finished(kube, run, sim_namespace) == "Succeeded"
        bundles[run] = tmp_path / run
        written = nvcrectl(simcluster, "certification", "evidence", run, "-n", sim_namespace, "--out", str(bundles[run]))
        assert written.returncode == 0, written.stderr

    text = nvcrectl(simcluster, "evidence", "compare", str(bundles["before"]), str(bundles["after"]))
    assert text.returncode == 1, text.stdout + text.stderr
    assert f"Regressed nodes: {nodes[2]}\n" in text.stdout
    result = json.loads(nvcrectl(simcluster, "evidence", "compare", str(bundles["before"]), str(bundles["after"]), "-o", "json").stdout)
    assert result["regressedNodes"] == [nodes[2]]
    slow = next(r for r in result["nodes"] if r["subject"] == nodes[2])
    assert -0.35 < slow["change"] < -0.25, slow
    assert all(abs(r["change"]) < r["tolerance"] for r in result["nodes"] if r["subject"] != nodes[2])

    same = nvcrectl(simcluster, "evidence", "compare", str(bundles["before"]), str(bundles["before"]), "-o", "markdown")
    assert same.returncode == 0, same.stderr
    assert "- No node regressed." in same.stdout
