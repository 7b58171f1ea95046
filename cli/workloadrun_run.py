"""``nvcrectl workloadrun run``: submit a WorkloadRun file and, with ``--wait``, report its verdict.

The command's parameters are typed; its body packs them into a
:class:`~nvcre.cli.run_options.RunOptions` and a :class:`~nvcre.cli.run_options.WorkloadRunChoice`
(the file and NVCRE's target flags), and :mod:`nvcre.cli.running` checks them, builds the plan
and runs it. Exit codes: 0 PASSED, 1 FAILED, 2 invalid input, 3 the wait timed out, 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .output import guarded
from .run_options import (
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
    WorkloadRunChoice,
    cleanup_help,
)

app = typer.Typer()


# Long: one typed parameter per flag, in the order the help lists them, then the two values they fill.
@app.command("run")
@guarded
def workloadrun_run(
    file: Annotated[Path, typer.Argument(help="A WorkloadRun YAML.")],
    name: Annotated[str | None, typer.Option("--name", help="Overrides metadata.name.")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Default: metadata.namespace, else default.")] = None,
    wait: WaitOption = False,
    timeout: Annotated[str, typer.Option("--timeout", help="With --wait: how long to wait (Go duration).")] = "30m",
    nvcre_streams: NvcreStreamsOption = False,
    results_file: ResultsFileOption = None,
    junit: JunitOption = None,
    evidence: EvidenceOption = None,
    sign_key: SignKeyOption = None,
    node_list: Annotated[
        str | None,
        typer.Option("--node-list", help="Comma-separated node names (sets spec.target.nodeNames; numNodes is lowered to fit)."),
    ] = None,
    topology_domain: Annotated[
        str | None,
        typer.Option(
            "--topology-domain",
            help="Run on the nodes of this topology domain only (a '<key> In domain' requirement in spec.target.matchExpressions).",
        ),
    ] = None,
    topology_key: Annotated[
        str | None,
        typer.Option("--topology-key", help="The node label of --topology-domain (default: the detected platform's topology label)."),
    ] = None,
    test_scale: Annotated[
        str | None, typer.Option("--test-scale", help="Override spec.orchestration.testScale: intra-node, intra-rack or full-scale.")
    ] = None,
    workload_registry: WorkloadRegistryOption = None,
    workload_registry_username: WorkloadRegistryUsernameOption = None,
    workload_registry_password: WorkloadRegistryPasswordOption = None,
    grant_run_access: GrantRunAccessOption = False,
    setup: SetupOption = False,
    image: ImageOption = None,
    controller_pull_secret: ControllerPullSecretOption = None,
    cleanup: Annotated[bool, typer.Option("--cleanup", help=cleanup_help("WorkloadRun"))] = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Submit a WorkloadRun and optionally wait for its verdict."""
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
    choice = WorkloadRunChoice(file, node_list or "", topology_domain or "", topology_key or "", test_scale or "")
    running.execute(running.workloadrun_plan(options, choice), kubeconfig, context)
