"""``nvcrectl certification run``: compose (or read) a Certification, submit it and, with ``--wait``, report it.

The command's parameters are typed; its body packs them into a
:class:`~nvcre.cli.run_options.RunOptions` and a :class:`~nvcre.cli.run_options.CertificationChoice`,
and :mod:`nvcre.cli.running` checks them, builds the plan and runs it. Exit codes: 0 PASSED,
1 FAILED, 2 invalid input, 3 the wait timed out, 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .output import guarded
from .run_options import (
    CertificationChoice,
    ContextOption,
    ControllerPullSecretOption,
    EvidenceOption,
    GrantRunAccessOption,
    ImageOption,
    JunitOption,
    KubeconfigOption,
    NvcreStreamsOption,
    ResultsFileOption,
    RunOptions,
    SetupOption,
    SignKeyOption,
    WaitOption,
    WorkloadRegistryOption,
    WorkloadRegistryPasswordOption,
    WorkloadRegistryUsernameOption,
    cleanup_help,
)

app = typer.Typer()


# Long: one typed parameter per flag, in the order the help lists them, then the two values they fill.
@app.command("run")
@guarded
def certification_run(
    category: Annotated[list[str] | None, typer.Option("--category", help="domain/variant; repeatable, comma-separated allowed.")] = None,
    cert_file: Annotated[Path | None, typer.Option("--cert-file", help="A Certification YAML (instead of --category).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Certification name (default nvcrectl-<timestamp>).")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Run namespace (default: a new nvcrectl-<timestamp>).")] = None,
    wait: WaitOption = False,
    timeout: Annotated[
        str | None,
        typer.Option("--timeout", help="With --wait: how long to wait (Go duration); derived from the categories when omitted."),
    ] = None,
    nvcre_streams: NvcreStreamsOption = False,
    results_file: ResultsFileOption = None,
    junit: JunitOption = None,
    evidence: EvidenceOption = None,
    sign_key: SignKeyOption = None,
    nodes_per_job: Annotated[int, typer.Option("--nodes-per-job", help="0 = automatic.")] = 0,
    placement: Annotated[str, typer.Option("--placement", help="Pinned (default) or Unpinned.")] = "",
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="0 = from the GPU architecture.")] = 0,
    enable_checkpoint: Annotated[bool | None, typer.Option("--enable-checkpoint/--no-enable-checkpoint")] = None,
    enable_mnnvl: Annotated[bool | None, typer.Option("--enable-mnnvl/--no-enable-mnnvl")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps")] = 0,
    exit_duration_mins: Annotated[int, typer.Option("--exit-duration-mins")] = 0,
    startup_stall_timeout_seconds: Annotated[int | None, typer.Option("--startup-stall-timeout-seconds")] = None,
    repeat_count: Annotated[int, typer.Option("--repeat-count")] = 0,
    max_restarts: Annotated[int, typer.Option("--max-restarts")] = 0,
    storage_class: Annotated[str, typer.Option("--storage-class")] = "",
    workload_registry: WorkloadRegistryOption = None,
    workload_registry_username: WorkloadRegistryUsernameOption = None,
    workload_registry_password: WorkloadRegistryPasswordOption = None,
    grant_run_access: GrantRunAccessOption = False,
    setup: SetupOption = False,
    image: ImageOption = None,
    controller_pull_secret: ControllerPullSecretOption = None,
    cleanup: Annotated[bool, typer.Option("--cleanup", help=cleanup_help("Certification"))] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Run catalog categories (or a Certification file) on the cluster."""
    from . import running

    options = RunOptions(
        name=name,
        namespace=namespace,
        wait=wait,
        timeout=timeout,
        nvcre_streams=nvcre_streams,
        results_file=results_file,
        junit=junit,
        evidence=evidence,
        sign_key=sign_key,
        workload_registry=workload_registry,
        workload_registry_username=workload_registry_username,
        workload_registry_password=workload_registry_password,
        grant_run_access=grant_run_access,
        setup=setup,
        image=image,
        controller_pull_secret=controller_pull_secret,
        cleanup=cleanup,
        kubeconfig=kubeconfig,
        context=context,
    )
    choice = CertificationChoice(
        categories=tuple(category or ()),
        cert_file=cert_file,
        nodes_per_job=nodes_per_job,
        placement=placement,
        gpus_per_node=gpus_per_node,
        enable_checkpoint=enable_checkpoint,
        enable_mnnvl=enable_mnnvl,
        max_steps=max_steps,
        exit_duration_mins=exit_duration_mins,
        startup_stall_timeout_seconds=startup_stall_timeout_seconds,
        repeat_count=repeat_count,
        max_restarts=max_restarts,
        storage_class=storage_class,
    )
    running.execute(running.certification_plan(options, choice), kubeconfig, context)
