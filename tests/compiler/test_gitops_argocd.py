"""The Argo CD plugin: its commands run the way the repo-server's cmp-server runs them.

The cmp-server runs each command as an argument list with the application directory as its
working directory and the Application's plugin env as ``ARGOCD_ENV_*``; it applies what
``generate`` prints on stdout and shows stderr when the command fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[2]
ARGOCD = REPO / "examples" / "argocd"
KUBECTL = shutil.which("kubectl")


def plugin() -> dict:
    return load_documents((ARGOCD / "plugin.yaml").read_text())[0]


def argv(command: list[str]) -> list[str]:
    """The plugin's command with ``nvcrectl`` taken from this checkout's interpreter."""
    return [*([sys.executable, "-m", "nvcre.cli.main"] if command[0] == "nvcrectl" else [command[0]]), *command[1:]]


def run_like_repo_server(step: str, app_dir: Path, plugin_env: dict[str, str]) -> subprocess.CompletedProcess:
    spec = plugin()["spec"]
    command = spec[step]["command"] if step != "discover" else spec["discover"]["find"]["command"]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ARGOCD_APP_NAME": "gpu-certification",
        "ARGOCD_APP_NAMESPACE": "nvcre-certification",
        "ARGOCD_APP_SOURCE_PATH": "examples/argocd/app",
        **{f"ARGOCD_ENV_{k}": v for k, v in plugin_env.items()},
    }
    return subprocess.run(argv(command), cwd=app_dir, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    target = tmp_path / "app"
    shutil.copytree(ARGOCD / "app", target)
    return target


def test_plugin_is_a_config_management_plugin_with_argv_commands() -> None:
    doc = plugin()
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]["name"]) == ("argoproj.io/v1alpha1", "ConfigManagementPlugin", "nvcre")
    spec = doc["spec"]
    for command in (spec["init"]["command"], spec["generate"]["command"], spec["discover"]["find"]["command"]):
        assert all(isinstance(part, str) for part in command)
        assert command[0] not in ("sh", "bash")  # no shell strings
    application = load_documents((ARGOCD / "application.yaml").read_text())[0]
    assert application["spec"]["source"]["plugin"]["name"] == f"{doc['metadata']['name']}-{spec['version']}"
    names = {e["name"] for e in application["spec"]["source"]["plugin"]["env"]}
    assert names == {"NVCRE_PLATFORM", "NVCRE_GPU_ARCH"}


def test_generate_prints_only_the_manifests_for_the_platform_in_the_env(app_dir: Path) -> None:
    assert run_like_repo_server("init", app_dir, {}).returncode == 0
    result = run_like_repo_server("generate", app_dir, {"NVCRE_PLATFORM": "aws", "NVCRE_GPU_ARCH": "h100"})
    assert result.returncode == 0, result.stderr
    expected = render_certification(load_documents((app_dir / "certification.yaml").read_text())[0], platform="aws", gpu_arch="h100")
    assert result.stdout == dump_yaml_stream(expected.workflows)
    assert "aws-efa-nccl-mpi" in result.stdout


def test_generate_fails_with_a_field_path_and_nothing_on_stdout(app_dir: Path) -> None:
    missing_arch = run_like_repo_server("generate", app_dir, {"NVCRE_PLATFORM": "aws"})
    assert missing_arch.returncode != 0
    assert missing_arch.stdout == ""
    assert "certification.yaml: spec.target.nodeSelector" in missing_arch.stderr
    assert "Traceback" not in missing_arch.stderr
    (app_dir / "certification.yaml").write_text((app_dir / "certification.yaml").read_text() + "  bogus: 1\n")
    invalid = run_like_repo_server("init", app_dir, {})
    assert invalid.returncode == 2 and "certification.yaml: spec.bogus" in invalid.stderr


def test_discover_claims_directories_with_a_certification_only(app_dir: Path, tmp_path: Path) -> None:
    found = run_like_repo_server("discover", app_dir, {})
    assert found.returncode == 0 and found.stdout.strip() == "./certification.yaml"
    other = tmp_path / "other"
    other.mkdir()
    (other / "deploy.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    assert run_like_repo_server("discover", other, {}).stdout == ""


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_the_plugin_config_map_carries_plugin_yaml_verbatim() -> None:
    built = subprocess.run([KUBECTL, "kustomize", str(ARGOCD)], capture_output=True, text=True, timeout=60, check=True)
    config_map = load_documents(built.stdout)[0]
    assert config_map["metadata"]["name"] == "nvcre-cmp-plugin"
    assert config_map["data"]["plugin.yaml"] == (ARGOCD / "plugin.yaml").read_text()
    patch = load_documents((ARGOCD / "repo-server-patch.yaml").read_text())[0]
    mounts = {m["name"]: m for m in patch["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["nvcre-cmp-plugin"]["mountPath"] == "/home/argocd/cmp-server/config/plugin.yaml"
