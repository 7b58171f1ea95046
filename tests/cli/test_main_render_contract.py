"""The CLI contract: exit codes, stdout/stderr split, byte stability across runs and hash seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = [sys.executable, "-m", "nvcre.cli.main"]


def run(*args: str, seed: str = "0", stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run([*NVCRECTL, *args], cwd=REPO, capture_output=True, text=True, env=env, input=stdin, timeout=120)


def test_render_example_is_byte_identical_across_hash_seeds() -> None:
    outputs = {
        run("certification", "render", "examples/certification.yaml", "--platform", "onprem", "--gpu-arch", "gb300", seed=seed).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(outputs) == 1
    text = outputs.pop()
    assert text.count("\n---\n") == 3 and not text.startswith("---")
    assert "kind: Workflow" in text


def test_render_json_is_one_array() -> None:
    result = run("certification", "render", "examples/certification.yaml", "--gpu-arch", "NVIDIA GB300", "-o", "json")
    assert result.returncode == 0, result.stderr
    workflows = json.loads(result.stdout)
    assert [w["metadata"]["labels"]["nvcre.nvidia.com/category-variant"] for w in workflows] == [
        "nccl-all-reduce",
        "nccl-alltoall",
        "dcgm-level4",
        "nemotron5-8b",
    ]


@pytest.mark.parametrize("arch", ["gb300", "NVIDIA-GB300", "NVIDIA GB300"])
def test_gpu_arch_spellings_render_the_same(arch: str) -> None:
    result = run("certification", "render", "examples/certification.yaml", "--gpu-arch", arch, "--platform", "onprem")
    assert result.returncode == 0, result.stderr
    assert '"value":"gb300"' in result.stdout


def test_invalid_input_exits_2_with_every_path_and_no_stdout(tmp_path: Path) -> None:
    doc = tmp_path / "bad.yaml"
    labels = "\n".join(f"          k{i}: v" for i in range(33))
    doc.write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata:\n  name: bad\nspec:\n"
        "  target: {}\n  sourceRepo: http://example.com/repo.git\n  bogus: 1\n  categories:\n"
        "  - domain: communication\n    variant: nccl-all-reduce\n    options:\n"
        "      env:\n      - name: A\n        valueFrom: {secretKeyRef: {name: s, key: k}}\n"
        f"      workloadMetadata:\n        labels:\n{labels}\n"
    )
    for command in (("certification", "render", str(doc), "--gpu-arch", "h100"), ("certification", "validate", str(doc))):
        result = run(*command)
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert "Traceback" not in result.stderr
        for path in (
            "spec.sourceRepo",
            "spec.bogus",
            "spec.categories[0].options.env[0].valueFrom",
            "spec.categories[0].options.workloadMetadata.labels",
        ):
            assert path in result.stderr, (path, result.stderr)


def test_missing_file_and_bad_yaml_exit_2(tmp_path: Path) -> None:
    missing = run("certification", "render", str(tmp_path / "nope.yaml"), "--gpu-arch", "h100")
    assert missing.returncode == 2 and missing.stdout == "" and "no such file" in missing.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [\n")
    result = run("certification", "render", str(broken), "--gpu-arch", "h100")
    assert result.returncode == 2 and "invalid YAML" in result.stderr and "Traceback" not in result.stderr


def test_render_reads_stdin() -> None:
    text = (REPO / "examples" / "certification.yaml").read_text()
    assert (
        run("certification", "render", "-", "--gpu-arch", "gb300", stdin=text).stdout
        == run("certification", "render", "examples/certification.yaml", "--gpu-arch", "gb300").stdout
    )


def test_list_categories_lists_the_eight() -> None:
    result = run("certification", "list-categories", "-o", "json")
    assert result.returncode == 0
    assert len(json.loads(result.stdout)) == 8


def test_help_and_version() -> None:
    assert run("--help").returncode == 0
    assert "render" in run("certification", "--help").stdout
    assert run("--version").stdout.startswith("nvcrectl ")
    assert run("version").stdout == run("--version").stdout  # NVCRE's `nvcrectl version`


def test_render_path_never_imports_the_kubernetes_client() -> None:
    code = (
        "import sys\n"
        "from nvcre.cli.main import run\n"
        "sys.argv = ['nvcrectl', 'certification', 'render', 'examples/certification.yaml', '--gpu-arch', 'gb300']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "assert 'kubernetes' not in sys.modules, 'the render path imported kubernetes'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_help_path_imports_neither_compiler_nor_yaml() -> None:
    code = (
        "import sys\nfrom nvcre.cli.main import run\nsys.argv = ['nvcrectl', '--help']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('ruamel.yaml', 'nvcre.compiler.render', 'kubernetes', 'celpy') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_whole_floats_render_like_the_integers_the_api_server_stores(tmp_path: Path) -> None:
    text = (
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: c}\nspec:\n  target: {}\n"
        "  categories:\n  - {domain: communication, variant: nccl-all-reduce, options: {nodesPerJob: NODES}}\n"
    )
    outputs = []
    for nodes in ("2", "2.0"):
        path = tmp_path / f"c{nodes}.yaml"
        path.write_text(text.replace("NODES", nodes))
        result = run("certification", "render", str(path), "--gpu-arch", "h100")
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("NODES", "2.5"))
    result = run("certification", "render", str(bad), "--gpu-arch", "h100")
    assert result.returncode == 2 and "spec.categories[0].options.nodesPerJob" in result.stderr
