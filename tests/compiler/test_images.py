"""`certification images`: every image and source repository a render pulls, per category."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.images import mirror_manifest, parse_reference, unique_images
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[2]
AWS_H100 = REPO / "golden/render/aws-h100-all-reduce/certification.yaml"
GCP_H100 = REPO / "golden/render/gcp-h100-all-reduce/certification.yaml"
NEMOTRON = REPO / "golden/render/aws-h100-nemotron5-8b/certification.yaml"


def images(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", "images", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def manifest_for(path: Path, platform: str, gpu_arch: str):
    rendered = render_certification(load_documents(path.read_text())[0], platform=platform, gpu_arch=gpu_arch)
    return mirror_manifest(rendered.workflows)


def test_aws_h100_lists_the_efa_nccl_tests_image_on_every_container_that_runs_it() -> None:
    (entry,) = manifest_for(AWS_H100, "aws", "h100")
    assert entry.category == "communication/nccl-all-reduce"
    (ref,) = entry.images
    assert ref.image.startswith("public.ecr.aws/hpc-cloud/nccl-tests:") and "efa" in ref.tag
    assert (ref.registry, ref.repository) == ("public.ecr.aws", "hpc-cloud/nccl-tests")
    roles = {(u.role, u.container, u.job) for u in ref.uses}
    assert {
        ("container", "node", "node"),
        ("container", "node", "launcher"),
        ("init", "fix-ssh-permissions", "launcher"),
        ("trainer", "trainer", None),
    } <= roles


def test_gcp_h100_lists_the_tcpxo_daemon_as_a_sidecar() -> None:
    (entry,) = manifest_for(GCP_H100, "gcp", "h100")
    by_image = {ref.image: ref for ref in entry.images}
    daemon = next(ref for image, ref in by_image.items() if "tcpgpudmarxd" in image)
    assert daemon.registry == "us-docker.pkg.dev"
    assert [(u.role, u.container, u.job) for u in daemon.uses] == [("sidecar", "tcpxo-daemon", "node")]
    assert len(by_image) == 2  # the daemon and the NCCL image


def test_training_lists_the_megatron_source_repository() -> None:
    (entry,) = manifest_for(NEMOTRON, "aws", "h100")
    (source,) = entry.sources
    assert source.url == "https://github.com/NVIDIA/Megatron-LM.git"
    assert (source.project, source.env, source.container) == ("Megatron-LM", "MEGATRON_REPO", "megatron-clone")
    assert "initContainers[name=megatron-clone].env[name=MEGATRON_REPO]" in source.path


def test_the_source_repository_follows_the_spec() -> None:
    document = load_documents(NEMOTRON.read_text())[0]
    document["spec"]["sourceRepo"] = "https://git.example.com/mirrors/Megatron-LM.git"
    (entry,) = mirror_manifest(render_certification(document, platform="aws", gpu_arch="h100").workflows)
    assert [s.url for s in entry.sources] == ["https://git.example.com/mirrors/Megatron-LM.git"]


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("nvcr.io/nvidia/pytorch:25.06-py3", ("nvcr.io", "nvidia/pytorch", "25.06-py3", None)),
        ("ubuntu", ("docker.io", "library/ubuntu", None, None)),
        ("org/app:1", ("docker.io", "org/app", "1", None)),
        ("localhost:5000/app@sha256:abc", ("localhost:5000", "app", None, "sha256:abc")),
        ("registry.example.com:443/a/b:2@sha256:def", ("registry.example.com:443", "a/b", "2", "sha256:def")),
    ],
)
def test_references_split_into_registry_repository_tag_and_digest(image: str, parts: tuple) -> None:
    assert parse_reference(image) == parts


def test_cli_text_json_and_unique() -> None:
    text = images(str(AWS_H100), str(GCP_H100), "--platform", "gcp", "--gpu-arch", "h100")
    assert text.returncode == 0, text.stderr
    assert "sidecar tcpxo-daemon in node" in text.stdout
    as_json = images(str(AWS_H100), "--platform", "aws", "--gpu-arch", "h100", "-o", "json")
    data = json.loads(as_json.stdout)
    assert [c["category"] for c in data["categories"]] == ["communication/nccl-all-reduce"]
    assert data["images"] == unique_images(manifest_for(AWS_H100, "aws", "h100"))
    unique = images(str(NEMOTRON), str(AWS_H100), "--platform", "aws", "--gpu-arch", "h100", "--unique")
    lines = unique.stdout.splitlines()
    assert lines == sorted(set(lines)) and any("nccl-tests" in line for line in lines) and any("pytorch" in line for line in lines)


def test_cli_errors_name_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(AWS_H100.read_text().replace("nccl-all-reduce", "no-such"))
    result = images(str(AWS_H100), str(bad), "--platform", "aws", "--gpu-arch", "h100")
    assert result.returncode == 2 and result.stdout == ""
    assert f"{bad}: spec.categories[0]" in result.stderr and "Traceback" not in result.stderr
