"""NVCRE's flags of ``workloadrun run``, ``workflow render --nodes-file`` and ``certification render -n``.

Through the installed ``nvcrectl`` where no cluster is needed (a submitted WorkloadRun's shape is
checked on the simulated cluster, tests/integration/test_cli_run_flags_sim.py); the cluster half
of ``--topology-domain`` (the key from the detected platform, the node count) against facts.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = REPO / ".venv" / "bin" / "nvcrectl"
WORKFLOW = REPO / "golden" / "expand" / "workloadrun-overrides-applied" / "workflow.yaml"
WORKLOADRUN = REPO / "examples" / "workloadrun-nccl-all-reduce.yaml"
CERTIFICATION = REPO / "examples" / "certification.yaml"


def nvcrectl(*args: str, kubeconfig: str = "/nonexistent/kubeconfig") -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(NVCRECTL), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "KUBECONFIG": kubeconfig},
    )


def _mock_nodes(platform: str, arch: str, count: int) -> list[dict[str, Any]]:
    from nvcre.compiler.mocknodes import mock_nodes

    return mock_nodes(platform, arch, count)


# ------------------------------------------------------------------ workloadrun run


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        (["--test-scale", "rack"], "--test-scale", "'rack' is not one of intra-node, intra-rack, full-scale"),
        (["--topology-key", "example.com/rack"], "--topology-key", "give --topology-domain too"),
        (["--node-list", "gpu-0,,gpu-1"], "--node-list", "empty node name"),
        (["--node-list", "gpu-0,gpu-0"], "--node-list", "node named more than once: gpu-0"),
        (["--test-scale", "intra-rack"], "spec.orchestration", "placement Unpinned cannot be combined with testScale"),
    ],
)
def test_workloadrun_run_refuses_bad_target_flags_before_any_cluster(args: list[str], path: str, message: str) -> None:
    result = nvcrectl("workloadrun", "run", str(WORKLOADRUN), *args)
    assert result.returncode == 2, result.stderr
    assert path in result.stderr and message in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert "cannot load cluster credentials" not in result.stderr  # refused before any cluster is sought


def test_the_target_flags_are_in_the_help_of_workloadrun_run_only() -> None:
    workloadrun = nvcrectl("workloadrun", "run", "--help")
    certification = nvcrectl("certification", "run", "--help")
    assert workloadrun.returncode == 0 and certification.returncode == 0
    for flag in ("--node-list", "--topology-domain", "--topology-key", "--test-scale"):
        assert flag in workloadrun.stdout and flag not in certification.stdout


def test_both_run_commands_come_from_one_factory_with_the_shared_flags() -> None:
    import typer.main

    from nvcre.cli import main

    main.mount_commands()
    group = typer.main.get_command(main.app)
    commands = {}
    for kind in ("certification", "workloadrun"):
        sub: Any = group.commands[kind]  # type: ignore[attr-defined]
        commands[kind] = {opt for p in sub.commands["run"].params for opt in p.opts}
    shared = {
        "--wait", "--timeout", "--results-file", "--junit", "--evidence", "--sign-key", "--workload-registry",
        "--workload-registry-username", "--workload-registry-password", "--grant-run-access", "--setup", "--image",
        "--controller-pull-secret", "--cleanup", "--kubeconfig", "--context", "--name", "--namespace", "-n",
        "--nvcre-streams",
    }  # fmt: skip
    assert shared <= commands["certification"] and shared <= commands["workloadrun"]
    assert commands["workloadrun"] - shared == {"file", "--node-list", "--topology-domain", "--topology-key", "--test-scale"}


def test_offline_flags_shape_the_document() -> None:
    from nvcre.runtime.ops.run_target import TargetFlags, apply_offline

    document = yaml.safe_load(WORKLOADRUN.read_text())
    document["spec"]["target"] = {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
    apply_offline(
        document, TargetFlags(node_list="a, b", topology_domain="rack-1", topology_key="example.com/rack", test_scale="full-scale")
    )
    assert document["spec"]["numNodes"] == 2  # four asked, two named: lowered to fit
    assert document["spec"]["target"] == {
        "nodeSelector": {"nvidia.com/gpu.present": "true"},
        "nodeNames": ["a", "b"],
        "matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": ["rack-1"]}],
    }
    assert document["spec"]["orchestration"] == {"placement": "Unpinned", "testScale": "full-scale"}


def _facts_kube(monkeypatch: pytest.MonkeyPatch, nodes: list[dict[str, Any]]) -> None:
    from nvcre.compiler.facts import facts_from_documents
    from nvcre.runtime.ops import facts

    monkeypatch.setattr(facts, "live_facts", lambda kube: facts_from_documents(nodes, source="cluster"))


def test_a_topology_domain_without_a_key_takes_the_platforms_and_counts_its_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.compiler.detect.topology import platform_topology_key
    from nvcre.runtime.ops.run_target import TargetFlags, apply_offline, resolve_on_cluster

    key = platform_topology_key("aws")
    assert key
    nodes = _mock_nodes("aws", "h100", 3)
    for node, domain in zip(nodes, ("blk-1", "blk-1", "blk-2")):
        node["metadata"]["labels"][key] = domain
    _facts_kube(monkeypatch, nodes)
    document = yaml.safe_load(WORKLOADRUN.read_text())
    flags = TargetFlags(topology_domain="blk-1")
    apply_offline(document, flags)
    said: list[str] = []
    resolve_on_cluster(object(), document, flags, said.append)  # type: ignore[arg-type]
    assert document["spec"]["target"]["matchExpressions"] == [{"key": key, "operator": "In", "values": ["blk-1"]}]
    assert document["spec"]["numNodes"] == 2  # every node of the domain
    assert len(said) == 1 and said[0].startswith("Discovered 2 GPU nodes with product: ")


def test_a_topology_domain_that_selects_nothing_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.runtime.ops.run_target import TargetFlags, apply_offline, resolve_on_cluster

    _facts_kube(monkeypatch, _mock_nodes("aws", "h100", 2))
    document = yaml.safe_load(WORKLOADRUN.read_text())
    flags = TargetFlags(topology_domain="nowhere", topology_key="example.com/rack")
    apply_offline(document, flags)
    with pytest.raises(CompileError) as caught:
        resolve_on_cluster(object(), document, flags, lambda line: None)  # type: ignore[arg-type]
    assert [d.path for d in caught.value.diagnostics] == ["--topology-domain"]


# ------------------------------------------------------------------ workflow render --nodes-file


def _nvcre_nodes_file(path: Path, nodes: list[dict[str, Any]]) -> Path:
    """NVCRE's format: one YAML sequence of Node objects, without kind or apiVersion."""
    bare = [{k: v for k, v in n.items() if k not in ("kind", "apiVersion")} for n in nodes]
    path.write_text(yaml.safe_dump(bare), encoding="utf-8")
    return path


def test_workflow_render_plans_over_the_nodes_of_a_nodes_file(tmp_path: Path) -> None:
    nodes_file = _nvcre_nodes_file(tmp_path / "nodes.yaml", _mock_nodes("aws", "h100", 3))
    from_file = nvcrectl("workflow", "render", str(WORKFLOW), "--nodes-file", str(nodes_file))
    assert from_file.returncode == 0, from_file.stderr
    assert "Discovered 3 nodes" in from_file.stderr and "override[0] applied" in from_file.stderr
    annotations = yaml.safe_load(from_file.stdout)["metadata"]["annotations"]
    assert annotations["nvcrectl.nvidia.com/detected-platform"] == "aws"
    mock = nvcrectl("workflow", "render", str(WORKFLOW), "--platform", "aws", "--gpu-arch", "h100", "--nodes", "3")
    assert from_file.stdout == mock.stdout  # the same nodes, from a file or from the templates


def test_a_nodes_file_may_be_a_node_list(tmp_path: Path) -> None:
    nodes_file = tmp_path / "nodes.yaml"
    nodes_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "NodeList", "items": _mock_nodes("gcp", "h100", 2)}))
    result = nvcrectl("workflow", "render", str(WORKFLOW), "--nodes-file", str(nodes_file), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert "Discovered 2 nodes" in result.stderr


@pytest.mark.parametrize(
    ("content", "extra", "path", "message"),
    [
        ("- kind: Pod\n  metadata: {name: p}\n", [], ": [0].kind", "expected kind Node, got 'Pod'"),
        ("[]\n", [], "nodes.yaml", "holds no Node"),
        ("- metadata: {name: n}\n", ["--platform", "aws"], "--nodes-file", "--nodes-file and --platform/--gpu-arch are mutually exclusive"),
        ("- metadata: {name: n}\n", ["--dry-run"], "--nodes-file", "cannot combine with --nodes-file"),
        ("- metadata: {name: n}\n", ["--facts", "x.yaml"], "--platform", "give exactly one of"),
    ],
)
def test_bad_nodes_files_and_flag_pairs_exit_2(tmp_path: Path, content: str, extra: list[str], path: str, message: str) -> None:
    nodes_file = tmp_path / "nodes.yaml"
    nodes_file.write_text(content)
    result = nvcrectl("workflow", "render", str(WORKFLOW), "--nodes-file", str(nodes_file), *extra)
    assert result.returncode == 2, result.stderr
    assert path in result.stderr and message in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


# ------------------------------------------------------------------ certification render -n


def test_certification_render_n_places_every_workflow_in_the_namespace() -> None:
    plain = nvcrectl("certification", "render", str(CERTIFICATION), "--platform", "aws", "--gpu-arch", "h100")
    placed = nvcrectl("certification", "render", str(CERTIFICATION), "--platform", "aws", "--gpu-arch", "h100", "-n", "team-a")
    long_form = nvcrectl("certification", "render", str(CERTIFICATION), "--platform", "aws", "--gpu-arch", "h100", "--namespace", "team-a")
    assert placed.returncode == 0, placed.stderr
    assert long_form.stdout == placed.stdout
    before = [d for d in yaml.safe_load_all(plain.stdout) if d]
    after = [d for d in yaml.safe_load_all(placed.stdout) if d]
    assert [d["metadata"]["namespace"] for d in after] == ["team-a"] * len(before)
    for old, new in zip(before, after):
        new["metadata"].pop("namespace")
        assert new == old  # nothing else changes


@pytest.mark.parametrize(
    ("namespace", "cert_namespace", "path", "message"),
    [
        ("team-a", "team-b", "metadata.namespace", "does not match --namespace 'team-a'"),
        ("Team_A", None, "--namespace", "is not a namespace name"),
    ],
)
def test_certification_render_n_refuses_a_conflict_or_a_bad_name(
    tmp_path: Path, namespace: str, cert_namespace: str | None, path: str, message: str
) -> None:
    document = yaml.safe_load(CERTIFICATION.read_text())
    if cert_namespace:
        document["metadata"]["namespace"] = cert_namespace
    cert = tmp_path / "cert.yaml"
    cert.write_text(yaml.safe_dump(document))
    result = nvcrectl("certification", "render", str(cert), "--platform", "aws", "--gpu-arch", "h100", "-n", namespace)
    assert result.returncode == 2, result.stderr
    assert path in result.stderr and message in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
