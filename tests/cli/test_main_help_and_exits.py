"""Every ``nvcrectl`` command answers ``--help``; exit codes 0/1/2/3/130 and validation messages, by table.

Commands that need a cluster run in-process against the scripted API server of
``tests/cli/test_certification_run_golden.py`` (a fake clock, no network); the rest run as a subprocess without one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_certification_run_golden import ScriptedCluster, _cert_file, _golden_objects, invoke

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = [sys.executable, "-m", "nvcre.cli.main"]


def _command_paths() -> list[tuple[str, ...]]:
    import typer

    from nvcre.cli import main

    main.mount_commands()
    root = typer.main.get_command(main.app)

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if getattr(command, "commands", None):  # a group (typer's own click-compatible classes)
            for name, sub in sorted(command.commands.items()):
                yield from walk(sub, (*path, name))

    return list(walk(root, ()))


PATHS = _command_paths()


def test_the_command_tree_has_the_operator_commands() -> None:
    expected = {
        ("certification", "run"),
        ("certification", "report"),
        ("certification", "status"),
        ("certification", "delete"),
        ("workloadrun", "run"),
        ("workloadrun", "cancel"),
        ("setup", "init"),
        ("setup", "status"),
        ("setup", "reset"),
        ("rbac", "print"),
        ("mcp", "serve"),
        ("cluster", "info"),
        ("completion",),
    }
    assert expected <= {p[:2] if p[:1] != ("completion",) else p[:1] for p in PATHS}


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "nvcrectl" for p in PATHS])
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    from typer.testing import CliRunner

    from nvcre.cli import main

    result = CliRunner().invoke(main.app, [*path, "--help"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    assert "Traceback" not in result.output


def test_help_works_from_the_installed_entry_point() -> None:
    result = subprocess.run([*NVCRECTL, "--help"], cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and "certification" in result.stdout and "setup" in result.stdout


# ------------------------------------------------------------------ without a cluster (subprocess)

CERT = "examples/certification.yaml"
WLR = "examples/workloadrun-nccl-all-reduce.yaml"
NCCL = ["--category", "communication/nccl-all-reduce"]

OFFLINE: list[tuple[list[str], int, str]] = [
    # certification run: the reference's order of checks, then this project's setup flags
    (["certification", "run", *NCCL, "--wait", "--timeout", "0s"], 2, "--timeout must be at least 1s when --wait is set, got 0s"),
    (["certification", "run", *NCCL, "--cert-file", CERT], 2, "--cert-file and --category are mutually exclusive"),
    (["certification", "run", *NCCL, "--workload-registry-username", "u"], 2, "must all be set together and non-empty"),
    (
        ["certification", "run", "--cert-file", CERT, "--startup-stall-timeout-seconds", "5"],
        2,
        "--startup-stall-timeout-seconds cannot be used with --cert-file",
    ),
    (["certification", "run"], 2, "either --cert-file or at least one --category is required"),
    (["certification", "run", *NCCL, "--image", "nvcre/manager:dev"], 2, "--image requires --setup"),
    (["certification", "run", *NCCL, "--controller-pull-secret", "ghcr"], 2, "--controller-pull-secret requires --setup"),
    (["certification", "run", *NCCL, "--cleanup"], 2, "--cleanup requires --wait"),
    (["certification", "run", *NCCL, "--setup", "--image", "x", "--wait", "--timeout", "-1s"], 2, "--timeout"),
    # workloadrun run
    (["workloadrun", "run", WLR, "--wait", "--timeout", "0s"], 2, "--timeout must be at least 1s when --wait is set"),
    (["workloadrun", "run", WLR, "--image", "nvcre/manager:dev"], 2, "--image requires --setup"),
    (["workloadrun", "run", WLR, "--cleanup"], 2, "--cleanup requires --wait"),
    (["workloadrun", "run", WLR, "--workload-registry", "r.example.com"], 2, "must all be set together"),
    # setup
    (["setup", "init", "--skip-phases", "cr"], 2, "accepted: deps, helm"),
    (["setup", "init", "-f", "-"], 2, "-f - reads values from stdin, so it needs --auto-approve"),
    (["setup", "reset", "--skip-phases", "nope", "--auto-approve"], 2, "accepted: cr, helm, deps"),
    (["setup", "render", "--set", "rbac.scope=everywhere"], 2, "rbac.scope"),
    # rendering and other offline commands
    (["certification", "render", CERT, "--dry-run", "--gpu-arch", "h100"], 2, "cannot combine with --gpu-arch"),
    (["rbac", "print"], 2, "--namespace"),
    (["certification", "list-categories"], 0, ""),
    (["rbac", "print", "--namespace", "team-a"], 0, ""),
    # a cluster is needed and there is none: one clear line, exit 1
    (["certification", "report", "x"], 1, "cannot load cluster credentials"),
    (["certification", "run", *NCCL], 1, "cannot load cluster credentials"),
    (["setup", "status"], 1, "cannot load cluster credentials"),
    (["workloadrun", "status", "x"], 1, "cannot load cluster credentials"),
]


@pytest.mark.parametrize(("args", "code", "message"), OFFLINE, ids=[" ".join(a[:3]) + f" -> {c}" for a, c, _ in OFFLINE])
def test_exit_codes_and_messages_without_a_cluster(args: list[str], code: int, message: str) -> None:
    env = {**os.environ, "KUBECONFIG": str(REPO / "does-not-exist.kubeconfig")}
    result = subprocess.run(
        [*NVCRECTL, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL
    )
    assert result.returncode == code, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    if code == 2:
        assert result.stdout == ""


# ------------------------------------------------------------------ against the scripted API server


class Interrupting(ScriptedCluster):
    """Raises KeyboardInterrupt (or sends this process SIGTERM) on the n-th read of the run."""

    def __init__(self, objects: list[dict[str, Any]], at: int, how: str = "interrupt") -> None:
        super().__init__(objects)
        self.at, self.how = at, how
        self.handler_seen: Any = None

    def _run_view(self, live: dict[str, Any]) -> dict[str, Any]:
        if self.run_gets + 1 == self.at:
            self.run_gets += 1
            self.handler_seen = signal.getsignal(signal.SIGTERM)
            if self.how == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
            raise KeyboardInterrupt
        return super()._run_view(live)


def test_a_timed_out_wait_exits_3_and_says_how_to_follow_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    objects = _golden_objects("in-progress-iterations")
    cert = _cert_file(objects, tmp_path / "cert.yaml")
    code, stdout, stderr = invoke(
        monkeypatch, ScriptedCluster(objects), ["certification", "run", "--cert-file", str(cert), "--wait", "--timeout", "5s"]
    )
    assert code == 3, stderr
    assert stdout == ""
    assert "Certification Report" in stderr  # the partial report
    assert "The certification is still running in namespace" in stderr
    assert stderr.rstrip().splitlines()[-1].startswith("error: certification did not complete within 5s (ran for ")


def test_ctrl_c_exits_130_and_leaves_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    objects = _golden_objects("passed")
    cluster = Interrupting(objects, at=3)
    code, _, stderr = invoke(monkeypatch, cluster, ["certification", "run", *NCCL, "--wait", "--timeout", "10m"])
    assert code == 130, stderr
    assert stderr.rstrip().splitlines()[-1] == "interrupted"
    assert "Stop it:\n  kubectl delete certification" in stderr
    assert not any(c.startswith("delete ") for c in cluster.calls)


def test_sigterm_with_cleanup_cleans_up_and_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    before = signal.getsignal(signal.SIGTERM)
    cluster = Interrupting(_golden_objects("passed"), at=2, how="sigterm")
    code, _, stderr = invoke(monkeypatch, cluster, ["certification", "run", *NCCL, "--wait", "--timeout", "10m", "--cleanup"])
    assert code == 130, stderr
    assert cluster.handler_seen not in (signal.SIG_DFL, before)  # handled while the run was on
    assert signal.getsignal(signal.SIGTERM) == before  # and given back afterwards
    lines = stderr.rstrip().splitlines()
    assert lines[-1] == "interrupted"
    assert "[cleanup] Deleting certification..." in lines and "[cleanup] Done." in lines
    assert "still running" not in stderr  # --cleanup deleted it
    assert any(c.startswith("delete Certification") for c in cluster.calls)


def test_without_setup_or_cleanup_sigterm_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    before = signal.getsignal(signal.SIGTERM)
    cluster = Interrupting(_golden_objects("passed"), at=2)
    code, _, _ = invoke(monkeypatch, cluster, ["certification", "run", *NCCL, "--wait", "--timeout", "10m"])
    assert code == 130
    assert cluster.handler_seen == before


def test_setup_without_trainer_stops_before_submitting(monkeypatch: pytest.MonkeyPatch) -> None:
    # no helm: --setup cannot render Trainer, whatever this machine has installed
    monkeypatch.setenv("NVCRE_HELM", "/nonexistent/helm")
    cluster = ScriptedCluster(_golden_objects("passed"))
    code, stdout, stderr = invoke(monkeypatch, cluster, ["certification", "run", *NCCL, "--setup", "--wait", "--cleanup"])
    assert code == 1, stderr
    lines = stderr.splitlines()
    assert lines[0] == "[setup] Installing dependencies..."
    assert "missing: Kubeflow Trainer CRDs: missing: trainjobs.trainer.kubeflow.org" in stderr
    assert "nvcrectl setup init --skip-phases=deps" in stderr
    assert not any(c.startswith("create ") for c in cluster.calls)
    assert "[cleanup]" not in stderr  # nothing was created, so nothing is undone
    assert stdout == ""


def test_a_bad_controller_image_is_invalid_input(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = ScriptedCluster(_golden_objects("passed"))
    code, stdout, stderr = invoke(
        monkeypatch, cluster, ["certification", "run", *NCCL, "--setup", "--image", "UPPER CASE!", "--wait", "--cleanup"]
    )
    assert code == 2, stderr
    assert "manager.image" in stderr and stdout == ""
    assert not any(c.startswith(("create ", "delete ")) for c in cluster.calls)
    assert "[cleanup]" not in stderr  # nothing was applied, so no reset removes an install that was there


def test_workloadrun_setup_says_so_and_stops_without_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    # no helm: --setup cannot render Trainer, whatever this machine has installed
    monkeypatch.setenv("NVCRE_HELM", "/nonexistent/helm")
    cluster = ScriptedCluster(_golden_objects("workloadrun-unpinned"))
    code, stdout, stderr = invoke(monkeypatch, cluster, ["workloadrun", "run", str(REPO / WLR), "--setup"])
    assert code == 1, stderr
    assert stderr.splitlines()[0] == "Installing NVCRE components..."
    assert "missing: JobSet CRD: missing: jobsets.jobset.x-k8s.io" in stderr
    assert not any(c.startswith("create ") for c in cluster.calls) and stdout == ""
