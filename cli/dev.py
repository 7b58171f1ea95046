"""``nvcrectl dev``: developer tools — build, start, stop and locate a local
Kubernetes control plane (etcd + kube-apiserver) for tests and experiments.

Only typer is imported at start-up; the harness is imported when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(help="Developer tools.", no_args_is_help=True)
controlplane_app = typer.Typer(
    help="A local etcd + kube-apiserver built from source (see docs/testing.md).",
    no_args_is_help=True,
)
app.add_typer(controlplane_app, name="controlplane")


def _fail(message: str) -> "typer.Exit":
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=1)


def _crd_dirs(crds: Optional[List[Path]], no_crds: bool) -> Optional[List[Path]]:
    if no_crds:
        return []
    return list(crds) if crds else None


@controlplane_app.command("up")
def up(
    detach: bool = typer.Option(
        False, "--detach", "-d", help="Run in the background; stop with `down`."
    ),
    controllers: bool = typer.Option(
        False, "--controllers", help="Also run kube-controller-manager and kube-scheduler."
    ),
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
                f"# control plane running in the background (pid {state['supervisor_pid']}); "
                "stop it with: nvcrectl dev controlplane down",
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
    minimal: bool = typer.Option(
        False, "--minimal", help="Only etcd and kube-apiserver (no controller-manager/scheduler)."
    ),
    force: bool = typer.Option(False, "--force", help="Rebuild even if up to date."),
) -> None:
    """Build the control-plane binaries from Go modules (a no-op when up to date)."""
    from nvcre.testing import binaries

    try:
        module = binaries.build_module()
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from None
    components = module.REQUIRED_COMPONENTS if minimal else module.DEFAULT_COMPONENTS
    try:
        module.build(list(components), force=force)
    except module.BuildError as exc:
        raise _fail(str(exc)) from None
