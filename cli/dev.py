"""``nvcrectl dev``: developer tools — a simulated GPU cluster (``up``, ``env``,
``fault``, ``status``, ``down``) and a bare local control plane (``controlplane ...``).

``up --real`` starts real worker nodes instead of kwok (a kubelet, containerd and runc per node,
networking inside a namespace of its own; see :mod:`nvcre.testing.realnodes`); ``env``,
``status`` and ``down`` serve it the same way.

``up --with-prometheus`` also runs Prometheus against the cluster's controller, the way a cluster
runs it: HTTPS scrapes with a ServiceAccount token bound to ``nvcre-metrics-reader``, and the
alert rules the install ships (see :mod:`nvcre.testing.simprometheus`); ``down`` stops it.

Only typer is imported at start-up; the harness is imported when a command runs.
Exit codes: 0 success, 2 invalid input (nothing started), 1 any other failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import typer

app = typer.Typer(help="Developer tools: a simulated GPU cluster and a local control plane.", no_args_is_help=True)
controlplane_app = typer.Typer(
    help="A local etcd + kube-apiserver built from source (see docs/testing.md).",
    no_args_is_help=True,
)
app.add_typer(controlplane_app, name="controlplane")


def _fail(message: str, code: int = 1) -> "typer.Exit":
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=code)


def _invalid(message: str) -> "typer.Exit":
    return _fail(message, code=2)


# ---------------------------------------------------------------- simulated cluster


def _check_up_options(
    profile: str, nodes: int, platform: str, faults: List[str], parse: Optional[Callable[[str], Tuple[str, object]]] = None
) -> Dict[str, str]:
    """Validate ``dev up`` options before anything is built or started (exit 2 on error); the
    faults at start by node, each spec read by ``parse`` (the simulated cluster's by default)."""
    from nvcre.testing.simfaults import parse_assignment
    from nvcre.testing.simprofiles import PLATFORMS, PROFILE_NAMES, ProfileError, check_platform

    if profile not in PROFILE_NAMES:
        raise _invalid(f"--profile: unknown profile {profile!r}; choose from {', '.join(PROFILE_NAMES)}")
    if nodes < 1:
        raise _invalid(f"--nodes: must be at least 1, got {nodes}")
    try:
        platform = check_platform(platform)
    except ProfileError:
        raise _invalid(f"--platform: unknown platform {platform!r}; choose from {', '.join(p for p in PLATFORMS if p)}") from None
    return _check_faults([f"{profile}-{platform or 'onprem'}-{i}" for i in range(nodes)], faults, parse or parse_assignment)


def _check_faults(names: List[str], faults: List[str], parse: Callable[[str], Tuple[str, object]]) -> Dict[str, str]:
    """``--fault`` specs by node, each parsed by ``parse`` (which raises ``ValueError``) and its node
    one of ``names`` (exit 2 on the first that is not)."""
    parsed: Dict[str, str] = {}
    for index, spec in enumerate(faults):
        try:
            node, fault = parse(spec)
        except ValueError as exc:
            raise _invalid(f"--fault[{index}]: {exc}") from None
        if node not in names:
            raise _invalid(f"--fault[{index}]: no node {node!r}; the nodes will be {', '.join(names[:6])}")
        parsed[node] = str(fault)
    return parsed


def _build_missing(with_prometheus: bool = False) -> None:
    """Build the control plane, the simulated cluster's controllers and (``with_prometheus``)
    Prometheus; progress on stderr."""
    import os
    import sys

    from nvcre.testing import binaries

    module = binaries.build_module()
    wanted = list(binaries.CORE + binaries.CONTROLLERS)
    prometheus = with_prometheus and module.tool_missing("prometheus")
    if not module.missing_components(wanted) and not module.missing_sim_components() and not prometheus:
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)  # the build and the go command it runs write progress to stdout
    try:
        module.build(wanted)
        module.build_sim()
        if prometheus:
            module.build_tool("prometheus")
    except module.BuildError as exc:
        raise _fail(str(exc)) from None
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _usage(state: Dict[str, object]) -> None:
    from nvcre.testing.simfaults import FAULT_KINDS

    nodes = list(state.get("gpu_nodes") or state.get("nodes") or [])  # type: ignore[call-overload]
    example = nodes[-1] if nodes else "NODE"
    others = ", ".join("bad-link:PEER" if kind == "bad-link" else kind for kind in FAULT_KINDS if kind != "slow-link")
    typer.echo(
        "# the simulated GPU cluster is up:\n"
        f'#   eval "$(nvcrectl dev env)"        # or the export line above\n'
        "#   kubectl get nodes\n"
        f"#   nvcrectl dev fault {example}=slow-link:0.5   # also {others}\n"
        "#   nvcrectl dev status\n"
        "#   nvcrectl dev down",
        err=True,
    )


# Long: a command's flags are its parameters; the body only starts the cluster.
@app.command("up")
def sim_up(
    profile: str = typer.Option("h100", "--profile", help="GPU node profile: h100, h200, b200, b300, gb200, gb300 (each also <name>-dra)."),
    nodes: int = typer.Option(4, "--nodes", help="How many GPU nodes to register."),
    platform: str = typer.Option(
        "", "--platform", help="Provider the nodes look like: aws, gcp, azure, oci, nscale, mistral (default on-prem)."
    ),
    fault: Optional[List[str]] = typer.Option(None, "--fault", help="NODE=KIND at start (repeatable), e.g. h100-onprem-1=slow-link:0.5."),
    detach: bool = typer.Option(False, "--detach", "-d", help="Run in the background; stop with `nvcrectl dev down`."),
    with_controller: bool = typer.Option(
        False, "--with-controller", help="Also run the nvcre controller (python -m nvcre.runtime) against the cluster."
    ),
    system_nodes: int = typer.Option(
        0,
        "--system-nodes",
        help="Also register N CPU-only nodes (system-0, ...) where pods that need no GPU run, e.g. the controller's Deployment.",
    ),
    with_prometheus: bool = typer.Option(
        False,
        "--with-prometheus",
        help="Also run Prometheus scraping the controller's HTTPS /metrics with a token bound to nvcre-metrics-reader, "
        "evaluating the shipped alert rules (implies --with-controller); prints its address.",
    ),
    real: bool = typer.Option(
        False,
        "--real",
        help="Real worker nodes instead of kwok: a kubelet, containerd and runc per node, a CNI bridge and CoreDNS, "
        "networking inside a namespace of its own (root; see docs/simcluster.md).",
    ),
) -> None:
    """Build what is missing, start a simulated GPU cluster and print how to use it."""
    from nvcre.testing.controlplane import ControlPlaneError
    from nvcre.testing.simsession import SimSessionError, controller_available, serve, start_detached

    if real:
        _real_up(profile, nodes, platform, list(fault or []), detach, with_controller, with_prometheus or system_nodes != 0)
        return
    _refuse_if_real_running()
    faults = _check_up_options(profile, nodes, platform, list(fault or []))
    if system_nodes < 0:
        raise _invalid(f"--system-nodes: must not be negative, got {system_nodes}")
    with_controller = with_controller or with_prometheus
    if with_controller and not controller_available():
        raise _invalid("--with-controller: the nvcre controller (nvcre.runtime) is not importable here")
    _build_missing(with_prometheus)
    try:
        if detach:
            typer.echo("# starting the simulated cluster in the background...", err=True)
            state = start_detached(
                profile=profile, nodes=nodes, platform=platform, faults=faults, with_controller=with_controller,
                system_nodes=system_nodes,
            )  # fmt: skip
            if with_prometheus:
                _prometheus_detached(state)
            typer.echo(f"export KUBECONFIG={state['kubeconfig']}")
            _usage(state)
            return

        def announce(cluster: object) -> None:
            if with_prometheus:
                _prometheus_foreground(cluster)
            typer.echo(cluster.export_line())  # type: ignore[attr-defined]
            _usage({"gpu_nodes": cluster.gpu_nodes})  # type: ignore[attr-defined]
            typer.echo("# running in the foreground; press Ctrl-C to stop", err=True)

        code = serve(
            profile=profile, nodes=nodes, platform=platform, faults=faults,
            with_controller=with_controller, on_ready=announce, system_nodes=system_nodes,
        )  # fmt: skip
    except (ControlPlaneError, SimSessionError) as exc:
        raise _fail(str(exc)) from None
    if code:
        raise typer.Exit(code=code)
    typer.echo("# simulated cluster stopped", err=True)


# ---------------------------------------------------------------------- real nodes


def _refuse_if_real_running() -> None:
    from nvcre.testing.realnodes.session import read_state

    state = read_state()
    if state is not None:
        raise _fail(f"a real-node environment is running (pid {state['supervisor_pid']}); stop it first with `nvcrectl dev down`")


def _check_real_options(profile: str, nodes: int, platform: str, faults: List[str], extras: bool) -> Dict[str, str]:
    """What ``dev up --real`` does not take (exit 2, nothing started); the faults at start by node."""
    from nvcre.testing.realnodes.cluster import MAX_NODES
    from nvcre.testing.realnodes.faults import parse_real_assignment
    from nvcre.testing.simprofiles import DRA_SUFFIX

    at_start = _check_up_options(profile, nodes, platform, faults, parse_real_assignment)
    if profile.endswith(DRA_SUFFIX):
        raise _invalid(
            f"--profile: {profile} publishes GPUs through DRA, which real nodes do not serve yet; use {profile[: -len(DRA_SUFFIX)]}"
        )
    if nodes > MAX_NODES:
        raise _invalid(f"--nodes: at most {MAX_NODES} real nodes, got {nodes}")
    if extras:
        raise _invalid("--with-prometheus and --system-nodes are not available with --real yet")
    return at_start


def _build_real_missing(with_controller: bool = False) -> None:
    """Build what real nodes need (control plane, kubelet, kube-proxy, CNI plugins, CoreDNS, pause) and, for
    ``with_controller``, JobSet and the Trainer; progress on stderr."""
    import os
    import sys

    from nvcre.testing import binaries

    module = binaries.build_module()
    sim = with_controller and bool(module.missing_sim_components())
    if not module.missing_components(list(binaries.CORE + binaries.CONTROLLERS)) and not module.real_missing() and not sim:
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        module.build_real()
        if sim:
            module.build_sim()
    except module.BuildError as exc:
        raise _fail(str(exc)) from None
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _build_workload_image() -> None:
    """Build the catalog's workload image unless a build of the same inputs is cached (minutes the first time)."""
    from nvcre.testing.realnodes import workload_images
    from nvcre.testing.realnodes.images import ImageError

    try:
        if not workload_images.cached():
            typer.echo("# building the workload image with mmdebstrap (the first time takes a few minutes)...", err=True)
        workload_images.workload_image()
    except ImageError as exc:
        raise _fail(str(exc)) from None


def _real_usage(state: Dict[str, object]) -> None:
    typer.echo(
        "# the real-node environment is up:\n"
        '#   eval "$(nvcrectl dev env)"\n'
        "#   kubectl get nodes -o wide\n"
        f"#   nsenter --net={state.get('netns')} ip addr   # the environment's own network namespace\n"
        "#   nvcrectl dev status\n"
        "#   nvcrectl dev down",
        err=True,
    )


def _real_up(profile: str, nodes: int, platform: str, faults: List[str], detach: bool, with_controller: bool, extras: bool) -> None:
    from nvcre.testing import simsession
    from nvcre.testing.controlplane import ControlPlaneError
    from nvcre.testing.realnodes import session, toolchain

    at_start = _check_real_options(profile, nodes, platform, faults, extras)
    if simsession.read_state() is not None:
        raise _fail("a simulated cluster is running; stop it first with `nvcrectl dev down`")
    if with_controller and not simsession.controller_available():
        raise _invalid("--with-controller: the nvcre controller (nvcre.runtime) is not importable here")
    system = toolchain.machine_problems()
    if system:
        raise _fail("; ".join(system))
    _build_real_missing(with_controller)
    _build_workload_image()
    try:
        if detach:
            typer.echo("# starting the real-node environment in the background...", err=True)
            state = session.start_detached(
                profile=profile, nodes=nodes, platform=platform, with_controller=with_controller, faults=at_start
            )
            typer.echo(f"export KUBECONFIG={state['kubeconfig']}")
            _real_usage(state)
            return

        def announce(cluster: object) -> None:
            typer.echo(cluster.export_line())  # type: ignore[attr-defined]
            _real_usage({"netns": cluster.netns})  # type: ignore[attr-defined]
            typer.echo("# running in the foreground; press Ctrl-C to stop", err=True)

        code = session.serve(
            profile=profile, nodes=nodes, platform=platform, on_ready=announce, with_controller=with_controller, faults=at_start
        )
    except (ControlPlaneError, session.RealSessionError) as exc:
        raise _fail(str(exc)) from None
    if code:
        raise typer.Exit(code=code)
    typer.echo("# real-node environment stopped", err=True)


def _real_fault(specs: List[str]) -> None:
    """``dev fault`` on real nodes: every spec checked first, then each applied in the real data path."""
    from nvcre.testing.realnodes import session
    from nvcre.testing.realnodes.faults import RealFaultError, parse_real_assignment

    for index, spec in enumerate(specs):
        try:
            parse_real_assignment(spec)
        except RealFaultError as exc:
            raise _invalid(f"fault[{index}]: {exc}") from None
    for index, spec in enumerate(specs):
        try:
            answer = session.request_fault(spec)
        except session.RealSessionError as exc:
            raise _fail(str(exc)) from None
        if not answer.get("ok"):
            raise _invalid(f"fault[{index}]: {answer.get('error')}")
        typer.echo(f"{answer['node']}: {answer['fault']}")


def _real_status(state: Dict[str, object], output: str) -> None:
    import json

    if output == "json":
        typer.echo(json.dumps({"running": True, **state}, indent=2, sort_keys=True))
        return
    typer.echo(f"KUBECONFIG={state['kubeconfig']}")
    typer.echo(
        f"real nodes; supervisor pid {state['supervisor_pid']}, started {state.get('started')}; network namespace {state.get('netns')}"
    )
    alive: Dict[str, bool] = state.get("alive") or {}  # type: ignore[assignment]
    for name, pid in sorted((state.get("pids") or {}).items()):  # type: ignore[attr-defined]
        typer.echo(f"  {name:<28} pid {pid:<8} {'running' if alive.get(name) else 'STOPPED'}")
    typer.echo(f"{'NODE':<24} {'PROFILE':<10} {'READY':<6} {'CORDONED':<9} {'GPUS':<5} {'IP':<14} {'RUNTIME':<20} FAULT")
    for node in state.get("nodes") or []:  # type: ignore[attr-defined]
        typer.echo(
            f"{node['name']:<24} {node['profile'] or '':<10} {str(node['ready']).lower():<6} "
            f"{str(node['unschedulable']).lower():<9} {node['gpus']:<5} {node['ip']:<14} {node['runtime']:<20} {node['fault']}"
        )
    if state.get("error"):
        typer.echo(f"warning: {state['error']}", err=True)


def _say_prometheus(url: str) -> None:
    typer.echo(f"# Prometheus: {url} (alerts: {url}/alerts), scraping the controller's HTTPS /metrics", err=True)


def _prometheus_foreground(cluster: object) -> None:
    """Prometheus as one more process of the cluster's control plane (it stops with it)."""
    from nvcre.testing.controlplane import ControlPlaneError

    try:
        _start_prometheus_process(cluster)
    except ControlPlaneError:
        raise
    except Exception as exc:  # an API or file error: reported as the command's error, not a traceback
        raise ControlPlaneError(f"--with-prometheus: {exc}") from None


def _start_prometheus_process(cluster: object) -> None:
    from nvcre.testing.processes import free_port
    from nvcre.testing.prometheus import prometheus_argv
    from nvcre.testing.simprometheus import configure, controller_metrics_address, prometheus_binary

    plane = cluster.plane  # type: ignore[attr-defined]
    workdir = Path(cluster.workdir) / "prometheus"  # type: ignore[attr-defined]
    address = controller_metrics_address(plane.processes["nvcre-controller"].popen.args)
    config = configure(Path(cluster.kubeconfig), address, workdir)  # type: ignore[attr-defined]
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        import urllib.request

        with urllib.request.urlopen(f"{url}/-/ready", timeout=3) as answer:
            return bool(answer.status == 200)

    plane.start_process("prometheus", prometheus_argv(prometheus_binary(), config, workdir / "data", port), ready=ready, what="prometheus")
    _say_prometheus(url)


def _prometheus_detached(state: Dict[str, object]) -> None:
    """Prometheus on its own, recorded for `dev down`; the cluster is stopped again if it cannot start."""
    from nvcre.testing.simprometheus import start_detached
    from nvcre.testing.simsession import run_dir, stop

    try:
        pids = state.get("pids") or {}
        url = start_detached(run_dir(), Path(str(state["kubeconfig"])), int(pids["nvcre-controller"]))  # type: ignore[index]
    except BaseException as exc:
        stop()
        if isinstance(exc, Exception):
            raise _fail(f"--with-prometheus: {exc} (the simulated cluster was stopped again)") from None
        raise
    _say_prometheus(url)


@app.command("env")
def sim_env() -> None:
    """Print the KUBECONFIG export line of the running simulated cluster (or real-node environment)."""
    from nvcre.testing.realnodes.session import read_state as read_real_state
    from nvcre.testing.simsession import read_state

    state = read_real_state() or read_state()
    if state is None:
        raise _fail("no simulated cluster is running; start one with `nvcrectl dev up -d`")
    typer.echo(f"export KUBECONFIG={state['kubeconfig']}")


@app.command("fault")
def sim_fault(
    specs: List[str] = typer.Argument(..., metavar="NODE=KIND...", help="Faults to set; KIND none clears."),
) -> None:
    """Change node faults on the running simulated cluster (or real-node environment)."""
    from nvcre.testing.realnodes import session as real_session
    from nvcre.testing.simfaults import FaultError, parse_assignment
    from nvcre.testing.simsession import SimSessionError, request_fault

    if real_session.read_state() is not None:
        _real_fault(specs)
        return
    for index, spec in enumerate(specs):
        try:
            parse_assignment(spec)
        except FaultError as exc:
            raise _invalid(f"fault[{index}]: {exc}") from None
    for index, spec in enumerate(specs):
        try:
            answer = request_fault(spec)
        except SimSessionError as exc:
            raise _fail(str(exc)) from None
        if not answer.get("ok"):
            raise _invalid(f"fault[{index}]: {answer.get('error')}")
        typer.echo(f"{answer['node']}: {answer['fault']}")


@app.command("status")
def sim_status(
    output: str = typer.Option("text", "--output", "-o", help="text or json."),
) -> None:
    """Show the running simulated cluster: processes, nodes and their faults."""
    import json

    from nvcre.testing.realnodes.session import status as real_status
    from nvcre.testing.simsession import status

    if output not in ("text", "json"):
        raise _invalid(f"--output: must be text or json, got {output!r}")
    real = real_status()
    if real is not None:
        _real_status(real, output)
        return
    state = status()
    if state is None:
        if output == "json":
            typer.echo(json.dumps({"running": False}))
            return
        typer.echo("no simulated cluster is running")
        return
    if output == "json":
        typer.echo(json.dumps({"running": True, **state}, indent=2, sort_keys=True))
        return
    typer.echo(f"KUBECONFIG={state['kubeconfig']}")
    typer.echo(f"supervisor pid {state['supervisor_pid']}, started {state.get('started')}")
    for name, pid in sorted((state.get("pids") or {}).items()):
        alive = "running" if (state.get("alive") or {}).get(name) else "STOPPED"
        typer.echo(f"  {name:<28} pid {pid:<8} {alive}")
    typer.echo(f"{'NODE':<24} {'PROFILE':<10} {'READY':<6} {'CORDONED':<9} {'GPUS':<5} FAULT")
    for node in state.get("nodes") or []:
        typer.echo(
            f"{node['name']:<24} {node['profile'] or '':<10} {str(node['ready']).lower():<6} "
            f"{str(node['unschedulable']).lower():<9} {node['gpus']:<5} {node['fault']}"
        )
    if state.get("error"):
        typer.echo(f"warning: {state['error']}", err=True)


@app.command("down")
def sim_down() -> None:
    """Stop every process of the simulated cluster (and its Prometheus) and remove its state."""
    from nvcre.testing.realnodes import session as real_session
    from nvcre.testing.simprometheus import stop_detached
    from nvcre.testing.simsession import run_dir, stop

    try:
        real = real_session.stop()
    except real_session.RealSessionError as exc:
        raise _fail(f"the real-node environment was stopped, but: {exc}") from None
    if real is not None:
        typer.echo(f"stopped the real-node environment (pid {real.get('supervisor_pid')}) and put the host back")
        return
    if stop_detached(run_dir()) is not None:
        typer.echo("stopped Prometheus")
    state = stop()
    if state is None:
        typer.echo("no simulated cluster is running")
        return
    typer.echo(f"stopped the simulated cluster (pid {state.get('supervisor_pid')}) and removed its state")


def _crd_dirs(crds: Optional[List[Path]], no_crds: bool) -> Optional[List[Path]]:
    if no_crds:
        return []
    return list(crds) if crds else None


@controlplane_app.command("up")
def up(
    detach: bool = typer.Option(False, "--detach", "-d", help="Run in the background; stop with `down`."),
    controllers: bool = typer.Option(False, "--controllers", help="Also run kube-controller-manager and kube-scheduler."),
    crds: Optional[List[Path]] = typer.Option(
        None,
        "--crds",
        help="Install CRDs from this directory instead of the defaults (repeatable).",
    ),
    no_crds: bool = typer.Option(False, "--no-crds", help="Install no CRDs."),
) -> None:
    """Start a control plane and print the KUBECONFIG export line."""
    from nvcre.testing.binaries import BinariesMissing
    from nvcre.testing.controlplane import ControlPlaneError
    from nvcre.testing.session import SessionError, serve, start_detached

    crd_dirs = _crd_dirs(crds, no_crds)
    try:
        if detach:
            state = start_detached(controllers=controllers, crd_dirs=crd_dirs)
            typer.echo(f"export KUBECONFIG={state['kubeconfig']}")
            typer.echo(
                f"# control plane running in the background (pid {state['supervisor_pid']}); stop it with: nvcrectl dev controlplane down",
                err=True,
            )
            return

        def announce(plane: object) -> None:
            typer.echo(plane.export_line())  # type: ignore[attr-defined]
            typer.echo("# running; press Ctrl-C to stop", err=True)

        code = serve(controllers=controllers, crd_dirs=crd_dirs, on_ready=announce)
    except (BinariesMissing, ControlPlaneError, SessionError) as exc:
        raise _fail(str(exc)) from None
    if code:
        raise typer.Exit(code=code)
    typer.echo("# control plane stopped", err=True)


@controlplane_app.command("down")
def down() -> None:
    """Stop the control plane started with `up` (detached or in another terminal)."""
    from nvcre.testing.session import stop_detached

    state = stop_detached()
    if state is None:
        typer.echo("no control plane is running")
        return
    typer.echo(f"stopped the control plane (pid {state.get('supervisor_pid')})")


@controlplane_app.command("env")
def env() -> None:
    """Print the KUBECONFIG export line of the running control plane."""
    from nvcre.testing.session import read_state

    state = read_state()
    if state is None:
        raise _fail("no control plane is running; start one with `nvcrectl dev controlplane up -d`")
    typer.echo(f"export KUBECONFIG={state['kubeconfig']}")


@controlplane_app.command("build")
def build(
    minimal: bool = typer.Option(False, "--minimal", help="Only etcd and kube-apiserver (no controller-manager/scheduler)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if up to date."),
) -> None:
    """Build the control-plane binaries from Go modules (a no-op when up to date)."""
    from nvcre.testing import binaries

    module = binaries.build_module()
    components = module.REQUIRED_COMPONENTS if minimal else module.DEFAULT_COMPONENTS
    try:
        module.build(list(components), force=force)
    except module.BuildError as exc:
        raise _fail(str(exc)) from None
