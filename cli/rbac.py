"""``nvcrectl rbac print``: the RoleBinding that lets the controller write in one run namespace.

It reads nothing from the cluster: the manifest goes to stdout for ``kubectl apply -f -`` or a
GitOps repository.
"""

from __future__ import annotations

from typing import Annotated

import typer

from nvcre.compiler.vocabulary import CONTROLLER_SERVICE_ACCOUNT

from .output import guarded

app = typer.Typer(help="RBAC for namespaced controller write access.", no_args_is_help=True)


@app.command("print")
@guarded
def print_binding(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="The run namespace.")],
    controller_namespace: Annotated[str, typer.Option("--controller-namespace")] = "nvcre",
    service_account: Annotated[str, typer.Option("--service-account")] = CONTROLLER_SERVICE_ACCOUNT,
) -> None:
    """Print the RoleBinding nvcre-manager-run for NAMESPACE."""
    import sys

    from nvcre.compiler.compose import run_access_binding
    from nvcre.compiler.emit import dump_yaml

    sys.stdout.write(
        dump_yaml(
            run_access_binding(namespace, controller_namespace=controller_namespace, service_account=service_account, managed_by=None)
        )
    )
