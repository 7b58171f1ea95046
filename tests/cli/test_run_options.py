"""The ``run`` commands hand the runner frozen, typed values built from their typed parameters.

``certification run`` and ``workloadrun run`` are run in-process with the plan builders replaced
by recorders, so what each command builds (a :class:`RunOptions` and its kind's choice) is seen
exactly as :mod:`nvcre.cli.running` receives it: flags given, defaults, the environment variable
of the registry password, and the frozen values that nothing downstream can change.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from nvcre.cli.run_options import CertificationChoice, RunOptions, WorkloadRunChoice


def _invoke(monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str] | None = None) -> tuple[int, list[Any], str]:
    """Run ``nvcrectl args`` with the plan builders recording what they were given (nothing runs)."""
    from typer.testing import CliRunner

    from nvcre.cli import main, running

    seen: list[Any] = []

    def record(options: RunOptions, choice: Any) -> str:
        seen.append((options, choice))
        return "prepared"

    monkeypatch.setattr(running, "certification_plan", record)
    monkeypatch.setattr(running, "workloadrun_plan", record)
    monkeypatch.setattr(running, "execute", lambda prepared, kubeconfig, context: seen.append((prepared, kubeconfig, context)))
    main.mount_commands()
    result = CliRunner().invoke(main.app, args, env=env, catch_exceptions=False)
    return result.exit_code, seen, result.stderr


def test_certification_run_builds_its_options_from_typed_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    args = [
        "certification", "run", "--category", "communication/nccl-all-reduce", "--category", "training/llama3-8b",
        "--name", "c1", "-n", "team", "--wait", "--timeout", "20m", "--results-file", str(tmp_path / "r.json"),
        "--nodes-per-job", "4", "--no-enable-mnnvl", "--startup-stall-timeout-seconds", "90", "--repeat-count", "2",
        "--setup", "--image", "registry.example/nvcre:1", "--cleanup", "--kubeconfig", str(tmp_path / "kc"), "--context", "lab",
    ]  # fmt: skip
    code, seen, stderr = _invoke(monkeypatch, args)
    assert code == 0, stderr
    (options, choice), (prepared, kubeconfig, context) = seen
    assert options == RunOptions(
        name="c1",
        namespace="team",
        wait=True,
        timeout="20m",
        results_file=tmp_path / "r.json",
        setup=True,
        image="registry.example/nvcre:1",
        cleanup=True,
        kubeconfig=tmp_path / "kc",
        context="lab",
    )
    assert choice == CertificationChoice(
        categories=("communication/nccl-all-reduce", "training/llama3-8b"),
        nodes_per_job=4,
        enable_mnnvl=False,
        startup_stall_timeout_seconds=90,
        repeat_count=2,
    )
    assert isinstance(options.results_file, Path) and isinstance(choice.nodes_per_job, int)
    assert (prepared, kubeconfig, context) == ("prepared", tmp_path / "kc", "lab")


def test_certification_run_defaults_are_the_flags_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, seen, stderr = _invoke(monkeypatch, ["certification", "run", "--cert-file", str(tmp_path / "cert.yaml")])
    assert code == 0, stderr
    options, choice = seen[0]
    assert options == RunOptions()
    assert choice == CertificationChoice(cert_file=tmp_path / "cert.yaml")
    assert choice.startup_stall_timeout_seconds is None  # "not given" stays distinct from 0 (refused with --cert-file)


def test_workloadrun_run_builds_its_options_and_target(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    file = tmp_path / "run.yaml"
    args = ["workloadrun", "run", str(file), "--node-list", "a,b", "--topology-key", "example.com/rack", "--workload-registry", "r.example"]
    code, seen, stderr = _invoke(monkeypatch, args, env={"NVCRE_WORKLOAD_REGISTRY_PASSWORD": "from-env"})
    assert code == 0, stderr
    options, choice = seen[0]
    assert options == RunOptions(timeout="30m", workload_registry="r.example", workload_registry_password="from-env")
    assert choice == WorkloadRunChoice(file=file, node_list="a,b", topology_key="example.com/rack")


def test_the_options_are_frozen() -> None:
    options = RunOptions(wait=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.wait = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        CertificationChoice().categories = ("x",)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        WorkloadRunChoice(Path("f")).node_list = "n"  # type: ignore[misc]
    assert dataclasses.replace(options, wait=False) == RunOptions()


def test_the_plan_builders_take_typed_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused flag combination is still refused (exit 2) from the typed values, before any cluster."""
    from typer.testing import CliRunner

    from nvcre.cli import common, main

    monkeypatch.setattr(common, "kube_client", lambda kubeconfig, context: pytest.fail("a cluster was sought"))
    main.mount_commands()
    for args, message in (
        (["certification", "run", "--category", "communication/nccl-all-reduce", "--cleanup"], "--cleanup requires --wait"),
        (["certification", "run", "--category", "communication/nccl-all-reduce", "--nvcre-streams"], "--nvcre-streams requires --wait"),
        (["certification", "run", "--category", "communication/nccl-all-reduce", "--image", "i"], "--image requires --setup"),
    ):
        result = CliRunner().invoke(main.app, args, catch_exceptions=False)
        assert result.exit_code == 2 and message in result.stderr and result.stdout == "", (args, result.stderr)
