"""The operator's commands without a cluster: flag validation, messages, exit codes, help, rbac print, MCP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = [sys.executable, "-m", "nvcre.cli.main"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "KUBECONFIG": str(REPO / "does-not-exist.kubeconfig"), **(env or {})}
    return subprocess.run([*NVCRECTL, *args], check=False, cwd=REPO, capture_output=True, text=True, env=full_env, timeout=120)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--category", "communication/nccl-all-reduce", "--wait", "--timeout", "0s"],
            "--timeout must be at least 1s when --wait is set, got 0s",
        ),
        (["--category", "communication/nccl-all-reduce", "--wait", "--timeout", "soon"], "--timeout: invalid duration"),
        (
            ["--category", "communication/nccl-all-reduce", "--cert-file", "examples/certification.yaml"],
            "--cert-file and --category are mutually exclusive",
        ),
        (
            ["--category", "communication/nccl-all-reduce", "--workload-registry", "r.example.com"],
            ("--workload-registry, --workload-registry-username, and --workload-registry-password must all be set together and non-empty"),
        ),
        (
            ["--cert-file", "examples/certification.yaml", "--startup-stall-timeout-seconds", "60"],
            "--startup-stall-timeout-seconds cannot be used with --cert-file; set it in the Certification YAML",
        ),
        ([], "either --cert-file or at least one --category is required"),
        (["--category", "nccl-all-reduce"], 'invalid category format "nccl-all-reduce": expected domain/variant'),
        (["--category", "communication/nope"], 'unknown category "communication/nope"'),
        (["--category", "communication/nccl-all-reduce", "--placement", "Unpinned"], "--placement Unpinned requires --nodes-per-job"),
        (
            ["--category", "communication/nccl-all-reduce", "--startup-stall-timeout-seconds", "-5"],
            "--startup-stall-timeout-seconds must not be negative (got -5)",
        ),
    ],
)
def test_run_rejects_bad_flags_before_touching_a_cluster(args: list[str], message: str) -> None:
    result = run("certification", "run", *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_timeout_is_not_validated_without_wait() -> None:
    # Without --wait a bad timeout is ignored; the run then fails only for want of a cluster (exit 1).
    result = run("certification", "run", "--category", "communication/nccl-all-reduce", "--timeout", "0s")
    assert result.returncode == 1, result.stderr
    assert "cannot load cluster credentials" in result.stderr
    assert "Traceback" not in result.stderr


def test_cert_file_errors_carry_field_paths(tmp_path: Path) -> None:
    bad = tmp_path / "cert.yaml"
    bad.write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: x}\n"
        "spec: {target: {}, categories: [{domain: communication}]}\n"
    )
    result = run("certification", "run", "--cert-file", str(bad))
    assert result.returncode == 2
    assert "spec.categories[0].variant" in result.stderr


def test_report_without_a_cluster_is_one_clear_line() -> None:
    result = run("certification", "report", "some-cert")
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot load cluster credentials")


@pytest.mark.parametrize("command", ["run", "report", "status", "delete"])
def test_operate_commands_have_help(command: str) -> None:
    result = run("certification", command, "--help")
    assert result.returncode == 0
    assert "Usage:" in result.stdout


def test_rbac_print_is_the_run_binding() -> None:
    result = run("rbac", "print", "--namespace", "team-a")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "apiVersion: rbac.authorization.k8s.io/v1\n"
        "kind: RoleBinding\n"
        "metadata:\n"
        "  name: nvcre-manager-run\n"
        "  namespace: team-a\n"
        "roleRef:\n"
        "  apiGroup: rbac.authorization.k8s.io\n"
        "  kind: ClusterRole\n"
        "  name: nvcre-run-role\n"
        "subjects:\n"
        "- kind: ServiceAccount\n"
        "  name: nvcre-manager\n"
        "  namespace: nvcre\n"
    )


def test_rbac_print_needs_a_namespace() -> None:
    result = run("rbac", "print")
    assert result.returncode == 2
    assert "--namespace" in result.stderr


async def _mcp_session(kubeconfig: str):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nvcre.cli.main", "mcp", "serve", "--kubeconfig", kubeconfig],
        cwd=str(REPO),
        env={**os.environ},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        categories = await session.call_tool("list_categories", {})
        missing = await session.call_tool("get_certification_status", {"name": "nope", "namespace": "default"})
        return tools, categories, missing


def test_mcp_tools_are_the_four_read_only_ones_and_errors_are_tool_errors(tmp_path: Path) -> None:
    tools, categories, missing = asyncio.run(asyncio.wait_for(_mcp_session(str(tmp_path / "none")), 60))
    assert sorted(t.name for t in tools.tools) == [
        "get_certification_report",
        "get_certification_status",
        "list_categories",
        "list_failed_nodes",
    ]
    assert not categories.is_error
    text = "".join(getattr(c, "text", "") for c in categories.content)
    listed = json.loads(text)["categories"]  # NVCRE's shape: {"categories": [{domain, variant}, ...]}
    assert {"communication/nccl-all-reduce", "diagnostics/dcgm-level4"} <= {f"{c['domain']}/{c['variant']}" for c in listed}
    assert missing.is_error
    assert "cannot load cluster credentials" in "".join(getattr(c, "text", "") for c in missing.content)


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (
            ["examples/workloadrun-nccl-all-reduce.yaml", "--wait", "--timeout", "0s"],
            "--timeout must be at least 1s when --wait is set, got 0s",
            2,
        ),
        (["examples/certification.yaml"], "expected kind WorkloadRun, got 'Certification'", 2),
        (["examples/workloadrun-nccl-all-reduce.yaml", "--workload-registry-username", "u"], "must all be set together and non-empty", 2),
        (["examples/workloadrun-nccl-all-reduce.yaml"], "cannot load cluster credentials", 1),
    ],
)
def test_workloadrun_run_validation(args: list[str], message: str, code: int) -> None:
    result = run("workloadrun", "run", *args)
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["run", "report", "status", "cancel"])
def test_workloadrun_operate_commands_have_help(command: str) -> None:
    assert run("workloadrun", command, "--help").returncode == 0


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    result = run("completion", shell)
    assert result.returncode == 0, result.stderr
    assert "_NVCRECTL_COMPLETE" in result.stdout


def test_completion_answers_from_the_command_tree() -> None:
    result = run(env={"_NVCRECTL_COMPLETE": "complete_bash", "COMP_WORDS": "nvcrectl certification re", "COMP_CWORD": "2"})
    assert result.stdout.split() == ["render", "report"]


@pytest.mark.parametrize("how", ["env", "stdin"])
def test_the_registry_password_can_stay_out_of_the_command_line(how: str) -> None:
    """From NVCRE_WORKLOAD_REGISTRY_PASSWORD or, with '-', stdin: nothing in ps or shell history; never printed."""
    args = [
        "certification",
        "run",
        "--category",
        "communication/nccl-all-reduce",
        "--workload-registry",
        "r.example.com",
        "--workload-registry-username",
        "robot",
    ]
    full_env = {**os.environ, "KUBECONFIG": str(REPO / "does-not-exist.kubeconfig")}
    if how == "env":
        full_env["NVCRE_WORKLOAD_REGISTRY_PASSWORD"] = "s3cret-value"
    else:
        args += ["--workload-registry-password", "-"]
    result = subprocess.run(
        [*NVCRECTL, *args], check=False, cwd=REPO, capture_output=True, text=True, env=full_env, input="s3cret-value\n", timeout=120
    )
    # the credentials are complete, so the run goes on to the cluster, which this test does not have
    assert result.returncode == 1 and "cannot load cluster credentials" in result.stderr, result.stderr
    assert "s3cret-value" not in result.stdout + result.stderr


def test_an_empty_stdin_password_is_refused() -> None:
    result = subprocess.run(
        [
            *NVCRECTL,
            "certification",
            "run",
            "--category",
            "communication/nccl-all-reduce",
            "--workload-registry",
            "r.example.com",
            "--workload-registry-username",
            "robot",
            "--workload-registry-password",
            "-",
        ],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        input="",
        timeout=120,
        env={**os.environ, "KUBECONFIG": str(REPO / "does-not-exist.kubeconfig")},
    )
    assert result.returncode == 2 and "stdin gave no password" in result.stderr
